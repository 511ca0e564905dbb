//! The client side of Streamable HTTP, as a transport: the same channels as stdio, so
//! `oxmcp_client::Client::connect` speaks HTTP unchanged.
//!
//! Every outgoing message is POSTed (concurrently); JSON and SSE answers are both read. An SSE
//! answer that ends before the response arrived is resumed with GET + `Last-Event-ID` after
//! the server's `retry` delay (never less than [`HttpClientConfig::min_reconnect_delay`]).
//! After `notifications/initialized` a standalone GET stream is opened; its failure (405 and
//! the like) is not fatal. A 404 on a known session starts a new session by replaying the
//! handshake without the old id. A request the transport cannot deliver fails with a
//! [`oxmcp_jsonrpc::TransportError`] (the HTTP status, or why there was no answer), so no
//! caller hangs. Requests stay on the URL's origin: see [`connect`] for redirects.
//!
//! The rooms: `post` (Streamable HTTP POSTs and the handshake), `modern` (2026-07-28
//! requests and their headers), `legacy` (the 2024-11-05 HTTP+SSE fallback), `stream`
//! (the one SSE reader: POST answers, resumption, the standalone stream) and `failure`
//! (what a failed exchange becomes).

mod auth;
mod cancel;
mod codec;
mod failure;
mod legacy;
mod modern;
mod post;
mod stream;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

pub use auth::{Authorizer, Challenge};
use oxmcp_jsonrpc::{
    ErrorObject, Inbound, Message, OutMessage, Outbound, RequestId, TransportError,
};
use oxmcp_types::methods::{Initialized, Notification as _, Request as _};
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

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
#[derive(Debug, Clone, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "", generate_private = false)]
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
    /// Supplies the `Authorization` header and answers 401/403 challenges (OAuth). An
    /// `Authorization` in `headers` is then not sent.
    pub authorizer: Option<std::sync::Arc<dyn Authorizer>>,
    /// How POST bodies are encoded. With [`BodyEncoding::Protobuf`] they go as
    /// `application/mcp+protobuf` and answers may come back in it; a server that answers
    /// 415 gets JSON from then on.
    pub encoding: BodyEncoding,
}

/// The encoding of POST bodies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BodyEncoding {
    /// JSON text (`application/json`), what every server takes.
    #[default]
    Json,
    /// The protobuf form (`application/mcp+protobuf`), where the server takes it.
    Protobuf,
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
            authorizer: None,
            encoding: BodyEncoding::Json,
        }
    }
}

/// What one connection knows: its session, its negotiated version, the handshake to replay,
/// and where answers go.
struct State {
    http: reqwest::Client,
    url: String,
    config: HttpClientConfig,
    session: Mutex<Option<String>>,
    version: Mutex<Option<String>>,
    /// The `initialize` and `initialized` lines, replayed when the session expires.
    handshake: Mutex<(Option<String>, Option<String>)>,
    /// Set when the server speaks only the 2024-11-05 HTTP+SSE transport: where to POST.
    legacy_endpoint: Mutex<Option<String>>,
    /// `x-mcp-header` annotations learned from `tools/list`: tool -> (header, property).
    tool_headers: Mutex<HashMap<String, Vec<(String, String)>>>,
    to_engine: mpsc::Sender<Inbound>,
    closed: CancellationToken,
    /// Closed (false) from `notifications/initialized` until the standalone GET stream has
    /// its answer: requests sent meanwhile wait, so that what the server sends on that stream
    /// about them (a server that sends its requests there) is not lost.
    standalone_gate: tokio::sync::watch::Sender<bool>,
    /// The server refused a protobuf body (415): JSON from now on.
    json_only: std::sync::atomic::AtomicBool,
    /// The 2026-07-28 requests whose POSTs are under way: cancelling the token closes the
    /// POST, which cancels the request (see `cancel`).
    modern_calls: Mutex<HashMap<RequestId, CancellationToken>>,
}

