//! The records a [`crate::Store`] keeps and the events on its bus.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What any instance needs to serve a session it did not start: the client's own
/// `initialize` and the state its later requests changed. Never holds an access token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// The negotiated protocol version.
    pub version: String,
    /// The verified principal that opened the session (only it may use it).
    pub owner: Option<String>,
    /// The client's `initialize` request, as it sent it (one JSON-RPC message).
    pub init: String,
    /// The level the client set with `logging/setLevel`.
    #[serde(default)]
    pub log_level: Option<String>,
    /// The resources the client subscribed to (`resources/subscribe`).
    #[serde(default)]
    pub subscriptions: Vec<String>,
    /// When it was made, in milliseconds since the Unix epoch.
    pub created_ms: u64,
}

impl SessionRecord {
    /// Checks the record against `max_bytes` (a store's [`StoreConfig::max_record`]).
    ///
    /// # Errors
    /// [`crate::StoreError::Refused`] when it is larger.
    pub fn check_size(&self, max_bytes: usize) -> crate::StoreResult<()> {
        let size = self.version.len()
            + self.init.len()
            + self.owner.as_ref().map_or(0, String::len)
            + self.log_level.as_ref().map_or(0, String::len)
            + self.subscriptions.iter().map(String::len).sum::<usize>();
        if size > max_bytes {
            return Err(crate::StoreError::Refused(format!(
                "a session record of {size} bytes (its initialize request, mostly) is over the limit of {max_bytes}"
            )));
        }
        Ok(())
    }
}

/// A change to a session's state that every instance serving it must make too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "camelCase")]
pub enum StateChange {
    /// `logging/setLevel`.
    LogLevel(String),
    /// `resources/subscribe`.
    Subscribe(String),
    /// `resources/unsubscribe`.
    Unsubscribe(String),
}

impl StateChange {
    /// The client request that makes this change, as `(method, params)`.
    pub fn as_request(&self) -> (&'static str, serde_json::Value) {
        match self {
            Self::LogLevel(l) => ("logging/setLevel", serde_json::json!({ "level": l })),
            Self::Subscribe(u) => ("resources/subscribe", serde_json::json!({ "uri": u })),
            Self::Unsubscribe(u) => ("resources/unsubscribe", serde_json::json!({ "uri": u })),
        }
    }

    /// Checks the value the change stores (a URI, a level) against `max_bytes` (a store's
    /// [`StoreConfig::max_record`]).
    ///
    /// # Errors
    /// [`crate::StoreError::Refused`] when it is larger.
    pub fn check_size(&self, max_bytes: usize) -> crate::StoreResult<()> {
        let (Self::LogLevel(v) | Self::Subscribe(v) | Self::Unsubscribe(v)) = self;
        if v.len() > max_bytes {
            return Err(crate::StoreError::Refused(format!(
                "a session state value of {} bytes is over the limit of {max_bytes}",
                v.len()
            )));
        }
        Ok(())
    }

    /// Applies the change to a record, within `max_subscriptions` stored subscriptions.
    ///
    /// # Errors
    /// [`crate::StoreError::Refused`] for a new subscription past the limit.
    pub fn apply_within(
        &self,
        record: &mut SessionRecord,
        max_subscriptions: usize,
    ) -> crate::StoreResult<()> {
        if let Self::Subscribe(u) = self
            && !record.subscriptions.contains(u)
            && record.subscriptions.len() >= max_subscriptions
        {
            return Err(too_many_subscriptions(max_subscriptions));
        }
        self.apply(record);
        Ok(())
    }

    /// Applies the change to a record.
    pub fn apply(&self, record: &mut SessionRecord) {
        match self {
            Self::LogLevel(l) => record.log_level = Some(l.clone()),
            Self::Subscribe(u) => {
                if !record.subscriptions.contains(u) {
                    record.subscriptions.push(u.clone());
                }
            }
            Self::Unsubscribe(u) => record.subscriptions.retain(|s| s != u),
        }
    }
}

impl BusEvent {
    /// The event as JSON, refused with [`crate::StoreError::Refused`] when it is over
    /// `max_bytes` (a store's [`StoreConfig::max_bus_event`]).
    ///
    /// # Errors
    /// Over the limit, or not encodable.
    pub fn encode_within(&self, max_bytes: usize) -> crate::StoreResult<String> {
        let json =
            serde_json::to_string(self).map_err(|e| crate::StoreError::Protocol(e.to_string()))?;
        if json.len() > max_bytes {
            return Err(crate::StoreError::Refused(format!(
                "a bus event of {} bytes is over the limit of {max_bytes}",
                json.len()
            )));
        }
        Ok(json)
    }
}

/// The refusal of a subscription past [`StoreConfig::max_subscriptions`].
pub(crate) fn too_many_subscriptions(max: usize) -> crate::StoreError {
    crate::StoreError::Refused(format!(
        "the session holds {max} stored subscriptions, the most allowed"
    ))
}

/// Who writes an SSE stream and which requests it answers: what another instance needs to
/// resume it, and to report its requests as failed if the writer died.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamInfo {
    /// The instance writing the stream.
    pub owner: String,
    /// The JSON-RPC ids of the requests the stream answers (empty for a GET stream).
    pub ids: Vec<serde_json::Value>,
    /// The requests came as one batch (they are answered by one array).
    #[serde(default)]
    pub batch: bool,
}

/// One event to append to a stream's log.
#[derive(Debug, Clone, Copy)]
pub struct AppendEvent<'a> {
    /// The session.
    pub session: &'a str,
    /// The stream within the session.
    pub stream: &'a str,
    /// The event's number in the stream (1, 2, ...).
    pub seq: u64,
    /// One JSON-RPC message; empty for the end of a stream whose request was cancelled.
    pub data: &'a str,
    /// The stream has nothing more after this event.
    pub last: bool,
    /// Given with the stream's first stored event.
    pub info: Option<&'a StreamInfo>,
}

