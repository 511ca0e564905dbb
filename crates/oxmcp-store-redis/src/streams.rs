//! A session's stream logs: one Redis Stream per SSE stream, and who writes each.

use oxmcp_store::{AppendEvent, StoreError, StoreResult, StoredEvent, StreamInfo};
use redis::streams::StreamRangeReply;

use crate::{RedisStore, unavailable};

impl RedisStore {
    pub(crate) async fn add(&self, e: AppendEvent<'_>) -> StoreResult<()> {
        let ev = self.key(e.session, &format!("ev:{}", e.stream));
        let max = self.inner.config.max_events_per_stream.max(1);
        let mut p = redis::pipe();
        p.cmd("XADD")
            .arg(&ev)
            .arg("MAXLEN")
            .arg("~")
            .arg(max)
            .arg(format!("0-{}", e.seq))
            .arg("d")
            .arg(e.data)
            .arg("l")
            .arg(u8::from(e.last))
            .ignore();
        p.expire(&ev, self.inner.config.stream_ttl.as_secs().max(1) as i64)
            .ignore();
        if let Some(info) = e.info {
            let streams = self.key(e.session, "streams");
            let json =
                serde_json::to_string(info).map_err(|x| StoreError::Protocol(x.to_string()))?;
            p.hset(&streams, e.stream, json)
                .ignore()
                .expire(&streams, self.ttl() as i64)
                .ignore();
        }
        match self.inner.conn.pipe::<()>(&p).await {
            Ok(()) => Ok(()),
            // The same event twice (a failure written by two resuming instances): kept once.
            Err(x) if x.to_string().contains("equal or smaller") => Ok(()),
            Err(x) => Err(unavailable(x)),
        }
    }

    pub(crate) async fn open(&self, id: &str, stream: &str, info: &StreamInfo) -> StoreResult<()> {
        let streams = self.key(id, "streams");
        let json = serde_json::to_string(info).map_err(|x| StoreError::Protocol(x.to_string()))?;
        let mut p = redis::pipe();
        p.hset(&streams, stream, json)
            .ignore()
            .expire(&streams, self.ttl() as i64)
            .ignore();
        self.inner.conn.pipe::<()>(&p).await.map_err(unavailable)
    }

    pub(crate) async fn range(
        &self,
        id: &str,
        stream: &str,
        after: u64,
    ) -> StoreResult<Vec<StoredEvent>> {
        let ev = self.key(id, &format!("ev:{stream}"));
        let reply: StreamRangeReply = self
            .inner
            .conn
            .cmd(
                redis::cmd("XRANGE")
                    .arg(&ev)
                    .arg(format!("(0-{after}"))
                    .arg("+"),
            )
            .await
            .map_err(unavailable)?;
        Ok(reply
            .ids
            .iter()
            .filter_map(|entry| {
                let seq = entry.id.strip_prefix("0-")?.parse().ok()?;
                Some(StoredEvent {
                    seq,
                    data: entry.get::<String>("d").unwrap_or_default(),
                    last: entry.get::<u8>("l") == Some(1),
                })
            })
            .collect())
    }

    pub(crate) async fn info(&self, id: &str, stream: &str) -> StoreResult<Option<StreamInfo>> {
        let streams = self.key(id, "streams");
        let json: Option<String> = self
            .inner
            .conn
            .cmd(redis::cmd("HGET").arg(&streams).arg(stream))
            .await
            .map_err(unavailable)?;
        Ok(json.and_then(|j| serde_json::from_str(&j).ok()))
    }

    pub(crate) async fn drop_stream(&self, id: &str, stream: &str) -> StoreResult<()> {
        let mut p = redis::pipe();
        p.del(self.key(id, &format!("ev:{stream}")))
            .ignore()
            .hdel(self.key(id, "streams"), stream)
            .ignore();
        self.inner.conn.pipe::<()>(&p).await.map_err(unavailable)
    }
}
