//! State a server's handlers keep between requests, per session or per user: the backend
//! trait [`StateStore`] with [`MemoryStateStore`] for one process, and the [`StateLimits`]
//! every backend enforces. (`oxmcp-server` gives handlers a typed view of it, its
//! `ScopedState`.)
//!
//! Values are JSON texts, versioned: every write gives the key a new version, higher than
//! any the scope gave before, so a compare-and-swap on a version never mistakes a key deleted
//! and written again for the one it read. (Clearing a whole scope, or its expiry, starts its
//! numbering again.)

mod memory;

pub use memory::MemoryStateStore;

use std::time::Duration;

use futures::future::BoxFuture;

/// Whose state: one session's, or one authenticated caller's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StateScope {
    /// One session: a legacy (2024-11-05 to 2025-11-25) session over Streamable HTTP, named
    /// by its `Mcp-Session-Id`, or one connection of stdio, WebSocket or gRPC. It ends with
    /// the session.
    Session(String),
    /// One verified caller (the principal a transport verified), in any protocol era. It lasts until
    /// [`StateLimits::principal_ttl`] after its last write.
    Principal(String),
}

/// Limits on handler state, each checked before a write reaches the backend or, for the
/// per-scope totals, by the backend in the same step as the write.
#[derive(Debug, Clone, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "", generate_private = false)]
pub struct StateLimits {
    /// Longest key, in bytes (default 256). Keys are non-empty and hold no control
    /// characters.
    pub max_key_len: usize,
    /// Largest value, as JSON text, in bytes (default 64 KiB).
    pub max_value_bytes: usize,
    /// Most keys in one scope (default 1,000).
    pub max_keys: usize,
    /// Most bytes in one scope, keys and values together (default 1 MiB).
    pub max_scope_bytes: usize,
    /// How long a principal's state lasts after its last write (default 30 days).
    pub principal_ttl: Duration,
    /// How long a session's state lasts after its last write in a backend that cannot tell
    /// when a session ends (default 24 hours). Backends that can (memory; a shared store,
    /// which deletes it with the session) end it with the session as well.
    pub session_ttl: Duration,
    /// How many times an update (`oxmcp-server`'s `ScopedState::update`) tries again after a conflicting write
    /// (default 100), with a short random pause between tries.
    pub update_tries: u32,
}

impl Default for StateLimits {
    fn default() -> Self {
        Self {
            max_key_len: 256,
            max_value_bytes: 64 * 1024,
            max_keys: 1_000,
            max_scope_bytes: 1024 * 1024,
            principal_ttl: Duration::from_secs(30 * 24 * 3600),
            session_ttl: Duration::from_secs(24 * 3600),
            update_tries: 100,
        }
    }
}

impl StateLimits {
    /// How long `scope` lasts after a write.
    pub fn ttl(&self, scope: &StateScope) -> Duration {
        match scope {
            StateScope::Session(_) => self.session_ttl,
            StateScope::Principal(_) => self.principal_ttl,
        }
    }
}

/// One stored value with its version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The JSON text.
    pub value: String,
    /// Its version: higher than any version the scope gave before.
    pub version: u64,
}

/// What a conditional write expects to find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Anything: the write is unconditional.
    Any,
    /// No value under the key.
    Absent,
    /// The value of this version.
    Version(u64),
}

impl Expect {
    /// Whether a key whose current version is `current` (`None`: absent) meets this.
    pub fn met_by(self, current: Option<u64>) -> bool {
        match self {
            Expect::Any => true,
            Expect::Absent => current.is_none(),
            Expect::Version(v) => current == Some(v),
        }
    }
}

impl Expect {
    /// As the two numbers a store's script or stored function takes: `(kind, version)`, kind
    /// 0 for anything, 1 for absent, 2 for the version given.
    pub fn codes(self) -> (i32, u64) {
        match self {
            Expect::Any => (0, 0),
            Expect::Absent => (1, 0),
            Expect::Version(v) => (2, v),
        }
    }
}

/// A conditional write's answer from a store's script or stored function, `(code, detail)`:
/// a code of 0 or more is the new version; -1 a conflict (detail: the current version, if
/// any); -2 one key too many; -3 a scope too large (detail: the bytes it would hold).
///
/// # Errors
/// The limit refused ([`StateError::TooManyKeys`], [`StateError::ScopeFull`]), or a code
/// this does not know.
pub fn written_from(
    code: i64,
    detail: Option<i64>,
    limits: &StateLimits,
) -> Result<Written, StateError> {
    let version = |n: Option<i64>| n.and_then(|n| u64::try_from(n).ok());
    match code {
        -1 => Ok(Written::Conflict(version(detail))),
        -2 => Err(StateError::TooManyKeys {
            limit: limits.max_keys,
        }),
        -3 => Err(StateError::ScopeFull {
            would: detail
                .and_then(|d| usize::try_from(d).ok())
                .unwrap_or(usize::MAX),
            limit: limits.max_scope_bytes,
        }),
        n => version(Some(n))
            .map(Written::Done)
            .ok_or_else(|| StateError::Store(format!("unexpected answer {n}"))),
    }
}

