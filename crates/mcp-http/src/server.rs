//! [`StreamableHttp`]: the MCP endpoint as an axum `Router` (POST, GET, DELETE).

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use mcp_jsonrpc::{DecodeError, ErrorCode, ErrorObject, Frame, Message, RequestId};
use mcp_server::Server;
use mcp_types::{Feature, InitializeParams, ProtocolVersion};
use tokio::sync::mpsc;

use crate::config::{HttpConfig, ResponseMode};
use crate::event_store::{EventStore, MemoryEventStore};
use crate::guard;
use crate::session::{Event, Session};

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";

struct Inner {
    server: Server,
    config: Arc<HttpConfig>,
    store: Arc<dyn EventStore>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// Token bucket of new sessions: (tokens, last refill).
    init_bucket: Mutex<(f64, Instant)>,
}

impl Inner {
    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes one new-session token; `Err(wait)` when the bucket is empty.
    fn take_init_token(&self) -> Result<(), Duration> {
        let rate = f64::from(self.config.initialize_rate.max(1));
        let mut b = self
            .init_bucket
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        b.0 = (b.0 + now.duration_since(b.1).as_secs_f64() * rate).min(rate);
        b.1 = now;
        if b.0 >= 1.0 {
            b.0 -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - b.0) / rate))
        }
    }

    fn remove(&self, id: &str) -> Option<Arc<Session>> {
        let s = self.sessions().remove(id);
        if let Some(s) = &s {
            s.close();
            let s = s.clone();
            tokio::spawn(async move { s.forget_stored().await });
        }
        s
    }
}

/// A Streamable HTTP endpoint serving one [`Server`]. Cheap to clone.
#[derive(Clone)]
pub struct StreamableHttp {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for StreamableHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamableHttp")
            .field("path", &self.inner.config.path)
            .finish_non_exhaustive()
    }
}

fn config_rate(config: &HttpConfig) -> u32 {
    config.initialize_rate.max(1)
}

/// 429 or 503 with `Retry-After` (whole seconds, at least 1).
fn retry_later(status: StatusCode, wait: Duration, message: &str) -> Response {
    let mut r = rpc_error(status, None, ErrorCode::SERVER_BUSY, message);
    let secs = wait.as_secs_f64().ceil().max(1.0);
    if let Ok(v) = HeaderValue::from_str(&format!("{secs:.0}")) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// Reads a request body: 413 before reading when `Content-Length` is too large, 413 as soon as
/// the streamed bytes pass the limit (chunked or lying bodies), 408 when it arrives too slowly.
pub(crate) async fn read_body(
    config: &HttpConfig,
    headers: &HeaderMap,
    body: Body,
) -> Result<Bytes, Response> {
    let too_large = || {
        rpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            None,
            ErrorCode::INVALID_REQUEST,
            &format!("Request body larger than {} bytes", config.max_body),
        )
    };
    let declared = header_str(headers, header::CONTENT_LENGTH.as_str())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > config.max_body as u64) {
        return Err(too_large());
    }
    match tokio::time::timeout(
        config.body_read_timeout,
        axum::body::to_bytes(body, config.max_body),
    )
    .await
    {
        Ok(Ok(b)) => Ok(b),
        Ok(Err(e)) => {
            let limit = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            if limit {
                Err(too_large())
            } else {
                Err(rpc_error(
                    StatusCode::BAD_REQUEST,
                    None,
                    ErrorCode::INVALID_REQUEST,
                    "Could not read the request body",
                ))
            }
        }
        Err(_) => Err(rpc_error(
            StatusCode::REQUEST_TIMEOUT,
            None,
            ErrorCode::INVALID_REQUEST,
            "The request body did not arrive in time",
        )),
    }
}