impl State {
    /// Whether bodies go in the protobuf encoding now.
    fn protobuf(&self) -> bool {
        self.config.encoding == BodyEncoding::Protobuf
            && !self.json_only.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A POST's body and its headers: `line` as JSON, or in the protobuf encoding.
    fn body_of(&self, req: reqwest::RequestBuilder, line: &str) -> reqwest::RequestBuilder {
        if self.protobuf() {
            // Read from the text in one pass (no `serde_json::Value` in between).
            if let Ok(bytes) = oxmcp_proto::encode_json_text(line) {
                return req
                    .header("content-type", oxmcp_proto::MEDIA_TYPE)
                    .header(
                        "accept",
                        "application/mcp+protobuf, application/json, text/event-stream",
                    )
                    .body(bytes);
            }
        }
        req.header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(line.to_owned())
    }

    /// A 415 to a protobuf body: the server takes JSON only, so everything goes as JSON
    /// from now on. True if the request should be sent again.
    fn refused_protobuf(&self, status: reqwest::StatusCode) -> bool {
        if status == reqwest::StatusCode::UNSUPPORTED_MEDIA_TYPE && self.protobuf() {
            tracing::info!("the server does not take application/mcp+protobuf; sending JSON");
            self.json_only
                .store(true, std::sync::atomic::Ordering::Relaxed);
            return true;
        }
        false
    }
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
        self.state.session.lock().clone()
    }

    /// Ends the session (DELETE) and stops every stream.
    pub async fn close(&self) {
        self.state.closed.cancel();
        let session = self.state.session.lock().take();
        if let Some(id) = session {
            let req = self
                .state
                .request(reqwest::Method::DELETE)
                .header("mcp-session-id", id);
            let _ = req.send().await;
        }
    }
}

impl oxmcp_transport::Link for HttpClientHandle {
    /// Ends the session with DELETE and stops every stream.
    fn close(
        self: Box<Self>,
    ) -> futures::future::BoxFuture<'static, Option<oxmcp_transport::Exit>> {
        Box::pin(async move {
            HttpClientHandle::close(&self).await;
            None
        })
    }
}

/// The channels of an HTTP client connection plus its handle.
#[derive(Debug)]
pub struct HttpClientTransport {
    /// Messages from the server, one JSON text each, and requests that failed.
    pub incoming: mpsc::Receiver<Inbound>,
    /// Messages to the server.
    pub outgoing: mpsc::Sender<Outbound>,
    /// Session control.
    pub handle: HttpClientHandle,
}

impl HttpClientTransport {
    /// The channels, and the handle that ends the session (a [`oxmcp_transport::Link`], for
    /// `oxmcp_client::Client::connect_over`, which then closes it with the client).
    pub fn into_parts(self) -> (oxmcp_transport::Channels, HttpClientHandle) {
        let channels = oxmcp_transport::Channels {
            incoming: self.incoming,
            outgoing: self.outgoing,
        };
        (channels, self.handle)
    }
}

/// Starts a client transport for the MCP endpoint at `url`.
///
/// Requests go to `url`'s origin only: redirects are followed only when they are 307 or 308
/// and stay on the origin (at most 10 hops); any other redirect fails the request it answered
/// with [`TransportError::Http`] carrying the status and the `Location`.
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
    let (outgoing, from_engine) = mpsc::channel::<Outbound>(1024);
    let state = Arc::new(State {
        http,
        url: url.to_owned(),
        config,
        session: Mutex::new(None),
        version: Mutex::new(None),
        json_only: std::sync::atomic::AtomicBool::new(false),
        handshake: Mutex::new((None, None)),
        legacy_endpoint: Mutex::new(None),
        tool_headers: Mutex::new(HashMap::new()),
        to_engine,
        closed: CancellationToken::new(),
        standalone_gate: tokio::sync::watch::channel(true).0,
        modern_calls: Mutex::new(HashMap::new()),
    });
    tokio::spawn(dispatch(state.clone(), from_engine));
    Ok(HttpClientTransport {
        incoming,
        outgoing,
        handle: HttpClientHandle { state },
    })
}

