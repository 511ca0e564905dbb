//! SSE stream logs: a row per stream (its writer and ids, kept as long as the session) and a
//! row per event, kept to the last `max_events_per_stream` and for `stream_ttl` after the
//! stream's last event.

use oxmcp_store::{AppendEvent, StoreError, StoreResult, StoredEvent, StreamInfo};

use crate::{Inner, big, millis};

fn info_json(info: &StreamInfo) -> StoreResult<String> {
    serde_json::to_string(info).map_err(|e| StoreError::Protocol(e.to_string()))
}

impl Inner {
    pub(crate) async fn open_stream(
        &self,
        session: &str,
        stream: &str,
        info: &StreamInfo,
    ) -> StoreResult<()> {
        let info = info_json(info)?;
        self.execute(
            "INSERT INTO {ns}.streams (session, stream, info, expires_at)
             SELECT $1, $2, $3, now() + $4::bigint * interval '1 millisecond'
             WHERE EXISTS (SELECT 1 FROM {ns}.sessions WHERE id = $1 AND expires_at > now())
             ON CONFLICT (session, stream) DO UPDATE
             SET info = EXCLUDED.info, expires_at = EXCLUDED.expires_at",
            &[&session, &stream, &info, &millis(self.config.stream_ttl)],
        )
        .await?;
        Ok(())
    }

    pub(crate) async fn append(&self, e: AppendEvent<'_>) -> StoreResult<()> {
        let info = e.info.map(info_json).transpose()?;
        let max = big(self.config.max_events_per_stream.max(1) as u64);
        self.execute(
            "SELECT {ns}.append_event($1, $2, $3, $4, $5, $6, $7, $8)",
            &[
                &e.session,
                &e.stream,
                &big(e.seq),
                &e.data,
                &e.last,
                &info,
                &millis(self.config.stream_ttl),
                &max,
            ],
        )
        .await?;
        Ok(())
    }

    pub(crate) async fn replay(
        &self,
        session: &str,
        stream: &str,
        after: u64,
    ) -> StoreResult<Vec<StoredEvent>> {
        let rows = self
            .query(
                "SELECT e.seq, e.data, e.last FROM {ns}.events e
                 JOIN {ns}.streams s USING (session, stream)
                 WHERE e.session = $1 AND e.stream = $2 AND e.seq > $3 AND s.expires_at > now()
                 ORDER BY e.seq",
                &[&session, &stream, &big(after)],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| StoredEvent {
                seq: u64::try_from(r.get::<_, i64>(0)).unwrap_or(0),
                data: r.get(1),
                last: r.get(2),
            })
            .collect())
    }

    pub(crate) async fn stream_info(
        &self,
        session: &str,
        stream: &str,
    ) -> StoreResult<Option<StreamInfo>> {
        let rows = self
            .query(
                "SELECT info FROM {ns}.streams WHERE session = $1 AND stream = $2",
                &[&session, &stream],
            )
            .await?;
        let Some(json) = rows.first().and_then(|r| r.get::<_, Option<&str>>(0)) else {
            return Ok(None);
        };
        serde_json::from_str(json)
            .map(Some)
            .map_err(|e| StoreError::Protocol(format!("stream info: {e}")))
    }

    pub(crate) async fn forget_stream(&self, session: &str, stream: &str) -> StoreResult<()> {
        self.execute(
            "DELETE FROM {ns}.streams WHERE session = $1 AND stream = $2",
            &[&session, &stream],
        )
        .await?;
        Ok(())
    }
}