/// 503 once shutdown has begun.
fn accepting(config: &HttpConfig) -> Result<(), Response> {
    if config.shutdown.is_cancelled() {
        return Err(retry_later(
            StatusCode::SERVICE_UNAVAILABLE,
            Duration::from_secs(1),
            "Server is shutting down",
        ));
    }
    Ok(())
}

/// 429 when the session already has its most SSE streams attached.
fn stream_slot(config: &HttpConfig, session: &Session) -> Result<(), Response> {
    if session.attached_streams() >= config.max_streams_per_session {
        return Err(rpc_error(
            StatusCode::TOO_MANY_REQUESTS,
            None,
            ErrorCode::SERVER_BUSY,
            "Too many open streams on this session",
        ));
    }
    Ok(())
}

/// A session id header that could be ours: visible ASCII, at most 128 bytes.
fn plausible_session_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

fn rpc_error(
    status: StatusCode,
    id: Option<RequestId>,
    code: ErrorCode,
    message: &str,
) -> Response {
    let body = Message::error(id, ErrorObject::new(code, message)).encode();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn bad_request(message: &str) -> Response {
    rpc_error(
        StatusCode::BAD_REQUEST,
        None,
        ErrorCode::INVALID_REQUEST,
        message,
    )
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn accepts(headers: &HeaderMap, mime: &str) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| {
            v.split(',')
                .map(|p| p.split(';').next().unwrap_or("").trim())
                .any(|m| m == mime || m == "*/*")
        })
}

/// Checks what every request must satisfy: Host/Origin and a known protocol version header.
fn host_checks(config: &HttpConfig, headers: &HeaderMap) -> Result<(), Response> {
    if let Err(refusal) = guard::check(config, headers) {
        tracing::warn!(?refusal, "refused by DNS-rebinding protection");
        return Err(rpc_error(
            StatusCode::FORBIDDEN,
            None,
            ErrorCode::INVALID_REQUEST,
            "Forbidden: Host or Origin not allowed",
        ));
    }
    Ok(())
}

fn common_checks(config: &HttpConfig, headers: &HeaderMap) -> Result<(), Response> {
    host_checks(config, headers)?;
    // Every value counts: a request may not smuggle a second, unsupported version.
    for v in headers.get_all(VERSION_HEADER) {
        let v = v.to_str().unwrap_or("");
        if ProtocolVersion::parse(v).is_none() {
            let e = mcp_server::unsupported_version_error(v, None);
            let body = Message::error(None, e).encode();
            return Err((
                StatusCode::BAD_REQUEST,
                [(header::CONTENT_TYPE, "application/json")],
                body,
            )
                .into_response());
        }
    }
    Ok(())
}

fn sse_event(e: &Event) -> String {
    let mut s = format!("id: {}\nevent: message\n", e.id);
    for line in e.data.lines() {
        s.push_str("data: ");
        s.push_str(line);
        s.push('\n');
    }
    s.push('\n');
    s
}

fn priming(token: &str, retry: Duration) -> String {
    format!("id: {token}-0\nretry: {}\ndata: \n\n", retry.as_millis())
}

fn sse_response(
    first: Vec<String>,
    rx: Option<mpsc::Receiver<Event>>,
    keep_alive: Duration,
    session: Option<&str>,
) -> Response {
    let state = (std::collections::VecDeque::from(first), rx, false);
    let stream = futures::stream::unfold(state, move |(mut queue, mut rx, done)| async move {
        if let Some(chunk) = queue.pop_front() {
            return Some((Ok::<_, Infallible>(Bytes::from(chunk)), (queue, rx, done)));
        }
        if done {
            return None;
        }
        let live = rx.as_mut()?;
        match tokio::time::timeout(keep_alive, live.recv()).await {
            Ok(Some(e)) => {
                let last = e.last;
                Some((Ok(Bytes::from(sse_event(&e))), (queue, rx, last)))
            }
            Ok(None) => None,
            Err(_) => Some((
                Ok(Bytes::from_static(b": keep-alive\n\n")),
                (queue, rx, false),
            )),
        }
    });
    let mut resp = Response::new(Body::from_stream(stream));
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Some(id) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        h.insert(SESSION_HEADER, id);
    }
    resp
}