/// One event of a stream's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// Its number in the stream.
    pub seq: u64,
    /// One JSON-RPC message; empty for the end of a stream whose request was cancelled.
    pub data: String,
    /// The stream's last event.
    pub last: bool,
}

/// What the bus carries: every instance reads every event, in one order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum BusEvent {
    /// A session ended (DELETE, or its owner's expiry): every instance drops it.
    SessionEnded {
        /// The session.
        session: String,
    },
    /// A client message for the instance(s) serving a session: the answer to a
    /// server-to-client request (for the instance waiting for it), or a cancellation (for
    /// all of them).
    Deliver {
        /// The session.
        session: String,
        /// The one instance it is for (`None`: every instance but the sender).
        to: Option<String>,
        /// The instance that received it.
        from: String,
        /// One JSON-RPC message.
        message: String,
    },
    /// A session's state changed: every other instance serving it makes the same change.
    State {
        /// The session.
        session: String,
        /// The instance the client asked.
        from: String,
        /// The change.
        change: StateChange,
    },
    /// A change of the server's own (a resource was updated, a list changed), for every
    /// other instance to tell its clients. What it holds is the server's business.
    Change {
        /// The instance where it happened.
        from: String,
        /// The change.
        change: serde_json::Value,
    },
    /// A signal for the instance running a task (`tasks/cancel`, `tasks/update` received
    /// elsewhere). What it holds is the server's business.
    Task {
        /// The instance that received it.
        from: String,
        /// The task.
        task: String,
        /// The signal.
        signal: serde_json::Value,
    },
    /// A stream got a new event (for an instance tailing it for a resumed client).
    Bell {
        /// The session.
        session: String,
        /// The stream.
        stream: String,
    },
}

/// A task's record as a store keeps it: the server's JSON, opaque here, with what the
/// store indexes and expires it by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredTask {
    /// The task's id.
    pub id: String,
    /// Whose it is (tasks are listed per owner).
    pub owner: Option<String>,
    /// Creation, in ms since the Unix epoch (lists are in this order).
    pub created_ms: u64,
    /// When it may be deleted, in ms since the Unix epoch.
    pub expires_ms: u64,
    /// The record.
    pub json: String,
}

/// Settings shared by the store implementations.
#[derive(Debug, Clone, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "", generate_private = false)]
pub struct StoreConfig {
    /// Prefix of every key (several deployments can share one Redis).
    pub namespace: String,
    /// A session unused this long is gone, with its streams and pending requests.
    pub session_ttl: Duration,
    /// A stream's log is kept this long after its last event.
    pub stream_ttl: Duration,
    /// Events kept per stream (the oldest go first).
    pub max_events_per_stream: usize,
    /// How often an instance says it is alive; it counts as dead after three missed.
    pub heartbeat: Duration,
    /// How long one store operation may take before the request that needs it is refused.
    pub op_timeout: Duration,
    /// Store operations allowed to wait at once; past that, requests are refused as busy.
    pub max_waiting: usize,
    /// Bus events buffered per reader before it is told it lagged.
    pub bus_buffer: usize,
    /// Most subscriptions stored per session (a subscription past it is refused with
    /// [`crate::StoreError::Refused`]); the server's own per-session limit is checked
    /// first, this one holds when several instances accept subscriptions at once.
    pub max_subscriptions: usize,
    /// Largest session record, in bytes (the client's `initialize` and what it names):
    /// a larger one is refused with [`crate::StoreError::Refused`], so that no session
    /// costs the store more than this. A real `initialize` is a few hundred bytes.
    pub max_record: usize,
    /// Largest bus event, in bytes of its JSON (past it, [`crate::Store::publish`] refuses
    /// it). Events carry ids, URIs and, for another instance's request to the client, the
    /// client's answer: this must be at least the largest message the server accepts.
    pub max_bus_event: usize,
    /// Bus events larger than this many bytes are not kept in the bus itself (which holds
    /// its last entries whatever their age) but beside it, for [`StoreConfig::parcel_ttl`]
    /// (stores whose bus is a log, such as Redis's).
    pub bus_inline: usize,
    /// How long a large bus event is kept beside the bus for the other instances to read.
    pub parcel_ttl: Duration,
    /// How long an instance serving a session trusts, without asking the store, that the
    /// session still exists. A session ended elsewhere (DELETE) is ended here by the bus's
    /// [`crate::BusEvent::SessionEnded`] as soon as it arrives; the lease bounds how long a
    /// missed event (the bus reader lost the store: [`crate::Store::bus_breaks`]) can go
    /// unnoticed. Each use of a session past its lease asks the store again, which also
    /// renews the record's expiry. Zero: the store is asked on every request.
    pub session_lease: Duration,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            namespace: "mcp".to_owned(),
            session_ttl: Duration::from_secs(30 * 60),
            stream_ttl: Duration::from_secs(5 * 60),
            max_events_per_stream: 1000,
            heartbeat: Duration::from_secs(2),
            op_timeout: Duration::from_secs(2),
            max_waiting: 1024,
            bus_buffer: 4096,
            max_subscriptions: 1_000,
            max_record: 64 * 1024,
            max_bus_event: 4 * 1024 * 1024 + 64 * 1024,
            bus_inline: 8 * 1024,
            parcel_ttl: Duration::from_secs(60),
            session_lease: Duration::from_secs(1),
        }
    }
}

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
