//! The client side of Streamable HTTP, as a transport: the same channels as stdio, so
//! `mcp_client::Client::connect` speaks HTTP unchanged.
//!
//! Every outgoing message is POSTed (concurrently); JSON and SSE answers are both read. An SSE
//! answer that ends before the response arrived is resumed with GET + `Last-Event-ID` after
//! the server's `retry` delay (never less than [`HttpClientConfig::min_reconnect_delay`]).
//! After `notifications/initialized` a standalone GET stream is opened; its failure (405 and
//! the like) is not fatal. A 404 on a known session starts a new session by replaying the
//! handshake without the old id. Transport failures of a request become a JSON-RPC error
//! response to that request, so no caller hangs. Requests stay on the URL's origin: see
//! [`connect`] for redirects.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use mcp_jsonrpc::{ErrorCode, ErrorObject, Frame, Inbound, Message, Outbound, RequestId};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::sse::SseParser;

/// Errors creating the transport.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpClientError {
    /// The HTTP client could not be built.
    #[error("could not build the HTTP client: {0}")]
    Build(#[from] reqwest::Error),
    /// A header given in the configuration is invalid.
    #[error("invalid header {0:?}")]
    Header(String),
}

/// Settings of the client transport.
#[derive(Debug, Clone)]
pub struct HttpClientConfig {
    /// Extra headers on every request (e.g. `Authorization`).
    pub headers: Vec<(String, String)>,
    /// Largest SSE event or JSON body accepted.
    pub max_message: usize,
    /// Reconnection delay when the server gave no `retry`.
    pub default_retry: Duration,
    /// Shortest reconnection delay, whatever the server's `retry` (a `retry: 0` would
    /// otherwise reopen a stream that keeps ending in a tight loop). Default 100 ms.
    pub min_reconnect_delay: Duration,
    /// Reconnection attempts for one stream before giving up (reset whenever the stream
    /// delivers an event).
    pub max_reconnects: u32,
    /// Largest reconnection delay. Delays grow ×1.5 per attempt from the server's `retry`
    /// (or `default_retry`), with full jitter on top of the server's `retry`, which is
    /// always waited at least.
    pub max_reconnect_delay: Duration,
    /// Open the standalone GET stream after the handshake.
    pub standalone_stream: bool,
    /// Keep idle connections open for reuse (off: one connection per request).
    pub reuse_connections: bool,
}

impl Default for HttpClientConfig {
    fn default() -> Self {
        Self {
            headers: Vec::new(),
            max_message: 4 * 1024 * 1024,
            default_retry: Duration::from_secs(1),
            min_reconnect_delay: Duration::from_millis(100),
            max_reconnects: 5,
            max_reconnect_delay: Duration::from_secs(30),
            standalone_stream: true,
            reuse_connections: true,
        }
    }
}

struct State {
    http: reqwest::Client,
    url: String,
    config: HttpClientConfig,
    session: Mutex<Option<String>>,
    version: Mutex<Option<String>>,
    handshake: Mutex<(Option<String>, Option<String>)>,
    /// Set when the server speaks only the 2024-11-05 HTTP+SSE transport: where to POST.
    legacy_endpoint: Mutex<Option<String>>,
    /// `x-mcp-header` annotations learned from `tools/list`: tool -> (header, property).
    tool_headers: Mutex<std::collections::HashMap<String, Vec<(String, String)>>>,
    to_engine: mpsc::Sender<Inbound>,
    closed: CancellationToken,
    /// Closed (false) from `notifications/initialized` until the standalone GET stream has
    /// its answer: requests sent meanwhile wait, so that what the server sends on that stream
    /// about them (a server that sends its requests there) is not lost.
    standalone_gate: tokio::sync::watch::Sender<bool>,
}

/// Opens the standalone-stream gate when dropped.
struct GateOpener(tokio::sync::watch::Sender<bool>);

impl Drop for GateOpener {
    fn drop(&mut self) {
        self.0.send_replace(true);
    }
}

/// The longest a request waits for the standalone stream to open.
const STANDALONE_GATE: Duration = Duration::from_secs(5);

