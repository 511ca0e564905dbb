//! A session's own keys: its record, subscriptions, pending requests to the client and
//! request-id blocks.

use std::collections::HashMap;

use oxmcp_store::{SessionRecord, StateChange, StoreError, StoreResult};

use crate::{RedisStore, unavailable};

impl RedisStore {
    pub(crate) async fn create(&self, id: &str, r: &SessionRecord) -> StoreResult<()> {
        r.check_size(self.inner.config.max_record)?;
        let [sess, subs, ..] = self.session_keys(id);
        let mut p = redis::pipe();
        p.atomic().del(&sess).ignore().del(&subs).ignore();
        p.hset_multiple(
            &sess,
            &[
                ("version", r.version.as_str()),
                ("init", r.init.as_str()),
                ("created", &r.created_ms.to_string()),
            ],
        )
        .ignore();
        if let Some(owner) = &r.owner {
            p.hset(&sess, "owner", owner).ignore();
        }
        if let Some(level) = &r.log_level {
            p.hset(&sess, "level", level).ignore();
        }
        if !r.subscriptions.is_empty() {
            p.sadd(&subs, &r.subscriptions).ignore();
            p.expire(&subs, self.ttl() as i64).ignore();
        }
        p.expire(&sess, self.ttl() as i64).ignore();
        self.inner.conn.pipe::<()>(&p).await.map_err(unavailable)
    }

    pub(crate) async fn load(&self, id: &str) -> StoreResult<Option<SessionRecord>> {
        let [sess, subs, ..] = self.session_keys(id);
        let mut p = redis::pipe();
        p.hgetall(&sess).smembers(&subs);
        let (mut h, subscriptions): (HashMap<String, String>, Vec<String>) =
            self.inner.conn.pipe(&p).await.map_err(unavailable)?;
        let (Some(version), Some(init)) = (h.remove("version"), h.remove("init")) else {
            return Ok(None);
        };
        Ok(Some(SessionRecord {
            version,
            owner: h.remove("owner"),
            init,
            log_level: h.remove("level"),
            subscriptions,
            created_ms: h.get("created").and_then(|c| c.parse().ok()).unwrap_or(0),
        }))
    }

    pub(crate) async fn touch(&self, id: &str) -> StoreResult<bool> {
        let ttl = self.ttl() as i64;
        let mut p = redis::pipe();
        for k in self.session_keys(id) {
            p.expire(k, ttl);
        }
        let r: Vec<i64> = self.inner.conn.pipe(&p).await.map_err(unavailable)?;
        Ok(r.first().copied() == Some(1))
    }

    pub(crate) async fn update(&self, id: &str, change: &StateChange) -> StoreResult<()> {
        let [sess, subs, ..] = self.session_keys(id);
        change.check_size(self.inner.config.max_record)?;
        let ttl = self.ttl() as i64;
        if let StateChange::Subscribe(u) = change {
            return self.subscribe(&sess, &subs, u).await;
        }
        let mut p = redis::pipe();
        match change {
            StateChange::LogLevel(l) => p.hset(&sess, "level", l).ignore(),
            StateChange::Unsubscribe(u) => p.srem(&subs, u).ignore(),
            StateChange::Subscribe(_) => &mut p,
        };
        p.expire(&sess, ttl).ignore().expire(&subs, ttl).ignore();
        self.inner.conn.pipe::<()>(&p).await.map_err(unavailable)
    }

    /// Adds a subscription unless the session holds `max_subscriptions` already (one
    /// script, so two instances adding at once cannot both pass the count).
    async fn subscribe(&self, sess: &str, subs: &str, uri: &str) -> StoreResult<()> {
        const SCRIPT: &str = r"
            if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 0 then
              if redis.call('SCARD', KEYS[2]) >= tonumber(ARGV[2]) then return 0 end
              redis.call('SADD', KEYS[2], ARGV[1])
            end
            redis.call('EXPIRE', KEYS[1], ARGV[3])
            redis.call('EXPIRE', KEYS[2], ARGV[3])
            return 1";
        let max = self.inner.config.max_subscriptions;
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(SCRIPT)
            .arg(2)
            .arg(sess)
            .arg(subs)
            .arg(uri)
            .arg(max)
            .arg(self.ttl());
        let added: i64 = self.inner.conn.cmd(&cmd).await.map_err(unavailable)?;
        if added == 0 {
            return Err(StoreError::Refused(format!(
                "the session holds {max} stored subscriptions, the most allowed"
            )));
        }
        Ok(())
    }

    pub(crate) async fn delete(&self, id: &str) -> StoreResult<()> {
        let keys = self.session_keys(id);
        let streams: Vec<String> = self
            .inner
            .conn
            .cmd(redis::cmd("HKEYS").arg(&keys[4]))
            .await
            .map_err(unavailable)?;
        let mut all: Vec<String> = keys.to_vec();
        all.extend(streams.iter().map(|s| self.key(id, &format!("ev:{s}"))));
        let mut p = redis::pipe();
        for k in all {
            // One DEL per key: keys of one slot, but a Cluster pipeline routes each alone.
            p.del(k).ignore();
        }
        self.inner.conn.pipe::<()>(&p).await.map_err(unavailable)
    }

    pub(crate) async fn block(&self, id: &str) -> StoreResult<u64> {
        let seq = self.key(id, "seq");
        let mut p = redis::pipe();
        p.incr(&seq, 1).expire(&seq, self.ttl() as i64).ignore();
        let (n,): (u64,) = self.inner.conn.pipe(&p).await.map_err(unavailable)?;
        Ok(n)
    }

    pub(crate) async fn pending_put(&self, id: &str, rid: &str) -> StoreResult<()> {
        let pend = self.key(id, "pend");
        let mut p = redis::pipe();
        p.hset(&pend, rid, &self.inner.instance)
            .ignore()
            .expire(&pend, self.ttl() as i64)
            .ignore();
        self.inner.conn.pipe::<()>(&p).await.map_err(unavailable)
    }

    pub(crate) async fn pending_take(&self, id: &str, rid: &str) -> StoreResult<Option<String>> {
        let pend = self.key(id, "pend");
        let mut p = redis::pipe();
        p.atomic().hget(&pend, rid).hdel(&pend, rid).ignore();
        let (owner,): (Option<String>,) = self.inner.conn.pipe(&p).await.map_err(unavailable)?;
        Ok(owner)
    }
}