/// A conditional delete's answer from a store's script or stored function, `(code,
/// detail)`: 1 deleted, 0 absent, -1 a conflict (detail: the current version, if any).
pub fn removed_from(code: i64, detail: Option<i64>) -> Removed {
    match code {
        -1 => Removed::Conflict(detail.and_then(|n| u64::try_from(n).ok())),
        0 => Removed::Absent,
        _ => Removed::Removed,
    }
}

/// What a conditional write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// Written; the value's new version.
    Done(u64),
    /// Not written: the key was not as expected. Its current version (`None`: absent).
    Conflict(Option<u64>),
}

/// What a conditional delete did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removed {
    /// Deleted.
    Removed,
    /// There was nothing to delete (and nothing was expected).
    Absent,
    /// Not deleted: the key was not as expected. Its current version (`None`: absent).
    Conflict(Option<u64>),
}

/// Why a state operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// This request has no session: a 2026-07-28 request over Streamable HTTP is
    /// self-contained (keep per-user state instead).
    #[error("this request has no session (2026-07-28 requests over HTTP are sessionless)")]
    NoSession,
    /// Nobody verified the caller, so there is no user to keep state for.
    #[error("no authenticated caller: per-user state needs a verified principal")]
    NoPrincipal,
    /// The key is empty or holds a control character.
    #[error("state key {0:?} is not allowed (empty, or holds a control character)")]
    BadKey(String),
    /// The key is longer than [`StateLimits::max_key_len`].
    #[error("state key of {len} bytes is longer than the limit of {limit}")]
    KeyTooLong {
        /// The key's length.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// The value is larger than [`StateLimits::max_value_bytes`].
    #[error("state value of {len} bytes is larger than the limit of {limit}")]
    ValueTooLarge {
        /// The value's length as JSON.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// The scope holds [`StateLimits::max_keys`] keys already.
    #[error("the state scope holds {limit} keys, the most allowed")]
    TooManyKeys {
        /// The limit.
        limit: usize,
    },
    /// The write would take the scope over [`StateLimits::max_scope_bytes`].
    #[error("the write would take the state scope to {would} bytes, over the limit of {limit}")]
    ScopeFull {
        /// What the scope would hold.
        would: usize,
        /// The limit.
        limit: usize,
    },
    /// The stored value is not a valid `T`.
    #[error("stored state value does not fit the type asked for: {0}")]
    Decode(String),
    /// The value could not be written as JSON.
    #[error("state value cannot be written as JSON: {0}")]
    Encode(String),
    /// An update lost to other writers [`StateLimits::update_tries`] times.
    #[error("update of state key {key:?} conflicted {tries} times in a row")]
    Contended {
        /// The key.
        key: String,
        /// Tries made.
        tries: u32,
    },
    /// The backend failed (unreachable, timed out); trying later may succeed.
    #[error("state store: {0}")]
    Store(String),
}

/// Where handler state lives. [`MemoryStateStore`] keeps it in this process; a shared
/// [`crate::Store`] (Redis, PostgreSQL) is one too, and lets every instance of a server see
/// it.
///
/// A backend enforces [`StateLimits::max_keys`] and [`StateLimits::max_scope_bytes`] in the
/// same step as the write (two writers cannot both pass), and keeps each scope until
/// [`StateLimits::ttl`] after its last write. Keys and values reach it already checked.
pub trait StateStore: std::fmt::Debug + Send + Sync + 'static {
    /// The value under `key`, with its version.
    fn get<'a>(
        &'a self,
        scope: &'a StateScope,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Stored>, StateError>>;
    /// Writes `value` under `key` if the key is as `expect` says.
    fn put<'a>(
        &'a self,
        scope: &'a StateScope,
        key: &'a str,
        value: &'a str,
        expect: Expect,
        limits: &'a StateLimits,
    ) -> BoxFuture<'a, Result<Written, StateError>>;
    /// Deletes `key` if it is as `expect` says.
    fn remove<'a>(
        &'a self,
        scope: &'a StateScope,
        key: &'a str,
        expect: Expect,
    ) -> BoxFuture<'a, Result<Removed, StateError>>;
    /// The scope's keys, sorted.
    fn keys<'a>(&'a self, scope: &'a StateScope) -> BoxFuture<'a, Result<Vec<String>, StateError>>;
    /// Deletes the whole scope (its numbering of versions starts again).
    fn clear<'a>(&'a self, scope: &'a StateScope) -> BoxFuture<'a, Result<(), StateError>>;
    /// Told that a session of this process ended (its connection closed, or its HTTP
    /// session was deleted or expired here). A backend of one process drops the session's
    /// state now; a shared one keeps it, since the session may go on at another instance
    /// (the shared store deletes it with the session).
    fn session_ended(&self, session: &str) {
        let _ = session;
    }
}