/// Handle to a running client transport.
#[derive(Clone)]
pub struct HttpClientHandle {
    state: Arc<State>,
}

impl std::fmt::Debug for HttpClientHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClientHandle")
            .field("url", &self.state.url)
            .finish_non_exhaustive()
    }
}

impl HttpClientHandle {
    /// The current session id.
    pub fn session_id(&self) -> Option<String> {
        lock(&self.state.session).clone()
    }

    /// Ends the session (DELETE) and stops every stream.
    pub async fn close(&self) {
        self.state.closed.cancel();
        let session = lock(&self.state.session).take();
        if let Some(id) = session {
            let req = self
                .state
                .request(reqwest::Method::DELETE)
                .header("mcp-session-id", id);
            let _ = req.send().await;
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The channels of an HTTP client connection plus its handle.
#[derive(Debug)]
pub struct HttpClientTransport {
    /// Messages from the server, one JSON text each.
    pub incoming: mpsc::Receiver<Inbound>,
    /// Messages to the server.
    pub outgoing: mpsc::Sender<Outbound>,
    /// Session control.
    pub handle: HttpClientHandle,
}

/// Starts a client transport for the MCP endpoint at `url`.
///
/// Requests go to `url`'s origin only: redirects are followed only when they are 307 or 308
/// and stay on the origin (at most 10 hops); any other redirect fails the request it answered
/// with a JSON-RPC error carrying the status (`data.httpStatus`) and `data.location`.
///
/// # Errors
/// [`HttpClientError`] if the HTTP client cannot be built.
pub fn connect(
    url: &str,
    config: HttpClientConfig,
) -> Result<HttpClientTransport, HttpClientError> {
    let mut builder = reqwest::Client::builder()
        .tcp_nodelay(true)
        .redirect(crate::origin::redirect_policy());
    if !config.reuse_connections {
        builder = builder.pool_max_idle_per_host(0);
    }
    let http = builder.build()?;
    for (k, v) in &config.headers {
        if reqwest::header::HeaderName::from_bytes(k.as_bytes()).is_err()
            || reqwest::header::HeaderValue::from_str(v).is_err()
        {
            return Err(HttpClientError::Header(k.clone()));
        }
    }
    let (to_engine, incoming) = mpsc::channel(1024);
    let (outgoing, mut from_engine) = mpsc::channel::<Outbound>(1024);
    let state = Arc::new(State {
        http,
        url: url.to_owned(),
        config,
        session: Mutex::new(None),
        version: Mutex::new(None),
        handshake: Mutex::new((None, None)),
        legacy_endpoint: Mutex::new(None),
        tool_headers: Mutex::new(std::collections::HashMap::new()),
        to_engine,
        closed: CancellationToken::new(),
        standalone_gate: tokio::sync::watch::channel(true).0,
    });
    let st = state.clone();
    tokio::spawn(async move {
        // Until `initialized` has gone out, each line is checked for it (only once: a
        // re-initialization after an expired session replays the handshake itself).
        let mut handshake = st.config.standalone_stream;
        loop {
            let out = tokio::select! {
                () = st.closed.cancelled() => return,
                out = from_engine.recv() => match out { Some(o) => o, None => return },
            };
            let Outbound::Message(out) = out else {
                continue; // stream signals are for servers
            };
            // Messages sent after `initialized` wait for the standalone stream (in order: the
            // gate closes before anything after `initialized` is dispatched).
            let gate = (!*st.standalone_gate.borrow()).then(|| st.standalone_gate.subscribe());
            let initialized = out.method() == Some("notifications/initialized");
            let opener = (handshake && initialized).then(|| {
                handshake = false;
                st.standalone_gate.send_replace(false);
                GateOpener(st.standalone_gate.clone())
            });
            let st = st.clone();
            tokio::spawn(async move {
                if let Some(mut gate) = gate {
                    let open = gate.wait_for(|open| *open);
                    let _ = tokio::time::timeout(STANDALONE_GATE, open).await;
                }
                st.post(out.line, opener).await
            });
        }
    });
    Ok(HttpClientTransport {
        incoming,
        outgoing,
        handle: HttpClientHandle { state },
    })
}

/// Why the HTTP+SSE fallback was not taken.
enum Fallback {
    /// The server does not speak HTTP+SSE either; the probe's own failure stands.
    NotLegacy(String),
    /// It answered in a way the client refuses: this error answers the `initialize`.
    Refused(ErrorObject),
}

/// What a POSTed body holds.
struct Posted {
    request: Option<RequestId>,
    initialize: bool,
    initialized: bool,
    /// 2026-07-28 request: the standard headers to send (version, method, name).
    modern: Option<(String, String, Option<String>)>,
}

/// A parameter value: like [`header_value`], but an empty string stays empty.
fn header_value_allow_empty(v: &str) -> String {
    if v.is_empty() {
        String::new()
    } else {
        header_value(v)
    }
}

/// `Mcp-Name` value: plain when header-safe, else the `=?base64?…?=` sentinel form.
fn header_value(v: &str) -> String {
    use base64::Engine;
    let sentinel_like = v.starts_with("=?base64?") && v.ends_with("?=");
    let plain = v.bytes().all(|b| (0x20..=0x7e).contains(&b));
    let padded = v.starts_with(' ') || v.ends_with(' ');
    let safe = !v.is_empty() && plain && !padded && !sentinel_like;
    if safe {
        v.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(v)
        )
    }
}

fn modern_headers(
    method: &str,
    params: Option<&mcp_jsonrpc::RawValue>,
) -> Option<(String, String, Option<String>)> {
    let raw = params?.get();
    if !raw.contains(mcp_types::meta_keys::PROTOCOL_VERSION) {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(raw).ok()?;
    let version = v["_meta"][mcp_types::meta_keys::PROTOCOL_VERSION]
        .as_str()?
        .to_owned();
    let name = match method {
        "tools/call" | "prompts/get" => v["name"].as_str().map(header_value),
        "resources/read" => v["uri"].as_str().map(header_value),
        _ => None,
    };
    Some((version, method.to_owned(), name))
}

fn inspect(line: &str) -> Posted {
    match Frame::decode(line.as_bytes()) {
        Frame::Single(Ok(Message::Request(r))) => Posted {
            initialize: r.method == "initialize",
            modern: modern_headers(&r.method, r.params.as_deref()),
            request: Some(r.id),
            initialized: false,
        },
        Frame::Single(Ok(Message::Notification(n))) => Posted {
            request: None,
            initialize: false,
            initialized: n.method == "notifications/initialized",
            modern: modern_headers(&n.method, n.params.as_deref()),
        },
        _ => Posted {
            request: None,
            initialize: false,
            initialized: false,
            modern: None,
        },
    }
}

fn response_id(data: &str) -> Option<RequestId> {
    match Message::decode(data.as_bytes()) {
        Ok(Message::Response(r)) => r.id,
        _ => None,
    }
}

impl State {
    fn request(&self, method: reqwest::Method) -> reqwest::RequestBuilder {
        let mut req = self.http.request(method, &self.url);
        for (k, v) in &self.config.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        if let Some(v) = lock(&self.version).clone() {
            req = req.header("mcp-protocol-version", v);
        }
        req
    }

    fn post_request(&self, line: &str, session: Option<&str>) -> reqwest::RequestBuilder {
        let mut req = self
            .request(reqwest::Method::POST)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(line.to_owned());
        if let Some(s) = session {
            req = req.header("mcp-session-id", s);
        }
        req
    }

    async fn deliver(&self, data: String) {
        if !data.trim().is_empty() {
            let _ = self.to_engine.send(Inbound::Frame(data.into_bytes())).await;
        }
    }

    /// Answers `id` with an error, so its caller does not wait forever.
    async fn fail(&self, id: Option<RequestId>, error: ErrorObject) {
        if let Some(id) = id {
            self.deliver(Message::error(Some(id), error).encode()).await;
        }
    }

    /// POSTs one message. `opener` (for `notifications/initialized`) opens the standalone
    /// gate once the GET stream has its answer, or when this POST fails.
    async fn post(self: &Arc<Self>, line: String, opener: Option<GateOpener>) {
        let posted = inspect(&line);
        let legacy = lock(&self.legacy_endpoint).clone();
        if let Some(endpoint) = legacy {
            return self.legacy_post(&endpoint, &line, posted.request).await;
        }
        if posted.initialize {
            lock(&self.handshake).0 = Some(line.clone());
        } else if posted.initialized {
            lock(&self.handshake).1 = Some(line.clone());
        }
        if let Some((version, method, name)) = &posted.modern {
            return self
                .post_modern(&line, posted.request, version, method, name.as_deref())
                .await;
        }
        let mut retried = false;
        loop {
            let session = lock(&self.session).clone();
            let resp = match self.post_request(&line, session.as_deref()).send().await {
                Ok(r) => r,
                Err(e) => {
                    let err = transport_error(&e);
                    return self.fail(posted.request, err).await;
                }
            };
            let status = resp.status();
            let legacy_unknown = lock(&self.legacy_endpoint).is_none();
            if posted.initialize && matches!(status.as_u16(), 400 | 404 | 405) && legacy_unknown {
                // The backward-compatibility probe: maybe an HTTP+SSE (2024-11-05) server.
                match self.fall_back_to_legacy().await {
                    Ok(endpoint) => {
                        return self.legacy_post(&endpoint, &line, posted.request).await;
                    }
                    Err(Fallback::Refused(error)) => return self.fail(posted.request, error).await,
                    Err(Fallback::NotLegacy(why)) => {
                        tracing::debug!("not a legacy HTTP+SSE server either: {why}");
                    }
                }
            }
            if status == reqwest::StatusCode::NOT_FOUND
                && session.is_some()
                && !posted.initialize
                && !retried
            {
                // The session is gone: start a new one and try once more.
                retried = true;
                if self.reinitialize().await {
                    continue;
                }
            }
            if let Some(id) = resp
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
            {
                *lock(&self.session) = Some(id.to_owned());
            }
            if !status.is_success() {
                let failure = Failure::of(&resp);
                let body = resp.text().await.unwrap_or_default();
                let error = match Message::decode(body.as_bytes()) {
                    Ok(Message::Response(mcp_jsonrpc::Response {
                        outcome: Err(e), ..
                    })) => e,
                    _ => failure.error(&body),
                };
                if posted.request.is_none() {
                    tracing::warn!(%status, "the server refused a notification or response: {}", mcp_jsonrpc::printable(&error.message));
                }
                return self.fail(posted.request, error).await;
            }
            let is_sse = resp
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("text/event-stream"));
            if is_sse {
                self.consume_sse(resp, posted.request.clone(), posted.initialize)
                    .await;
            } else {
                let body = match read_limited(resp, self.config.max_message).await {
                    Ok(b) => b,
                    Err(e) => {
                        let err = ErrorObject::new(ErrorCode::INTERNAL_ERROR, e);
                        return self.fail(posted.request, err).await;
                    }
                };
                if posted.initialize {
                    self.note_version(&body);
                }
                if posted.request.is_some() {
                    self.deliver(body).await;
                }
            }
            if posted.initialized && self.config.standalone_stream {
                let st = self.clone();
                tokio::spawn(async move { st.standalone(opener).await });
            }
            return;
        }
    }

    /// GETs the URL as an HTTP+SSE stream, waits for its `endpoint` event and keeps reading
    /// the stream's messages in the background. Refuses (with an error for the `initialize`)
    /// a redirected stream and an endpoint on another origin.
    async fn fall_back_to_legacy(self: &Arc<Self>) -> Result<String, Fallback> {
        let resp = self
            .request(reqwest::Method::GET)
            .header("accept", "text/event-stream")
            .send()
            .await
            .map_err(|e| Fallback::NotLegacy(e.to_string()))?;
        if resp.status().is_redirection() {
            return Err(Fallback::Refused(Failure::of(&resp).error("")));
        }
        let is_sse = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !resp.status().is_success() || !is_sse {
            return Err(Fallback::NotLegacy(format!(
                "GET answered {}",
                resp.status()
            )));
        }
        let mut parser = SseParser::new(self.config.max_message);
        let mut body = resp.bytes_stream();
        let mut pending = Vec::new();
        let endpoint = loop {
            let chunk = tokio::time::timeout(Duration::from_secs(10), body.next())
                .await
                .map_err(|_| Fallback::NotLegacy("no endpoint event within 10 s".to_owned()))?;
            let Some(Ok(chunk)) = chunk else {
                let why = "the stream ended before the endpoint event";
                return Err(Fallback::NotLegacy(why.to_owned()));
            };
            let mut found = None;
            for ev in parser.push(&chunk) {
                if ev.event == "endpoint" && found.is_none() {
                    found = Some(ev.data);
                } else if found.is_some() && !ev.data.is_empty() {
                    pending.push(ev.data);
                }
            }
            if let Some(e) = found {
                let endpoint = crate::origin::resolve_endpoint(&self.url, &e).map_err(|why| {
                    let data = serde_json::json!({ "endpoint": e });
                    let error = ErrorObject::new(ErrorCode::INTERNAL_ERROR, why.to_string());
                    Fallback::Refused(error.with_data(data))
                })?;
                break endpoint.to_string();
            }
        };
        *lock(&self.legacy_endpoint) = Some(endpoint.clone());
        let st = self.clone();
        tokio::spawn(async move {
            for data in pending {
                st.deliver(data).await;
            }
            loop {
                let chunk = tokio::select! {
                    () = st.closed.cancelled() => return,
                    c = body.next() => c,
                };
                let Some(Ok(chunk)) = chunk else {
                    tracing::warn!("the HTTP+SSE stream ended; the session is over");
                    return;
                };
                for ev in parser.push(&chunk) {
                    if ev.event.is_empty() || ev.event == "message" {
                        st.deliver(ev.data).await;
                    }
                }
            }
        });
        tracing::info!("the server speaks the 2024-11-05 HTTP+SSE transport; using it");
        Ok(endpoint)
    }

    async fn legacy_post(&self, endpoint: &str, line: &str, request: Option<RequestId>) {
        let mut req = self
            .http
            .post(endpoint)
            .header("content-type", "application/json")
            .body(line.to_owned());
        for (k, v) in &self.config.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        match req.send().await {
            Ok(r) if r.status().is_success() => {}
            Ok(r) => {
                let failure = Failure::of(&r);
                let body = r.text().await.unwrap_or_default();
                self.fail(request, failure.error(&body)).await;
            }
            Err(e) => {
                let e = transport_error(&e);
                self.fail(request, e).await;
            }
        }
    }

    fn note_version(&self, body: &str) {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(body) {
            if let Some(pv) = v["result"]["protocolVersion"].as_str() {
                *lock(&self.version) = Some(pv.to_owned());
            }
        }
    }

    /// A 2026-07-28 request: stateless, with the standard headers; JSON or SSE answer.
    async fn post_modern(
        self: &Arc<Self>,
        line: &str,
        request: Option<RequestId>,
        version: &str,
        method: &str,
        name: Option<&str>,
    ) {
        let mut req = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", version)
            .header("mcp-method", method)
            .body(line.to_owned());
        if let Some(n) = name {
            req = req.header("mcp-name", n);
        }
        for (k, v) in self.param_headers(method, line) {
            req = req.header(k, v);
        }
        for (k, v) in &self.config.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) => {
                let err = transport_error(&e);
                return self.fail(request, err).await;
            }
        };
        let failure = Failure::of(&resp);
        let is_sse = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if is_sse {
            return self.consume_sse(resp, request, false).await;
        }
        let body = read_limited(resp, self.config.max_message)
            .await
            .unwrap_or_default();
        // Modern servers answer errors with a JSON-RPC body whatever the status (400, 404);
        // anything else (an empty 400 from a legacy server, say) becomes an error here.
        if method == "tools/list" {
            self.learn_tools(&body);
        }
        match Message::decode(body.as_bytes()) {
            // An error the server could not tie to an id (`"id": null`) answers this POST's
            // request: over HTTP we know which one it carried.
            Ok(Message::Response(mcp_jsonrpc::Response {
                id: None,
                outcome: Err(e),
            })) if request.is_some() => self.fail(request, e).await,
            Ok(Message::Response(_)) => self.deliver(body).await,
            _ if failure.status.is_success() && request.is_none() => {}
            _ => self.fail(request, failure.error(&body)).await,
        }
    }

