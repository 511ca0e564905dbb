//! Shared state for an MCP server that runs as several instances behind a load balancer, and
//! the SSE event log of one that runs alone. Imports no other crate of ours.
//!
//! A [`Store`] holds what must outlive one instance or cross between instances:
//! - session records (the client's `initialize`, the negotiated version, the owner, the
//!   log level and resource subscriptions), so that any instance can serve any session;
//! - the event log of every SSE stream, so that a client resumes on any instance;
//! - which instance waits for the answer to a server-to-client request;
//! - a bus of [`BusEvent`]s that every instance reads in one order: session ends, client
//!   messages to hand to another instance, state changes, resource changes, and doorbells
//!   for streams that another instance is tailing;
//! - instance heartbeats, so that the work of a dead instance is reported as failed;
//! - task records, readable by every instance until they expire.
//!
//! The event half of a store is its own trait, [`EventLog`]: a server of one instance keeps
//! its streams' events in a [`MemoryEventLog`] (bounded in events and bytes), or in any other
//! [`EventLog`].
//!
//! [`MemoryStore`] keeps all of it in one process (several endpoints in one process can
//! share it, which is how the cross-instance logic is tested without a network);
//! `oxmcp-store-redis` keeps it in Redis.
//!
//! Two instances sharing one [`MemoryStore`]: a session one of them saved, the other finds.
//!
//! ```
//! use oxmcp_store::{MemoryStore, SessionRecord, Store, StoreConfig};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let one = MemoryStore::new("instance-1", StoreConfig::default());
//! let two = one.instance_handle("instance-2");
//! let record = SessionRecord {
//!     version: "2025-11-25".into(),
//!     owner: None,
//!     init: r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#.into(),
//!     log_level: None,
//!     subscriptions: vec![],
//!     created_ms: 0,
//! };
//! one.create_session("s1", &record).await?;
//! assert_eq!(two.load_session("s1").await?, Some(record));
//! two.delete_session("s1").await?;
//! assert_eq!(one.load_session("s1").await?, None);
//! # Ok(())
//! # }
//! ```

mod event_log;
mod memory;
pub mod state;
mod types;

pub use event_log::MemoryEventLog;
pub use memory::MemoryStore;
pub use state::{MemoryStateStore, StateStore};
pub use types::*;

use futures::future::BoxFuture;
use tokio::sync::broadcast;

/// Counters of a store, for measurements.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Requests sent to the store and answered (a pipeline counts once), the bus reader's
    /// blocking reads and the heartbeats included.
    pub round_trips: u64,
    /// Operations timed (a call to the store, one or more round trips; the bus reader's
    /// blocking reads excluded).
    pub operations: u64,
    /// Time spent in the timed operations, in microseconds: `busy_micros / operations` is
    /// their mean latency.
    pub busy_micros: u64,
}

/// What a store operation returns.
pub type StoreResult<T> = Result<T, StoreError>;

/// Why a store operation failed. Every variant but [`StoreError::Refused`] is transient from
/// the caller's point of view: the request that needed it is refused with a "busy, retry"
/// answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The store cannot be reached (connection refused, reset, authentication failed).
    #[error("session store unavailable: {0}")]
    Unavailable(String),
    /// The store did not answer in time.
    #[error("session store timed out after {0:?}")]
    Timeout(std::time::Duration),
    /// Too many store operations are waiting already (back-pressure).
    #[error("session store busy: {0} operations waiting")]
    Busy(usize),
    /// The store answered with something this code cannot read.
    #[error("session store answered unexpectedly: {0}")]
    Protocol(String),
    /// Refused by one of the [`StoreConfig`] limits (too many subscriptions, a bus event
    /// too large): not transient, the same request is refused again.
    #[error("refused by the session store: {0}")]
    Refused(String),
}

impl StoreError {
    /// Whether trying again later may succeed (every error but [`StoreError::Refused`]).
    pub fn is_transient(&self) -> bool {
        !matches!(self, Self::Refused(_))
    }
}

/// The event logs of SSE streams, kept so that a client can resume a stream with
/// `Last-Event-ID`: the event half of a [`Store`] (every instance reads the same logs), and on
/// its own the log of one instance ([`MemoryEventLog`]).
///
/// Streams are named by `(session, stream)`; `seq` increases by one per event within a
/// stream, starting at 1. A log may drop old events (a bounded log); what it returns from
/// [`EventLog::replay`] must be exactly the asked stream's events, oldest first.
pub trait EventLog: Send + Sync + 'static {
    /// Records a stream before its first event (an SSE response primed at once), so that a
    /// client can resume it on another instance, and learn that it failed if its writer dies.
    fn open_stream<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        info: &'a StreamInfo,
    ) -> BoxFuture<'a, StoreResult<()>>;
    /// Appends one event to a stream's log (`seq` increases by one per event from 1). `info`
    /// is given with a stream's first stored event.
    fn append<'a>(&'a self, event: AppendEvent<'a>) -> BoxFuture<'a, StoreResult<()>>;
    /// The stream's events with `seq > after`, oldest first.
    fn replay<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        after: u64,
    ) -> BoxFuture<'a, StoreResult<Vec<StoredEvent>>>;
    /// Who writes a stream and what it answers, if the stream is known.
    fn stream_info<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<StreamInfo>>>;
    /// Drops a stream's log.
    fn forget_stream<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
    ) -> BoxFuture<'a, StoreResult<()>>;

    /// Drops every stream log of a session. The default does nothing, for logs that go
    /// with the session's record or expire by themselves ([`StoreConfig::stream_ttl`]).
    fn forget_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        let _ = session;
        Box::pin(std::future::ready(Ok(())))
    }
}

