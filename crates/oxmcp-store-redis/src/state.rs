//! Handlers' state in Redis: one hash per scope. A session's is `ns:{sid}:state`, one of the
//! session's keys (it expires and is deleted with the session); a principal's is
//! `ns:pstate:{hex}`, kept [`StateLimits::principal_ttl`] after its last write. In the hash,
//! `v:KEY` is a value, `n:KEY` its version, `#seq` the last version given, `#keys` and
//! `#bytes` the scope's totals: each write is one script, so two instances writing at once
//! cannot both pass a limit or a version check.

use futures::future::BoxFuture;
use oxmcp_store::state::{
    self, Expect, Removed, StateError, StateLimits, StateScope, StateStore, Stored, Written,
};

use crate::RedisStore;

const PUT: &str = r"
local cur = redis.call('HGET', KEYS[1], 'n:' .. ARGV[1])
local kind = ARGV[3]
if (kind == '1' and cur) or (kind == '2' and cur ~= ARGV[4]) then
  return {-1, cur or ''}
end
local keys = tonumber(redis.call('HGET', KEYS[1], '#keys') or '0')
local bytes = tonumber(redis.call('HGET', KEYS[1], '#bytes') or '0')
local old = 0
if cur then old = redis.call('HSTRLEN', KEYS[1], 'v:' .. ARGV[1]) + #ARGV[1] end
if not cur and keys >= tonumber(ARGV[5]) then return {-2, ''} end
local would = bytes - old + #ARGV[1] + #ARGV[2]
if would > tonumber(ARGV[6]) then return {-3, tostring(would)} end
local seq = redis.call('HINCRBY', KEYS[1], '#seq', 1)
redis.call('HSET', KEYS[1], 'v:' .. ARGV[1], ARGV[2], 'n:' .. ARGV[1], seq, '#bytes', would)
if not cur then redis.call('HINCRBY', KEYS[1], '#keys', 1) end
redis.call('PEXPIRE', KEYS[1], ARGV[7])
return {seq, ''}";

const REMOVE: &str = r"
local cur = redis.call('HGET', KEYS[1], 'n:' .. ARGV[1])
local kind = ARGV[2]
if (kind == '1' and cur) or (kind == '2' and cur ~= ARGV[3]) then
  return {-1, cur or ''}
end
if not cur then return {0, ''} end
local old = redis.call('HSTRLEN', KEYS[1], 'v:' .. ARGV[1]) + #ARGV[1]
redis.call('HDEL', KEYS[1], 'v:' .. ARGV[1], 'n:' .. ARGV[1])
redis.call('HINCRBY', KEYS[1], '#keys', -1)
redis.call('HINCRBY', KEYS[1], '#bytes', -old)
return {1, ''}";

fn failed(e: redis::RedisError) -> StateError {
    StateError::Store(e.to_string())
}

/// A script's detail: a number, or empty.
fn detail(text: &str) -> Option<i64> {
    text.parse().ok()
}

impl RedisStore {
    fn state_key(&self, scope: &StateScope) -> String {
        match scope {
            StateScope::Session(sid) => self.key(sid, "state"),
            StateScope::Principal(p) => {
                let hex: String = p.bytes().map(|b| format!("{b:02x}")).collect();
                format!("{}:pstate:{hex}", self.inner.config.namespace)
            }
        }
    }

    /// How long a scope lasts after a write, in ms: a session's as long as the session.
    fn state_ttl(&self, scope: &StateScope, limits: &StateLimits) -> u64 {
        let ttl = match scope {
            StateScope::Session(_) => self.inner.config.session_ttl,
            StateScope::Principal(_) => limits.principal_ttl,
        };
        u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
    }

    async fn state_get(&self, scope: &StateScope, key: &str) -> Result<Option<Stored>, StateError> {
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(self.state_key(scope))
            .arg(format!("v:{key}"))
            .arg(format!("n:{key}"));
        let (value, n): (Option<String>, Option<String>) =
            self.inner.conn.cmd(&cmd).await.map_err(failed)?;
        Ok(match (value, n.and_then(|n| n.parse::<u64>().ok())) {
            (Some(value), Some(version)) => Some(Stored { value, version }),
            _ => None,
        })
    }

    async fn state_put(
        &self,
        scope: &StateScope,
        key: &str,
        value: &str,
        expect: Expect,
        limits: &StateLimits,
    ) -> Result<Written, StateError> {
        let (kind, v) = expect.codes();
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(PUT)
            .arg(1)
            .arg(self.state_key(scope))
            .arg(key)
            .arg(value)
            .arg(kind)
            .arg(v)
            .arg(limits.max_keys)
            .arg(limits.max_scope_bytes)
            .arg(self.state_ttl(scope, limits));
        let (code, text): (i64, String) = self.inner.conn.cmd(&cmd).await.map_err(failed)?;
        state::written_from(code, detail(&text), limits)
    }

    async fn state_remove(
        &self,
        scope: &StateScope,
        key: &str,
        expect: Expect,
    ) -> Result<Removed, StateError> {
        let (kind, v) = expect.codes();
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(REMOVE)
            .arg(1)
            .arg(self.state_key(scope))
            .arg(key)
            .arg(kind)
            .arg(v);
        let (code, text): (i64, String) = self.inner.conn.cmd(&cmd).await.map_err(failed)?;
        Ok(state::removed_from(code, detail(&text)))
    }

    async fn state_keys(&self, scope: &StateScope) -> Result<Vec<String>, StateError> {
        let fields: Vec<String> = self
            .inner
            .conn
            .cmd(redis::cmd("HKEYS").arg(self.state_key(scope)))
            .await
            .map_err(failed)?;
        let mut keys: Vec<String> = fields
            .into_iter()
            .filter_map(|f| f.strip_prefix("v:").map(str::to_owned))
            .collect();
        keys.sort();
        Ok(keys)
    }

    async fn state_clear(&self, scope: &StateScope) -> Result<(), StateError> {
        self.inner
            .conn
            .cmd::<()>(redis::cmd("DEL").arg(self.state_key(scope)))
            .await
            .map_err(failed)
    }
}

impl StateStore for RedisStore {
    fn get<'a>(
        &'a self,
        scope: &'a StateScope,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Stored>, StateError>> {
        Box::pin(self.state_get(scope, key))
    }

    fn put<'a>(
        &'a self,
        scope: &'a StateScope,
        key: &'a str,
        value: &'a str,
        expect: Expect,
        limits: &'a StateLimits,
    ) -> BoxFuture<'a, Result<Written, StateError>> {
        Box::pin(self.state_put(scope, key, value, expect, limits))
    }

    fn remove<'a>(
        &'a self,
        scope: &'a StateScope,
        key: &'a str,
        expect: Expect,
    ) -> BoxFuture<'a, Result<Removed, StateError>> {
        Box::pin(self.state_remove(scope, key, expect))
    }

    fn keys<'a>(&'a self, scope: &'a StateScope) -> BoxFuture<'a, Result<Vec<String>, StateError>> {
        Box::pin(self.state_keys(scope))
    }

    fn clear<'a>(&'a self, scope: &'a StateScope) -> BoxFuture<'a, Result<(), StateError>> {
        Box::pin(self.state_clear(scope))
    }
}