    /// Remembers which tool arguments are mirrored into `Mcp-Param-*` headers.
    fn learn_tools(&self, body: &str) {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(body) else {
            return;
        };
        let Some(tools) = v["result"]["tools"].as_array() else {
            return;
        };
        let mut map = lock(&self.tool_headers);
        for t in tools {
            let Some(name) = t["name"].as_str() else {
                continue;
            };
            let headers: Vec<(String, String)> = t["inputSchema"]["properties"]
                .as_object()
                .map(|props| {
                    props
                        .iter()
                        .filter_map(|(p, s)| {
                            s["x-mcp-header"]
                                .as_str()
                                .map(|h| (h.to_owned(), p.clone()))
                        })
                        .collect()
                })
                .unwrap_or_default();
            map.insert(name.to_owned(), headers);
        }
    }

    /// `Mcp-Param-{Name}` headers of a `tools/call` (values encoded as the spec says; null
    /// arguments are omitted).
    fn param_headers(&self, method: &str, line: &str) -> Vec<(String, String)> {
        if method != "tools/call" {
            return Vec::new();
        }
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            return Vec::new();
        };
        let Some(tool) = v["params"]["name"].as_str() else {
            return Vec::new();
        };
        let Some(headers) = lock(&self.tool_headers).get(tool).cloned() else {
            return Vec::new();
        };
        headers
            .into_iter()
            .filter_map(|(h, prop)| {
                let value = match &v["params"]["arguments"][&prop] {
                    serde_json::Value::Null => return None,
                    serde_json::Value::String(s) => header_value_allow_empty(s),
                    serde_json::Value::Bool(b) => b.to_string(),
                    serde_json::Value::Number(n) => n.to_string(),
                    _ => return None,
                };
                Some((format!("Mcp-Param-{h}"), value))
            })
            .collect()
    }

    /// Replays the handshake without the old session id; the answers are not delivered (the
    /// engine has had them already).
    async fn reinitialize(self: &Arc<Self>) -> bool {
        let (init, initialized) = lock(&self.handshake).clone();
        let Some(init) = init else { return false };
        *lock(&self.session) = None;
        let Ok(resp) = self.post_request(&init, None).send().await else {
            return false;
        };
        let Some(id) = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
        else {
            return false;
        };
        drop(resp);
        *lock(&self.session) = Some(id.clone());
        if let Some(n) = initialized {
            let _ = self.post_request(&n, Some(&id)).send().await;
        }
        tracing::info!("session expired; started a new one");
        true
    }

    /// Reads an SSE answer; resumes it with GET + Last-Event-ID if it ends before `waiting`'s
    /// response.
    async fn consume_sse(
        self: &Arc<Self>,
        resp: reqwest::Response,
        waiting: Option<RequestId>,
        initialize: bool,
    ) {
        let mut resp = Some(resp);
        let mut last_id: Option<String> = None;
        let mut retry = self.config.default_retry;
        let mut attempts = 0u32;
        let mut done = waiting.is_none();
        loop {
            if let Some(r) = resp.take() {
                let mut parser = SseParser::new(self.config.max_message);
                let mut body = r.bytes_stream();
                loop {
                    let chunk = tokio::select! {
                        () = self.closed.cancelled() => return,
                        c = body.next() => c,
                    };
                    let Some(Ok(chunk)) = chunk else { break };
                    for ev in parser.push(&chunk) {
                        attempts = 0; // progress: the next failure starts the backoff over
                        if let Some(id) = ev.id {
                            last_id = Some(id);
                        }
                        if let Some(ms) = ev.retry {
                            retry = Duration::from_millis(ms);
                        }
                        if ev.data.is_empty() {
                            continue;
                        }
                        if waiting.is_some() && response_id(&ev.data) == waiting {
                            done = true;
                            if initialize {
                                self.note_version(&ev.data);
                            }
                        }
                        self.deliver(ev.data).await;
                    }
                    if done {
                        return;
                    }
                }
            }
            if done {
                return;
            }
            attempts += 1;
            let Some(last) = last_id.clone() else {
                let e = ErrorObject::new(
                    ErrorCode::INTERNAL_ERROR,
                    "the SSE stream ended before the response and cannot be resumed (no event id)",
                )
                .with_data(serde_json::json!({ "transport": true }));
                return self.fail(waiting, e).await;
            };
            if attempts > self.config.max_reconnects {
                let e = ErrorObject::new(
                    ErrorCode::INTERNAL_ERROR,
                    format!(
                        "the SSE stream broke and could not be resumed after {} attempts",
                        self.config.max_reconnects
                    ),
                )
                .with_data(serde_json::json!({ "transport": true }));
                return self.fail(waiting, e).await;
            }
            let delay = self.reconnect_delay(retry, attempts);
            tracing::debug!(attempt = attempts, ?delay, "resuming an SSE answer");
            tokio::select! {
                () = self.closed.cancelled() => return,
                () = tokio::time::sleep(delay) => {}
            }
            match self.get(Some(&last)).await {
                Some(r) => resp = Some(r),
                None => continue,
            }
        }
    }

    async fn get(&self, last_event_id: Option<&str>) -> Option<reqwest::Response> {
        let session = lock(&self.session).clone();
        let mut req = self
            .request(reqwest::Method::GET)
            .header("accept", "text/event-stream");
        if let Some(s) = session {
            req = req.header("mcp-session-id", s);
        }
        if let Some(id) = last_event_id {
            req = req.header("last-event-id", id);
        }
        match req.send().await {
            Ok(r) if r.status().is_success() => Some(r),
            Ok(r) => {
                tracing::debug!(status = %r.status(), "GET stream refused");
                None
            }
            Err(e) => {
                tracing::debug!("GET stream failed: {e}");
                None
            }
        }
    }

    /// [`reconnect_delay`] with this client's floor and cap.
    fn reconnect_delay(&self, retry: Duration, attempt: u32) -> Duration {
        let retry = retry.max(self.config.min_reconnect_delay);
        reconnect_delay(retry, attempt, self.config.max_reconnect_delay)
    }

    /// The standalone GET stream: server notifications and requests not tied to a POST.
    async fn standalone(self: &Arc<Self>, opener: Option<GateOpener>) {
        let first = self.get(None).await;
        drop(opener);
        let Some(first) = first else {
            return; // 405 or any failure: not fatal, the server just has no GET stream
        };
        let mut resp = Some(first);
        let mut last_id: Option<String> = None;
        let mut retry = self.config.default_retry;
        let mut failures = 0u32;
        while !self.closed.is_cancelled() {
            if let Some(r) = resp.take() {
                failures = 0;
                let mut parser = SseParser::new(self.config.max_message);
                let mut body = r.bytes_stream();
                loop {
                    let chunk = tokio::select! {
                        () = self.closed.cancelled() => return,
                        c = body.next() => c,
                    };
                    let Some(Ok(chunk)) = chunk else { break };
                    for ev in parser.push(&chunk) {
                        failures = 0;
                        if let Some(id) = ev.id {
                            last_id = Some(id);
                        }
                        if let Some(ms) = ev.retry {
                            retry = Duration::from_millis(ms);
                        }
                        self.deliver(ev.data).await;
                    }
                }
            }
            failures += 1;
            if failures > self.config.max_reconnects {
                tracing::warn!(
                    "the standalone SSE stream could not be reopened after {} attempts",
                    self.config.max_reconnects
                );
                return;
            }
            let delay = self.reconnect_delay(retry, failures);
            tokio::select! {
                () = self.closed.cancelled() => return,
                () = tokio::time::sleep(delay) => {}
            }
            resp = self.get(last_id.as_deref()).await;
        }
    }
}

