//! [`ScopedState`]: one scope's state, typed, with every limit checked before the backend
//! is asked.

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Expect, Removed, StateError, StateLimits, StateScope, StateStore, Written};

/// A value read with its version, for a later [`ScopedState::set_if`].
#[derive(Debug, Clone, PartialEq)]
pub struct Versioned<T> {
    /// The value.
    pub value: T,
    /// Its version.
    pub version: u64,
}

/// One scope's state (a session's or a user's), from [`crate::Ctx::session_state`] or
/// [`crate::Ctx::user_state`]. Cheap to clone.
///
/// ```
/// # async fn f(ctx: oxmcp_server::Ctx) -> Result<(), oxmcp_server::StateError> {
/// let state = ctx.session_state()?;
/// state.set("cwd", "/docs").await?;
/// let cwd: Option<String> = state.get("cwd").await?;
/// // Two instances adding at once: neither loses the other's write.
/// let visits = state.update("visits", |n: Option<u64>| Some(n.unwrap_or(0) + 1)).await?;
/// # let _ = (cwd, visits);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct ScopedState {
    store: Arc<dyn StateStore>,
    scope: StateScope,
    limits: Arc<StateLimits>,
}

impl std::fmt::Debug for ScopedState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScopedState")
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl ScopedState {
    /// `scope`'s state in `store`, under `limits`.
    pub fn new(store: Arc<dyn StateStore>, scope: StateScope, limits: Arc<StateLimits>) -> Self {
        Self {
            store,
            scope,
            limits,
        }
    }

    /// Whose state this is.
    pub fn scope(&self) -> &StateScope {
        &self.scope
    }

    fn check_key(&self, key: &str) -> Result<(), StateError> {
        if key.is_empty() || key.chars().any(char::is_control) {
            return Err(StateError::BadKey(key.chars().take(64).collect()));
        }
        if key.len() > self.limits.max_key_len {
            return Err(StateError::KeyTooLong {
                len: key.len(),
                limit: self.limits.max_key_len,
            });
        }
        Ok(())
    }

    fn encode<T: Serialize + ?Sized>(&self, value: &T) -> Result<String, StateError> {
        let text = serde_json::to_string(value).map_err(|e| StateError::Encode(e.to_string()))?;
        if text.len() > self.limits.max_value_bytes {
            return Err(StateError::ValueTooLarge {
                len: text.len(),
                limit: self.limits.max_value_bytes,
            });
        }
        Ok(text)
    }

    /// The value under `key`, if any.
    ///
    /// # Errors
    /// A bad key, a stored value that is not a `T`, or the backend failing.
    pub async fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, StateError> {
        Ok(self.get_versioned(key).await?.map(|v| v.value))
    }

    /// The value under `key` with its version, for [`ScopedState::set_if`].
    ///
    /// # Errors
    /// As [`ScopedState::get`].
    pub async fn get_versioned<T: DeserializeOwned>(
        &self,
        key: &str,
    ) -> Result<Option<Versioned<T>>, StateError> {
        self.check_key(key)?;
        let Some(stored) = self.store.get(&self.scope, key).await? else {
            return Ok(None);
        };
        let value = serde_json::from_str(&stored.value)
            .map_err(|e| StateError::Decode(format!("key {key:?}: {e}")))?;
        Ok(Some(Versioned {
            value,
            version: stored.version,
        }))
    }

    /// Writes `value` under `key`, whatever was there; returns its new version.
    ///
    /// # Errors
    /// A bad key, a value over its limit, a scope over its limits, the backend failing.
    pub async fn set<T: Serialize + ?Sized>(
        &self,
        key: &str,
        value: &T,
    ) -> Result<u64, StateError> {
        match self.set_if(key, value, Expect::Any).await? {
            Written::Done(version) => Ok(version),
            // An unconditional write does not conflict.
            Written::Conflict(_) => Err(StateError::Store("unconditional write refused".into())),
        }
    }

    /// Writes `value` under `key` only if the key is as `expect` says (absent, or at the
    /// version read): a compare-and-swap.
    ///
    /// # Errors
    /// As [`ScopedState::set`]. A conflict is not an error: [`Written::Conflict`].
    pub async fn set_if<T: Serialize + ?Sized>(
        &self,
        key: &str,
        value: &T,
        expect: Expect,
    ) -> Result<Written, StateError> {
        self.check_key(key)?;
        let text = self.encode(value)?;
        self.store
            .put(&self.scope, key, &text, expect, &self.limits)
            .await
    }

    /// Deletes `key`; whether it was there.
    ///
    /// # Errors
    /// A bad key, or the backend failing.
    pub async fn delete(&self, key: &str) -> Result<bool, StateError> {
        self.check_key(key)?;
        let removed = self.store.remove(&self.scope, key, Expect::Any).await?;
        Ok(removed == Removed::Removed)
    }

    /// The scope's keys, sorted.
    ///
    /// # Errors
    /// The backend failing.
    pub async fn keys(&self) -> Result<Vec<String>, StateError> {
        self.store.keys(&self.scope).await
    }

    /// Deletes every key of the scope.
    ///
    /// # Errors
    /// The backend failing.
    pub async fn clear(&self) -> Result<(), StateError> {
        self.store.clear(&self.scope).await
    }

    /// Changes `key` with `f` (given the current value, it returns the new one; `None`
    /// deletes), as one atomic step: when another writer changed the key in between, `f` runs
    /// again on the newer value, up to [`StateLimits::update_tries`] times. Returns what `f`
    /// returned the time it was written.
    ///
    /// # Errors
    /// As [`ScopedState::set`], and [`StateError::Contended`] when every try conflicted.
    pub async fn update<T, F>(&self, key: &str, mut f: F) -> Result<Option<T>, StateError>
    where
        T: Serialize + DeserializeOwned,
        F: FnMut(Option<T>) -> Option<T>,
    {
        let tries = self.limits.update_tries.max(1);
        for attempt in 0..tries {
            let current = self.get_versioned::<T>(key).await?;
            let expect = current
                .as_ref()
                .map_or(Expect::Absent, |c| Expect::Version(c.version));
            let next = f(current.map(|c| c.value));
            let done = match &next {
                Some(value) => matches!(self.set_if(key, value, expect).await?, Written::Done(_)),
                None => !matches!(
                    self.store.remove(&self.scope, key, expect).await?,
                    Removed::Conflict(_)
                ),
            };
            if done {
                return Ok(next);
            }
            pause(attempt).await;
        }
        Err(StateError::Contended {
            key: key.to_owned(),
            tries,
        })
    }
}

/// A random pause after the `attempt`th conflict: up to 1, 2, 4 ... 32 ms.
async fn pause(attempt: u32) {
    let mut byte = [0u8; 2];
    let spread = 1u64 << attempt.min(5);
    let micros = if getrandom::fill(&mut byte).is_ok() {
        u64::from(u16::from_le_bytes(byte)) * spread * 1000 / u64::from(u16::MAX)
    } else {
        spread * 500
    };
    tokio::time::sleep(std::time::Duration::from_micros(micros)).await;
}