/// Shared state of a scaled-out MCP server. All methods are cheap to call concurrently.
///
/// Sessions, their streams and their pending requests expire by themselves after
/// [`StoreConfig::session_ttl`] without use, so an abandoned session leaves nothing behind.
/// A store also keeps handlers' state ([`StateStore`]); [`Store::delete_session`] deletes the
/// session's, and a session's handler state lives as long as the session.
pub trait Store: EventLog + StateStore {
    /// This instance's id (shown in logs, and where answers for it are routed).
    fn instance(&self) -> &str;
    /// The store's settings.
    fn config(&self) -> &StoreConfig;

    /// Saves a new session.
    fn create_session<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
    ) -> BoxFuture<'a, StoreResult<()>>;
    /// A session's record, if it exists.
    fn load_session<'a>(&'a self, id: &'a str)
    -> BoxFuture<'a, StoreResult<Option<SessionRecord>>>;
    /// Marks a session used (its expiry starts again). `false`: it does not exist (any more).
    fn touch_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<bool>>;
    /// Records a change to a session's state (log level, subscriptions), for the instances
    /// that restore it later.
    fn update_session<'a>(
        &'a self,
        id: &'a str,
        change: &'a StateChange,
    ) -> BoxFuture<'a, StoreResult<()>>;
    /// Deletes a session with its streams, pending requests and handler state.
    fn delete_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>>;
    /// A number never returned before for this session (1, 2, ...): each instance serving the
    /// session numbers its own requests to the client from a block of its own.
    fn next_block<'a>(&'a self, session: &'a str) -> BoxFuture<'a, StoreResult<u64>>;

    /// Records that this instance waits for the client's answer to request `id`.
    fn put_pending<'a>(&'a self, session: &'a str, id: &'a str) -> BoxFuture<'a, StoreResult<()>>;
    /// Which instance waits for the answer to request `id` (and forgets it).
    fn take_pending<'a>(
        &'a self,
        session: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<String>>>;

    /// Says this instance is alive (called every [`StoreConfig::heartbeat`]).
    fn heartbeat(&self) -> BoxFuture<'_, StoreResult<()>>;
    /// Whether `instance` has said it is alive within the last few heartbeats.
    fn is_alive<'a>(&'a self, instance: &'a str) -> BoxFuture<'a, StoreResult<bool>>;

    /// A random secret of 32 bytes shared by every instance under `name` (made by the first
    /// instance that asks), e.g. the key that signs 2026-07-28 `requestState`.
    fn shared_secret<'a>(&'a self, name: &'a str) -> BoxFuture<'a, StoreResult<[u8; 32]>>;

    /// Saves a task record (new or changed) until its `expires_ms`.
    fn put_task<'a>(&'a self, task: &'a StoredTask) -> BoxFuture<'a, StoreResult<()>>;
    /// A task record, unless unknown or expired.
    fn get_task<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<Option<String>>>;
    /// The live task records of `owner`, oldest first, at most `limit`.
    fn list_tasks<'a>(
        &'a self,
        owner: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, StoreResult<Vec<String>>>;
    /// Deletes a task record.
    fn delete_task<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>>;

    /// Puts an event on the bus (every instance, this one included, reads it).
    fn publish<'a>(&'a self, event: &'a BusEvent) -> BoxFuture<'a, StoreResult<()>>;
    /// What the store counted so far (zeros for a store that counts nothing).
    fn stats(&self) -> StoreStats {
        StoreStats::default()
    }

    /// How many times this instance's bus reader lost the store (it counts up; a store
    /// whose bus cannot break, such as [`MemoryStore`], stays at 0). While the reader was
    /// away the store may have been unreachable and events may have gone unseen, so what an
    /// instance trusts between bus events (a session's lease) is not trusted across a
    /// change of this number.
    fn bus_breaks(&self) -> u64 {
        0
    }
    /// The bus, from now on, in order. A receiver that falls behind by more than its buffer
    /// is told how much it missed (`Lagged`).
    fn bus(&self) -> broadcast::Receiver<BusEvent>;
}

/// 32 bytes from the OS CSPRNG.
///
/// # Errors
/// When the OS has no randomness to give (nothing guessable is made instead).
pub fn random_secret() -> StoreResult<[u8; 32]> {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key)
        .map_err(|e| StoreError::Unavailable(format!("no randomness from the OS: {e}")))?;
    Ok(key)
}
