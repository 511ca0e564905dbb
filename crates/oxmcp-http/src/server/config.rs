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
    /// Always `application/json`: the answer carries the response and nothing else.
    ///
    /// On a legacy session the request's notifications (progress, log messages) and its
    /// requests to the client (sampling, elicitation, roots) go on the session's GET stream
    /// instead, if the client has one open. That is another connection, so a notification
    /// sent just before the response may reach the client after it (and be ignored then, its
    /// request being over). Without a GET stream the notifications are dropped and a request
    /// to the client fails at once with `TransportError::Unreachable`.
    ///
    /// 2026-07-28 has no other stream: **progress and log notifications are dropped**, and a
    /// raw request to the client fails at once. (`Ctx::create_message`, `Ctx::elicit` and the
    /// like still work there: they are `input_required` rounds, answered in the response.)
    Json,
}

/// Settings of [`crate::StreamableHttp`].
#[derive(Debug, Clone, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "", generate_private = false)]
pub struct HttpConfig {
    /// Path of the MCP endpoint.
    pub path: String,
    /// JSON, SSE or automatic responses.
    pub response_mode: ResponseMode,
    /// Largest accepted POST body (413 above it).
    pub max_body: usize,
    /// Sessions idle (no request and no open stream) for this long are closed.
    pub session_idle_timeout: Duration,
    /// Sessions idle for this long (and quiet: nothing in flight either way, no GET stream
    /// open or kept for resumption) are parked: their engine connection ends, the server
    /// keeps their state (log level, subscriptions, handler state), and their next request
    /// starts a connection again. An idle session then holds a few hundred bytes of engine
    /// instead of kilobytes. A session is also parked as soon as its engine has handled the
    /// client's `notifications/initialized`, if it is quiet then: a client that connects and
    /// waits holds no engine meanwhile. Only sessions held in this process are parked (not those of
    /// [`crate::StreamableHttp::with_store`]), and only by a service that supports it
    /// (`oxmcp_server::Server` does; see `oxmcp_engine::ParkSlot`). `None`: never.
    pub park_idle_after: Option<Duration>,
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
    /// Bytes of stored events kept per session (its oldest events go first).
    pub event_log_session_bytes: usize,
    /// Bytes of stored events kept over all sessions; past it, new events are sent but not
    /// kept for resumption.
    pub event_log_total_bytes: usize,
    /// Requests of one session being handled at once; one more is answered with -32000
    /// "server busy" (marked transient) at once.
    pub max_requests_per_session: usize,
    /// SSE streams attached to one session at once (POSTs answered as SSE, the GET stream and
    /// resumptions; a POST answered with JSON is not a stream); 429 above it.
    pub max_streams_per_session: usize,
    /// Sessions one verified principal ([`crate::Principal`]) may hold at once (429 above it).
    pub max_sessions_per_principal: usize,
    /// Sessions one remote address (IPv6: one /64) without a principal may hold at once
    /// (429 above it).
    pub max_sessions_per_address: usize,
    /// New sessions per second one client (principal or address) may open, on average.
    pub client_session_rate: u32,
    /// New sessions one client may open in a burst (its token bucket's size); 429 with
    /// `Retry-After` past it.
    pub client_session_burst: u32,
    /// Apply the per-address limits to loopback clients too (off: a local server's clients
    /// all share one address, so the limit would throttle everyone at once).
    pub limit_loopback: bool,
    /// A session whose client has not sent `notifications/initialized` (nor any request
    /// after `initialize`) within this time is closed.
    pub session_init_timeout: Duration,
    /// Sessionless requests being handled at once over the whole endpoint (2026-07-28 ones,
    /// and with [`HttpConfig::stateless`] legacy ones too); more get 503 with `Retry-After`.
    pub max_stateless_requests: usize,
    /// Of those, `subscriptions/listen` streams open at once.
    pub max_listen_streams: usize,
    /// A client whose messages wait this long for it to read (a legacy HTTP+SSE stream, or a
    /// streamed 2026-07-28 answer) is disconnected, so that nothing else waits for it. (A
    /// Streamable HTTP session never waits: a slow stream is detached and resumed later.)
    pub stall_timeout: Duration,
    /// A request body must arrive within this time (slow bodies get 408).
    pub body_read_timeout: Duration,
    /// Cancelled to shut down: new POSTs get 503, standalone and legacy SSE streams end once
    /// their session's in-flight requests are answered. See [`crate::serve_router_with`].
    pub shutdown: tokio_util::sync::CancellationToken,
    /// Bearer-token protection (OAuth 2.1 resource server); `None`: no authentication.
    pub auth: Option<std::sync::Arc<crate::auth::HttpAuth>>,
    /// Serve legacy clients (protocol 2024-11-05 to 2025-11-25) without sessions, like the
    /// official SDKs' stateless mode: any instance answers any POST, with no shared store and
    /// no sticky routing. Off by default. When on:
    ///
    /// - `initialize` is answered without `Mcp-Session-Id`, and no session is kept; a POST
    ///   holding only notifications or responses (`notifications/initialized`, say) is
    ///   accepted (202) and goes nowhere;
    /// - every other POST is served on a state of its own, made for it and dropped once it is
    ///   answered, as if the client had just initialized with the version of its
    ///   `MCP-Protocol-Version` header (2025-03-26 without one, as the specification says)
    ///   and declared no capabilities; an `Mcp-Session-Id` it carries is ignored;
    /// - the request's notifications (progress, log messages) still go on its own SSE
    ///   answer (per [`HttpConfig::response_mode`]), but a request to the client
    ///   (sampling, elicitation, roots) fails at once: the client's answer would come in
    ///   another POST, which no state waits for. (`Ctx::create_message` and the like say
    ///   the client does not support them.) Those SSE answers cannot be resumed;
    /// - GET (the standalone stream) and DELETE are answered 405;
    /// - `resources/subscribe` and `resources/unsubscribe` are answered -32601 (a
    ///   subscription needs a session to notify); `logging/setLevel` succeeds but lasts no
    ///   longer than its own request.
    ///
    /// 2026-07-28 requests, sessionless anyway, are served as always. The legacy HTTP+SSE
    /// transport ([`crate::LegacySse`]) keeps its sessions: its stream is the session.
    /// Legacy sessions are not shared through [`crate::StreamableHttp::with_store`] then
    /// (there are none); the store still serves what the hosted service keeps in it.
    pub stateless: bool,
    /// How often an open WebSocket connection, gRPC `Connect` stream or unary `Call`, legacy
    /// SSE stream, or Streamable HTTP GET or `subscriptions/listen` stream has its bearer
    /// token verified again (with `auth`). (A POST's own SSE stream, the answer to one request,
    /// is not checked again.) A revoked token then ends it within
    /// this time plus the verifier's own cache time (an introspection answer is reused for
    /// `IntrospectionConfig::cache_for`); an expired one ends it at its `exp`, whatever this
    /// says.
    pub token_recheck_interval: Duration,
}