fn json_response(body: String, session: Option<&str>) -> Response {
    let mut resp = (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response();
    if let Some(id) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        resp.headers_mut().insert(SESSION_HEADER, id);
    }
    resp
}

impl StreamableHttp {
    /// An endpoint for `server`.
    pub fn new(server: Server, config: HttpConfig) -> Self {
        let store = Arc::new(MemoryEventStore::new(config.event_log_limit));
        Self::with_event_store(server, config, store)
    }

    /// An endpoint keeping SSE events in `store` (for resumption) instead of in memory.
    pub fn with_event_store(
        server: Server,
        config: HttpConfig,
        store: Arc<dyn EventStore>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                server,
                store,
                sessions: Mutex::new(HashMap::new()),
                init_bucket: Mutex::new((f64::from(config_rate(&config)), Instant::now())),
                config: Arc::new(config),
            }),
        }
    }

    /// The settings.
    pub fn config(&self) -> &HttpConfig {
        &self.inner.config
    }

    /// Open sessions.
    pub fn session_count(&self) -> usize {
        self.inner.sessions().len()
    }

    /// SSE streams with a client attached, over all sessions.
    pub fn stream_count(&self) -> usize {
        let sessions: Vec<Arc<Session>> = self.inner.sessions().values().cloned().collect();
        sessions.iter().map(|s| s.attached_streams()).sum()
    }

    /// The axum router serving the endpoint at `config.path`. Must be called inside a tokio
    /// runtime (it starts the idle-session reaper).
    pub fn router(&self) -> axum::Router {
        let weak = Arc::downgrade(&self.inner);
        tokio::spawn(reap(weak, self.inner.config.session_idle_timeout));
        let weak = Arc::downgrade(&self.inner);
        let shutdown = self.inner.config.shutdown.clone();
        tokio::spawn(async move {
            shutdown.cancelled().await;
            // Standalone streams would never end by themselves; POST streams end with their
            // last response, so in-flight requests are still answered.
            if let Some(inner) = weak.upgrade() {
                let sessions: Vec<Arc<Session>> = inner.sessions().values().cloned().collect();
                for s in sessions {
                    s.end_standalone();
                }
            }
        });
        axum::Router::new()
            .route(
                &self.inner.config.path,
                post(handle_post).get(handle_get).delete(handle_delete),
            )
            .with_state(self.inner.clone())
    }

    /// Serves on `listener` until the future is dropped (TCP_NODELAY on every connection).
    ///
    /// # Errors
    /// I/O errors of the listener.
    pub async fn serve(&self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        crate::serve_router(listener, self.router()).await
    }
}