/// POSTs every outgoing message, each on its own task. Messages sent after `initialized`
/// wait for the standalone stream (in order: the gate closes before anything after
/// `initialized` is dispatched). The cancellation of a 2026-07-28 request closes that
/// request's POST instead of being sent.
async fn dispatch(st: Arc<State>, mut from_engine: mpsc::Receiver<Outbound>) {
    // Only the first `initialized` opens the standalone stream (a re-initialization after
    // an expired session replays the handshake itself).
    let mut handshake = st.config.standalone_stream;
    loop {
        let out = tokio::select! {
            () = st.closed.cancelled() => return,
            out = from_engine.recv() => match out { Some(o) => o, None => return },
        };
        let Outbound::Message(out) = out else {
            continue; // stream signals are for servers
        };
        if st.abort_modern(&out) {
            continue; // a 2026-07-28 request is cancelled by closing its POST
        }
        let tracked = st.track_modern(&out);
        let gate = (!*st.standalone_gate.borrow()).then(|| st.standalone_gate.subscribe());
        let initialized = out.method() == Some(Initialized::METHOD);
        let opener = (handshake && initialized).then(|| {
            handshake = false;
            st.standalone_gate.send_replace(false);
            GateOpener(st.standalone_gate.clone())
        });
        let st = st.clone();
        tokio::spawn(async move {
            let post = async {
                if let Some(mut gate) = gate {
                    let open = gate.wait_for(|open| *open);
                    let _ = tokio::time::timeout(STANDALONE_GATE, open).await;
                }
                st.post(*out, opener).await
            };
            match tracked {
                None => post.await,
                Some((id, aborted)) => {
                    // Dropping the POST (its response, its stream) closes its connection.
                    tokio::select! {
                        () = aborted.cancelled() => {}
                        () = post => {}
                    }
                    st.untrack_modern(&id);
                }
            }
        });
    }
}

impl State {
    fn request(&self, method: reqwest::Method) -> reqwest::RequestBuilder {
        let req = self.http.request(method.clone(), &self.url);
        let mut req = self.credentials(req, method.as_str(), &self.url);
        if let Some(v) = self.version.lock().clone() {
            req = req.header("mcp-protocol-version", v);
        }
        req
    }

    /// The configured headers and the authorizer's `Authorization`.
    fn credentials(
        &self,
        mut req: reqwest::RequestBuilder,
        method: &str,
        url: &str,
    ) -> reqwest::RequestBuilder {
        let auth = self.config.authorizer.as_ref().map(|a| a.authorization());
        if let Some(proof) = self
            .config
            .authorizer
            .as_ref()
            .and_then(|a| a.proof(method, url))
        {
            req = req.header("dpop", proof);
        }
        for (k, v) in &self.config.headers {
            if auth.is_some() && k.eq_ignore_ascii_case("authorization") {
                continue;
            }
            req = req.header(k.as_str(), v.as_str());
        }
        if let Some(Some(value)) = auth {
            req = req.header(reqwest::header::AUTHORIZATION, value);
        }
        req
    }

    /// A 401 or 403: asks the authorizer for credentials that answer it. `Ok(true)`: send
    /// the request again; `Ok(false)`: the refusal stands.
    async fn answer_challenge(
        &self,
        resp: &reqwest::Response,
        tries: &mut u32,
    ) -> Result<bool, TransportError> {
        let status = resp.status().as_u16();
        let Some(authorizer) = &self.config.authorizer else {
            return Ok(false);
        };
        if !matches!(status, 401 | 403) || *tries >= auth::MAX_CHALLENGES {
            return Ok(false);
        }
        *tries += 1;
        let challenge = Challenge::of(resp);
        authorizer
            .challenged(&challenge)
            .await
            .map_err(|why| TransportError::Http {
                status,
                retry_after: None,
                location: None,
                message: format!("authorization failed: {why}"),
                body: String::new(),
            })
    }

    /// Hands a message from the server to the engine.
    async fn deliver(&self, data: String) {
        if !data.trim().is_empty() {
            let _ = self.to_engine.send(Inbound::Frame(data.into_bytes())).await;
        }
    }

    /// Fails our request `id` with the transport's error, so its caller does not wait.
    async fn fail(&self, id: Option<RequestId>, error: TransportError) {
        match id {
            Some(id) => {
                let _ = self.to_engine.send(Inbound::failed(id, error)).await;
            }
            None => tracing::warn!("a notification or response was not delivered: {error}"),
        }
    }

    /// Answers our request `id` with the JSON-RPC error the server sent without an id (over
    /// HTTP we know which request the POST carried).
    async fn answer_error(&self, id: Option<RequestId>, error: ErrorObject) {
        if let Some(id) = id {
            self.deliver(Message::error(Some(id), error).encode()).await;
        }
    }
}

/// What an outgoing message is, for the POST that carries it.
struct Posted {
    line: String,
    request: Option<RequestId>,
    initialize: bool,
    initialized: bool,
}

impl From<OutMessage> for Posted {
    fn from(m: OutMessage) -> Self {
        let method = m.method();
        Self {
            initialize: method == Some(oxmcp_types::methods::Initialize::METHOD),
            initialized: method == Some(Initialized::METHOD),
            request: m.request_id().cloned(),
            line: m.line,
        }
    }
}

#[cfg(test)]
use stream::reconnect_delay;

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
