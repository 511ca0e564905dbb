//! Settings of the Streamable HTTP server.

use std::time::Duration;

/// How responses to POSTed requests are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResponseMode {
    /// JSON when the request's only output is its response; an SSE stream as soon as the
    /// handler sends notifications or requests of its own.
    #[default]
    Auto,
    /// Always a `text/event-stream`.
    Sse,
    /// Always `application/json` (notifications sent while handling are routed to the GET
    /// stream instead).
    Json,
}

/// Settings of [`crate::StreamableHttp`].
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Path of the MCP endpoint.
    pub path: String,
    /// JSON, SSE or automatic responses.
    pub response_mode: ResponseMode,
    /// Largest accepted POST body (413 above it).
    pub max_body: usize,
    /// Sessions idle (no request and no open stream) for this long are closed.
    pub session_idle_timeout: Duration,
    /// Most sessions at once (503 above it).
    pub max_sessions: usize,
    /// Validate `Host` and `Origin` (DNS-rebinding protection). On by default.
    pub dns_rebinding_protection: bool,
    /// Accepted `Host` names (without port). Empty means the loopback names.
    pub allowed_hosts: Vec<String>,
    /// Accepted `Origin` values (`scheme://host[:port]`); any origin whose host is an allowed
    /// host is accepted too.
    pub allowed_origins: Vec<String>,
    /// `retry:` hint sent on SSE streams, in milliseconds.
    pub sse_retry: Duration,
    /// Interval of SSE keep-alive comments.
    pub keep_alive: Duration,
    /// Events kept per stream for resumption.
    pub event_log_limit: usize,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            path: "/mcp".to_owned(),
            response_mode: ResponseMode::Auto,
            max_body: 4 * 1024 * 1024,
            session_idle_timeout: Duration::from_secs(30 * 60),
            max_sessions: 10_000,
            dns_rebinding_protection: true,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            sse_retry: Duration::from_secs(1),
            keep_alive: Duration::from_secs(15),
            event_log_limit: 1024,
        }
    }
}