async fn reap(inner: Weak<Inner>, idle: Duration) {
    let period = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
    loop {
        tokio::time::sleep(period).await;
        let Some(inner) = inner.upgrade() else { return };
        let now = Instant::now();
        let expired: Vec<String> = inner
            .sessions()
            .iter()
            .filter(|(_, s)| {
                s.idle_since()
                    .is_some_and(|t| now.duration_since(t) >= idle)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            tracing::debug!(session = %id, "idle session expired");
            inner.remove(&id);
        }
    }
}

fn start_session(
    inner: &Arc<Inner>,
    version: ProtocolVersion,
    principal: Option<String>,
) -> Arc<Session> {
    let (in_tx, in_rx) = mpsc::channel(64);
    let (out_tx, mut out_rx) = mpsc::channel(1024);
    let session = Session::new(in_tx, version, inner.store.clone(), principal);
    let server = inner.server.clone();
    let engine = mcp_engine::EngineConfig {
        busy_after: Some(inner.config.max_requests_per_session.max(1)),
        ..server.config().engine.clone()
    };
    tokio::spawn(async move { server.serve_with(in_rx, out_tx, engine).await });
    let weak = Arc::downgrade(&session);
    tokio::spawn(async move {
        while let Some(out) = out_rx.recv().await {
            match weak.upgrade() {
                Some(s) => s.route(out).await,
                None => return,
            }
        }
    });
    inner.sessions().insert(session.id.clone(), session.clone());
    session
}

/// Undecodable input over HTTP: 400 with the JSON-RPC error (HTTP has no error storm to fear).
fn decode_error_response(e: DecodeError) -> Response {
    let body = Message::error(e.id, e.error).encode();
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

async fn handle_post(State(inner): State<Arc<Inner>>, headers: HeaderMap, body: Body) -> Response {
    if let Err(r) = accepting(&inner.config) {
        return r;
    }
    let mut body = match read_body(&inner.config, &headers, body).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    // A modern request's version header is checked where its id is known (in `stateless`).
    let modern = crate::stateless::is_modern(&headers, &body);
    let checked = if modern {
        host_checks(&inner.config, &headers)
    } else {
        common_checks(&inner.config, &headers)
    };
    if let Err(r) = checked {
        return r;
    }
    let ct = header_str(&headers, header::CONTENT_TYPE.as_str()).unwrap_or("");
    if !ct
        .split(';')
        .next()
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
    {
        return rpc_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            ErrorCode::INVALID_REQUEST,
            "Content-Type must be application/json",
        );
    }
    if !(accepts(&headers, "application/json") && accepts(&headers, "text/event-stream")) {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            None,
            ErrorCode::INVALID_REQUEST,
            "Accept must list application/json and text/event-stream",
        );
    }
    // Invalid entries of a batch are answered here (each with its own error, merged into the
    // batch's answer); the engine gets the valid rest.
    let mut entry_errors: Vec<Message> = Vec::new();
    // A batch over the limit is refused while it is parsed (-32600, 400).
    let max_batch = inner.server.config().engine.max_batch;
    let (messages, batch) = match Frame::decode_limited(&body, max_batch) {
        Frame::Single(Ok(m)) => (vec![m], false),
        Frame::Single(Err(e)) => return decode_error_response(e),
        Frame::Batch(items) => {
            let mut ok = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Ok(m) => ok.push(m),
                    Err(e) => entry_errors.push(Message::error(e.id, e.error)),
                }
            }
            if !entry_errors.is_empty() {
                body = Bytes::from(mcp_jsonrpc::encode_batch(&ok));
            }
            (ok, true)
        }
    };
    if modern {
        if batch {
            return bad_request("JSON-RPC batches are not part of protocol 2026-07-28");
        }
        if let Some(m) = messages.into_iter().next() {
            return crate::stateless::handle(&inner.server, &inner.config, &headers, m, body).await;
        }
        return bad_request("empty request");
    }
    let initialize = messages.iter().find_map(|m| match m {
        Message::Request(r) if r.method == "initialize" => Some(r),
        _ => None,
    });
    let (session, new_session) = match header_str(&headers, SESSION_HEADER) {
        Some(id) if !plausible_session_id(id) => {
            return bad_request("Bad Request: malformed Mcp-Session-Id");
        }
        Some(id) => match inner.sessions().get(id).cloned() {
            Some(s) => (s, false),
            None => {
                return rpc_error(
                    StatusCode::NOT_FOUND,
                    None,
                    ErrorCode::INVALID_REQUEST,
                    "Session not found",
                );
            }
        },
        None => {
            let Some(init) = initialize.filter(|_| !batch) else {
                return bad_request("Bad Request: Mcp-Session-Id header is required");
            };
            if inner.sessions().len() >= inner.config.max_sessions {
                return retry_later(
                    StatusCode::SERVICE_UNAVAILABLE,
                    Duration::from_secs(1),
                    "Too many sessions",
                );
            }
            let principal = (inner.config.principal)(&headers);
            if let Some(p) = &principal {
                let held = inner
                    .sessions()
                    .values()
                    .filter(|s| s.principal.as_deref() == Some(p.as_str()))
                    .count();
                if held >= inner.config.max_sessions_per_principal {
                    return rpc_error(
                        StatusCode::TOO_MANY_REQUESTS,
                        None,
                        ErrorCode::SERVER_BUSY,
                        "Too many sessions for this user; end one (DELETE) first",
                    );
                }
            }
            if let Err(wait) = inner.take_init_token() {
                return retry_later(
                    StatusCode::TOO_MANY_REQUESTS,
                    wait,
                    "Too many new sessions; slow down",
                );
            }
            let requested = mcp_jsonrpc::parse_params::<InitializeParams>(init.params.as_deref())
                .map(|p| ProtocolVersion::negotiate_legacy(&p.protocol_version))
                .unwrap_or(ProtocolVersion::LATEST_LEGACY);
            (start_session(&inner, requested, principal), true)
        }
    };
    session.touch();
    if batch && !session.version().has(Feature::Batching) {
        return bad_request(
            "JSON-RPC batches are not supported by the negotiated protocol version",
        );
    }
    let ids: Vec<RequestId> = messages
        .iter()
        .filter_map(|m| match m {
            Message::Request(r) => Some(r.id.clone()),
            _ => None,
        })
        .collect();
    if ids.is_empty() && !entry_errors.is_empty() {
        // Only notifications (or nothing) besides the invalid entries: the errors are the answer.
        if !messages.is_empty() && !session.feed(body.to_vec()).await {
            return rpc_error(
                StatusCode::NOT_FOUND,
                None,
                ErrorCode::INVALID_REQUEST,
                "Session not found",
            );
        }
        return json_response(mcp_jsonrpc::encode_batch(&entry_errors), None);
    }
    if ids.is_empty() {
        if !session.feed(body.to_vec()).await {
            return rpc_error(
                StatusCode::NOT_FOUND,
                None,
                ErrorCode::INVALID_REQUEST,
                "Session not found",
            );
        }
        return StatusCode::ACCEPTED.into_response();
    }
    if let Err(r) = stream_slot(&inner.config, &session) {
        return r;
    }
    // An id still in flight must not be reused: answering it here keeps the first request's
    // response on its own stream.
    if let Some(dup) = ids.iter().find(|id| session.in_flight(id)) {
        let e = ErrorObject::invalid_request(format!("request id {dup} is already in use"));
        return json_response(Message::error(Some(dup.clone()), e).encode(), None);
    }
    // A batch gets one answer (an array), related to its first request.
    let (routed, answers) = if batch {
        (vec![ids[0].clone()], 1)
    } else {
        (ids.clone(), ids.len())
    };
    let (token, mut rx) = session.open_post_stream(&routed, answers);
    if !session.feed(body.to_vec()).await {
        return rpc_error(
            StatusCode::NOT_FOUND,
            None,
            ErrorCode::INVALID_REQUEST,
            "Session not found",
        );
    }
    let session_header = new_session.then_some(session.id.as_str());
    let mode = inner.config.response_mode;
    let Some(first) = rx.recv().await else {
        // The stream was detached before anything was sent (polling mode).
        return sse_response(
            vec![priming(&token, inner.config.sse_retry)],
            None,
            inner.config.keep_alive,
            session_header,
        );
    };
    if new_session && first.last && first.data.contains(r#""error""#) {
        // A failed initialize leaves no session behind.
        inner.remove(&session.id);
        return json_response(first.data, None);
    }
    let json = match mode {
        ResponseMode::Json => true,
        ResponseMode::Sse => false,
        ResponseMode::Auto => first.last,
    } || !entry_errors.is_empty();
    if json {
        let mut last = first;
        while !last.last {
            match rx.recv().await {
                Some(e) => last = e,
                None => break,
            }
        }
        session.forget_stream(&token).await;
        if !entry_errors.is_empty() {
            return json_response(merge_batch(&last.data, &entry_errors), session_header);
        }
        return json_response(last.data, session_header);
    }
    let mut chunks = Vec::new();
    if session.version() >= ProtocolVersion::V2025_11_25 {
        chunks.push(priming(&token, inner.config.sse_retry));
    }
    let done = first.last;
    chunks.push(sse_event(&first));
    let rx = (!done).then_some(rx);
    sse_response(chunks, rx, inner.config.keep_alive, session_header)
}