/// Delay before reconnection attempt `attempt` (1-based): the server's `retry` at least, plus
/// full jitter over the ×1.5 growth beyond it, capped at `cap`.
fn reconnect_delay(retry: Duration, attempt: u32, cap: Duration) -> Duration {
    let grown = retry.mul_f64(1.5f64.powi(i32::try_from(attempt.saturating_sub(1)).unwrap_or(30)));
    let ceiling = grown.min(cap.max(retry));
    let extra = ceiling.saturating_sub(retry);
    let mut b = [0u8; 8];
    let unit = if getrandom::fill(&mut b).is_ok() {
        (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64
    } else {
        0.5
    };
    retry + extra.mul_f64(unit)
}

async fn read_limited(resp: reqwest::Response, max: usize) -> Result<String, String> {
    let mut body = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| format!("reading the response failed: {e}"))?;
        if body.len() + chunk.len() > max {
            return Err(format!("response larger than {max} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    String::from_utf8(body).map_err(|_| "response is not UTF-8".to_owned())
}

/// A request that never got an HTTP answer: marked `transport` so retry policies may retry it.
fn transport_error(e: &impl std::fmt::Display) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::INTERNAL_ERROR,
        format!("HTTP request failed: {e}"),
    )
    .with_data(serde_json::json!({ "transport": true }))
}

/// What an HTTP answer's status and headers say about a failure, taken before its body is
/// read.
struct Failure {
    status: reqwest::StatusCode,
    retry_after_ms: Option<u64>,
    /// A redirect that was not followed: the message and the `Location`.
    redirect: Option<(String, Option<String>)>,
}

impl Failure {
    fn of(resp: &reqwest::Response) -> Self {
        let (status, headers) = (resp.status(), resp.headers());
        Self {
            status,
            retry_after_ms: retry_after_ms(headers),
            redirect: crate::origin::redirect_message(status, headers).map(|m| {
                let location = headers
                    .get(reqwest::header::LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                (m, location)
            }),
        }
    }

    /// An HTTP failure without a JSON-RPC body: the status (and `Retry-After`, or the
    /// `Location` of a redirect not followed) travel in `data`, so retry policies can tell a
    /// 503 from a 400.
    fn error(&self, body: &str) -> ErrorObject {
        let body: String = body.chars().take(2000).collect();
        let mut data = serde_json::json!({
            "httpStatus": self.status.as_u16(),
            "retryAfterMs": self.retry_after_ms,
            "body": body,
        });
        let message = match &self.redirect {
            Some((message, location)) => {
                data["location"] = serde_json::json!(location);
                message.clone()
            }
            None => format!("HTTP {}", self.status),
        };
        ErrorObject::new(ErrorCode::INTERNAL_ERROR, message).with_data(data)
    }
}

/// `Retry-After` in milliseconds (the delay-seconds form).
fn retry_after_ms(headers: &reqwest::header::HeaderMap) -> Option<u64> {
    let secs: u64 = headers
        .get("retry-after")?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(secs.saturating_mul(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconnect_delays_honour_retry_grow_and_cap() {
        let retry = Duration::from_millis(100);
        let cap = Duration::from_millis(400);
        for attempt in 1..=10 {
            let d = reconnect_delay(retry, attempt, cap);
            assert!(d >= retry, "the server's retry is always waited");
            assert!(d <= cap, "capped: {d:?}");
        }
        assert_eq!(
            reconnect_delay(retry, 1, cap),
            retry,
            "the first retry is exact"
        );
        // Growth: the 5th attempt may wait up to 100 * 1.5^4 ≈ 506 ms (capped at 400).
        let late: Vec<Duration> = (0..50).map(|_| reconnect_delay(retry, 5, cap)).collect();
        assert!(late.iter().any(|d| *d > Duration::from_millis(200)));
        assert!(late.windows(2).any(|w| w[0] != w[1]), "jittered");
        // A server retry above the cap is still honoured.
        assert_eq!(
            reconnect_delay(Duration::from_secs(2), 3, cap),
            Duration::from_secs(2)
        );
    }
}
