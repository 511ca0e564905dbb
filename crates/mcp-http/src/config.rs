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
    /// Requests of one session being handled at once; one more is answered with -32000
    /// "server busy" (marked transient) at once.
    pub max_requests_per_session: usize,
    /// Sessions one principal may hold at once (429 above it). The principal of a request is
    /// what [`HttpConfig::principal`] says; requests without one are not counted.
    pub max_sessions_per_principal: usize,
    /// Who a request is from, for per-principal limits. By default, the `Authorization`
    /// header (a bearer token names its user); an authorization layer can put the verified
    /// user here instead.
    pub principal: fn(&axum::http::HeaderMap) -> Option<String>,
    /// SSE streams attached to one session at once (POST answers, the GET stream and
    /// resumptions); 429 above it.
    pub max_streams_per_session: usize,
    /// New sessions per second across the endpoint (a token bucket holding as many); 429
    /// with `Retry-After` above it.
    pub initialize_rate: u32,
    /// A request body must arrive within this time (slow bodies get 408).
    pub body_read_timeout: Duration,
    /// Cancelled to shut down: new POSTs get 503, standalone and legacy SSE streams end once
    /// their session's in-flight requests are answered. See [`crate::serve_router_with`].
    pub shutdown: tokio_util::sync::CancellationToken,
}

/// The default [`HttpConfig::principal`]: the `Authorization` header's value.
pub fn principal_from_authorization(headers: &axum::http::HeaderMap) -> Option<String> {
    headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
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
            max_requests_per_session: 64,
            max_sessions_per_principal: 100,
            principal: principal_from_authorization,
            max_streams_per_session: 32,
            initialize_rate: 200,
            body_read_timeout: Duration::from_secs(30),
            shutdown: tokio_util::sync::CancellationToken::new(),
        }
    }
}
