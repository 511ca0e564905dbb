//! [`MemoryStateStore`]: handler state in this process's memory.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use futures::future::BoxFuture;
use parking_lot::Mutex;

use super::{Expect, Removed, StateError, StateLimits, StateScope, StateStore, Stored, Written};

/// One scope's values.
#[derive(Debug, Default)]
struct Scope {
    entries: BTreeMap<String, Stored>,
    /// Keys and values together, in bytes.
    bytes: usize,
    /// The last version given out in this scope.
    seq: u64,
    /// When the scope expires (set on every write).
    expires: Option<Instant>,
}

impl Scope {
    fn live(&self, now: Instant) -> bool {
        self.expires.is_none_or(|e| e > now)
    }
}

#[derive(Debug, Default)]
struct Inner {
    scopes: HashMap<StateScope, Scope>,
    /// Writes since expired scopes were last swept.
    writes: u64,
}

/// Handler state in this process (the default): lost when the process ends, and seen by no
/// other instance. A session's state goes when the session ends; a principal's
/// [`StateLimits::principal_ttl`] after its last write.
#[derive(Debug, Default)]
pub struct MemoryStateStore {
    inner: Mutex<Inner>,
}

impl MemoryStateStore {
    /// An empty store.
    pub fn new() -> std::sync::Arc<Self> {
        std::sync::Arc::new(Self::default())
    }

    /// Scopes held now (expired ones that were not swept yet included).
    pub fn scope_count(&self) -> usize {
        self.inner.lock().scopes.len()
    }

    fn write(
        &self,
        scope: &StateScope,
        key: &str,
        value: &str,
        expect: Expect,
        limits: &StateLimits,
    ) -> Result<Written, StateError> {
        let now = Instant::now();
        let mut inner = self.inner.lock();
        inner.writes += 1;
        if inner.writes.is_multiple_of(1024) {
            inner.scopes.retain(|_, s| s.live(now));
        }
        // Checked before the scope is made: a refused write leaves nothing behind.
        let live = inner.scopes.get(scope).filter(|s| s.live(now));
        let current = live.and_then(|s| s.entries.get(key));
        if !expect.met_by(current.map(|c| c.version)) {
            return Ok(Written::Conflict(current.map(|c| c.version)));
        }
        let (keys, bytes) = live.map_or((0, 0), |s| (s.entries.len(), s.bytes));
        let freed = current.map_or(0, |c| c.value.len() + key.len());
        if current.is_none() && keys >= limits.max_keys {
            return Err(StateError::TooManyKeys {
                limit: limits.max_keys,
            });
        }
        let would = bytes - freed + key.len() + value.len();
        if would > limits.max_scope_bytes {
            return Err(StateError::ScopeFull {
                would,
                limit: limits.max_scope_bytes,
            });
        }
        let s = inner.scopes.entry(scope.clone()).or_default();
        if !s.live(now) {
            // Expired: empty again, its numbering going on.
            let seq = s.seq;
            *s = Scope {
                seq,
                ..Scope::default()
            };
        }
        s.seq += 1;
        let version = s.seq;
        s.bytes = would;
        s.expires = now.checked_add(limits.ttl(scope));
        s.entries.insert(
            key.to_owned(),
            Stored {
                value: value.to_owned(),
                version,
            },
        );
        Ok(Written::Done(version))
    }

    fn delete(&self, scope: &StateScope, key: &str, expect: Expect) -> Removed {
        let now = Instant::now();
        let mut inner = self.inner.lock();
        let Some(s) = inner.scopes.get_mut(scope).filter(|s| s.live(now)) else {
            return if expect.met_by(None) {
                Removed::Absent
            } else {
                Removed::Conflict(None)
            };
        };
        let current = s.entries.get(key).map(|c| c.version);
        if !expect.met_by(current) {
            return Removed::Conflict(current);
        }
        match s.entries.remove(key) {
            Some(old) => {
                s.bytes -= old.value.len() + key.len();
                Removed::Removed
            }
            None => Removed::Absent,
        }
    }

    fn read<T>(&self, scope: &StateScope, f: impl FnOnce(&Scope) -> T) -> Option<T> {
        let now = Instant::now();
        let inner = self.inner.lock();
        inner.scopes.get(scope).filter(|s| s.live(now)).map(f)
    }
}

impl StateStore for MemoryStateStore {
    fn get<'a>(
        &'a self,
        scope: &'a StateScope,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Stored>, StateError>> {
        let found = self.read(scope, |s| s.entries.get(key).cloned()).flatten();
        Box::pin(std::future::ready(Ok(found)))
    }

    fn put<'a>(
        &'a self,
        scope: &'a StateScope,
        key: &'a str,
        value: &'a str,
        expect: Expect,
        limits: &'a StateLimits,
    ) -> BoxFuture<'a, Result<Written, StateError>> {
        Box::pin(std::future::ready(
            self.write(scope, key, value, expect, limits),
        ))
    }

    fn remove<'a>(
        &'a self,
        scope: &'a StateScope,
        key: &'a str,
        expect: Expect,
    ) -> BoxFuture<'a, Result<Removed, StateError>> {
        Box::pin(std::future::ready(Ok(self.delete(scope, key, expect))))
    }

    fn keys<'a>(&'a self, scope: &'a StateScope) -> BoxFuture<'a, Result<Vec<String>, StateError>> {
        let keys = self
            .read(scope, |s| s.entries.keys().cloned().collect())
            .unwrap_or_default();
        Box::pin(std::future::ready(Ok(keys)))
    }

    fn clear<'a>(&'a self, scope: &'a StateScope) -> BoxFuture<'a, Result<(), StateError>> {
        self.inner.lock().scopes.remove(scope);
        Box::pin(std::future::ready(Ok(())))
    }

    fn session_ended(&self, session: &str) {
        self.inner
            .lock()
            .scopes
            .remove(&StateScope::Session(session.to_owned()));
    }
}
