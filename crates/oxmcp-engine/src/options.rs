//! Per-request and per-connection settings.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use oxmcp_types::ProgressParams;

/// A callback for `notifications/progress` about one outgoing request.
pub type ProgressCallback = Arc<dyn Fn(ProgressParams) + Send + Sync>;

/// Settings for one outgoing request.
#[derive(Clone, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "", generate_private = false)]
pub struct RequestOptions {
    /// Time without a response (or progress, if `reset_on_progress`) before giving up.
    #[setters(skip)]
    pub timeout: Duration,
    /// Hard cap on the total time, progress or not.
    #[setters(skip)]
    pub max_total: Duration,
    /// Whether progress notifications restart the `timeout` clock.
    pub reset_on_progress: bool,
    /// Called for each progress notification; setting it adds `_meta.progressToken`.
    #[setters(skip)]
    pub on_progress: Option<ProgressCallback>,
    /// Entries added to the request's `_meta` (a W3C `traceparent`, say); the request's own
    /// entries win.
    #[setters(skip)]
    pub meta: Option<oxmcp_types::JsonObject>,
}

impl Default for RequestOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(60),
            max_total: Duration::from_secs(600),
            reset_on_progress: true,
            on_progress: None,
            meta: None,
        }
    }
}

impl fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestOptions")
            .field("timeout", &self.timeout)
            .field("max_total", &self.max_total)
            .field("reset_on_progress", &self.reset_on_progress)
            .field("on_progress", &self.on_progress.is_some())
            .field("meta", &self.meta)
            .finish()
    }
}

impl RequestOptions {
    /// Sets the inactivity timeout.
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }

    /// Sets the hard cap.
    pub fn max_total(mut self, t: Duration) -> Self {
        self.max_total = t;
        self
    }

    /// Adds `_meta` entries to the request.
    pub fn meta(mut self, meta: oxmcp_types::JsonObject) -> Self {
        self.meta = Some(meta);
        self
    }

    /// Sends the request in the trace `trace` (its `traceparent` and `tracestate` in
    /// `_meta`).
    pub fn trace(mut self, trace: &oxmcp_types::TraceContext) -> Self {
        trace.insert_into(self.meta.get_or_insert_with(Default::default));
        self
    }

    /// Sets a progress callback.
    pub fn on_progress(mut self, f: impl Fn(ProgressParams) + Send + Sync + 'static) -> Self {
        self.on_progress = Some(Arc::new(f));
        self
    }
}

/// Settings for one connection's message loop.
#[derive(Debug, Clone, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "", generate_private = false)]
pub struct EngineConfig {
    /// Requests handled at the same time (each entry of a batch counts as one); more wait in
    /// a queue.
    pub max_in_flight: usize,
    /// Requests waiting for a slot before the loop stops reading input (backpressure).
    pub max_queued: usize,
    /// Whether to answer malformed input that carries no id (true on HTTP; false on stdio,
    /// where answering garbage can start an error storm).
    pub answer_unidentified: bool,
    /// When set, a request (or batch entry) arriving while this many are already accepted
    /// (running or queued) is answered at once with -32000 "server busy" and
    /// `data.transient: true` instead of waiting (HTTP, where a waiting request holds a
    /// connection). `None`: backpressure (stdio).
    pub busy_after: Option<usize>,
    /// Most entries in one JSON-RPC batch (2025-03-26 only). A longer batch gets one -32600
    /// error with `"id": null`, found while parsing: entries past the limit are never decoded.
    pub max_batch: usize,
    /// A send that waits this long for room in the transport's queue means the other side
    /// stopped reading: the connection is closed (its requests are aborted, and nothing waits
    /// for it any more). `None`: wait as long as it takes (stdio, where the one client's
    /// pace is the pace).
    pub stall_timeout: Option<Duration>,
    /// Messages for many connections at once (server-wide notifications) never wait; when a
    /// connection's queue is full they wait, in order, in an overflow queue of this many
    /// (drained by a task, which the stall timeout ends for a client that stopped reading).
    /// Past it, new ones are dropped.
    pub max_overflow: usize,
    /// The id of the first request this side sends (then +1 per request). Instances that
    /// serve one session together take disjoint ranges, so an answer finds its request.
    pub first_request_id: i64,
    /// How long a cancelled request's handler may go on after its cancellation token fired
    /// (to notice it, clean up and return) before its task is aborted. Nothing it sends or
    /// returns after the token fired goes out: a cancelled request gets no response. It
    /// keeps its `max_in_flight` slot meanwhile. Zero: aborted at once. Default 1 s.
    pub cancel_grace: Duration,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            max_in_flight: 256,
            max_queued: 4096,
            answer_unidentified: false,
            busy_after: None,
            max_batch: 50,
            stall_timeout: None,
            max_overflow: 1024,
            first_request_id: 1,
            cancel_grace: Duration::from_secs(1),
        }
    }
}