/// The engine's batch answer (a JSON array) with `extra` answers appended.
fn merge_batch(answer: &str, extra: &[Message]) -> String {
    let mut all: Vec<Box<serde_json::value::RawValue>> =
        serde_json::from_str(answer).unwrap_or_default();
    for m in extra {
        if let Ok(raw) = serde_json::value::RawValue::from_string(m.encode()) {
            all.push(raw);
        }
    }
    serde_json::to_string(&all).unwrap_or_else(|_| answer.to_owned())
}

fn session_of(inner: &Inner, headers: &HeaderMap) -> Result<Arc<Session>, Response> {
    let Some(id) = header_str(headers, SESSION_HEADER) else {
        return Err(bad_request(
            "Bad Request: Mcp-Session-Id header is required",
        ));
    };
    if !plausible_session_id(id) {
        return Err(bad_request("Bad Request: malformed Mcp-Session-Id"));
    }
    inner.sessions().get(id).cloned().ok_or_else(|| {
        rpc_error(
            StatusCode::NOT_FOUND,
            None,
            ErrorCode::INVALID_REQUEST,
            "Session not found",
        )
    })
}

async fn handle_get(State(inner): State<Arc<Inner>>, headers: HeaderMap) -> Response {
    if let Err(r) = common_checks(&inner.config, &headers) {
        return r;
    }
    if !accepts(&headers, "text/event-stream") {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            None,
            ErrorCode::INVALID_REQUEST,
            "Accept must list text/event-stream",
        );
    }
    if crate::stateless::is_modern(&headers, &[]) {
        // 2026-07-28 has no GET stream (subscriptions/listen replaces it).
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    let session = match session_of(&inner, &headers) {
        Ok(s) => s,
        Err(r) => return r,
    };
    session.touch();
    if let Err(r) = accepting(&inner.config) {
        return r;
    }
    if let Err(r) = stream_slot(&inner.config, &session) {
        return r;
    }
    let keep_alive = inner.config.keep_alive;
    if let Some(last) = header_str(&headers, "last-event-id") {
        if last.len() > 256 || !last.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
            return bad_request("Bad Request: malformed Last-Event-ID");
        }
        let Some(resumed) = session.resume(last).await else {
            return rpc_error(
                StatusCode::NOT_FOUND,
                None,
                ErrorCode::INVALID_REQUEST,
                "Unknown Last-Event-ID for this session",
            );
        };
        let chunks: Vec<String> = resumed.replay.iter().map(sse_event).collect();
        return sse_response(chunks, resumed.live, keep_alive, None);
    }
    let Some((token, rx)) = session.open_standalone() else {
        return rpc_error(
            StatusCode::CONFLICT,
            None,
            ErrorCode::INVALID_REQUEST,
            "A GET stream is already open for this session",
        );
    };
    sse_response(
        vec![priming(&token, inner.config.sse_retry)],
        Some(rx),
        keep_alive,
        None,
    )
}

async fn handle_delete(State(inner): State<Arc<Inner>>, headers: HeaderMap) -> Response {
    if let Err(r) = common_checks(&inner.config, &headers) {
        return r;
    }
    let session = match session_of(&inner, &headers) {
        Ok(s) => s,
        Err(r) => return r,
    };
    inner.remove(&session.id);
    StatusCode::OK.into_response()
}