impl HttpConfig {
    /// The message-loop settings of one connection, from the hosted service's own under
    /// these settings: "busy" instead of backpressure, and a stall timeout.
    pub fn engine(&self, service: oxmcp_engine::EngineConfig) -> oxmcp_engine::EngineConfig {
        service
            .busy_after(Some(self.max_requests_per_session.max(1)))
            .stall_timeout(Some(self.stall_timeout))
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            path: "/mcp".to_owned(),
            response_mode: ResponseMode::Auto,
            max_body: 4 * 1024 * 1024,
            session_idle_timeout: Duration::from_secs(30 * 60),
            park_idle_after: Some(Duration::from_secs(5)),
            max_sessions: 10_000,
            dns_rebinding_protection: true,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            sse_retry: Duration::from_secs(1),
            keep_alive: Duration::from_secs(15),
            event_log_limit: 1024,
            event_log_session_bytes: oxmcp_store::MemoryEventLog::DEFAULT_SESSION_BYTES,
            event_log_total_bytes: oxmcp_store::MemoryEventLog::DEFAULT_TOTAL_BYTES,
            max_requests_per_session: 256,
            max_streams_per_session: 512,
            max_sessions_per_principal: 100,
            max_sessions_per_address: 2000,
            client_session_rate: 100,
            client_session_burst: 2000,
            limit_loopback: false,
            session_init_timeout: Duration::from_secs(60),
            max_stateless_requests: 4096,
            max_listen_streams: 1024,
            stall_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            shutdown: tokio_util::sync::CancellationToken::new(),
            auth: None,
            token_recheck_interval: Duration::from_secs(60),
            stateless: false,
        }
    }
}
