//! The legacy HTTP+SSE transport of protocol 2024-11-05: `GET /sse` opens a stream whose first
//! event (`endpoint`) names a same-origin `/message?sessionId=…` URL; the client POSTs its
//! messages there (202) and every server message arrives on the stream as `event: message`.
//! The session ends when the stream closes. The same Host/Origin checks and body limit as
//! Streamable HTTP apply. On a protected endpoint the stream also ends when its bearer token
//! expires or is refused when verified again; a POST with a fresh token of the same
//! principal renews it.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Query, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use oxmcp_engine::{Connection, EngineConfig, Serve};
use oxmcp_jsonrpc::{Inbound, Outbound};
use tokio::sync::mpsc;

use crate::server::clients::{Client, ClientTable};
use crate::server::config::HttpConfig;
use crate::server::guard;
use crate::server::lease::{Lease, Watched};
use crate::server::protobuf::Encoding;
use crate::server::refusal::Refusal;
use crate::server::session::{handshake_done, random_hex};
use crate::server::sse_stream::{KEEP_ALIVE, sse_body, sse_message};

/// One legacy session: the engine's input, and whether the handshake finished.
#[derive(Clone)]
struct Legacy {
    input: mpsc::Sender<Inbound>,
    initialized: Arc<AtomicBool>,
    /// The verified principal that opened it: only it may post to it.
    owner: Option<String>,
    /// Its bearer token, which ends the stream; a POST with a fresh one renews it.
    lease: Option<Arc<Watched>>,
}

struct Inner {
    service: Arc<dyn Serve>,
    engine: EngineConfig,
    config: HttpConfig,
    sessions: Mutex<HashMap<String, Legacy>>,
    clients: ClientTable,
}

impl Inner {
    fn sessions(&self) -> parking_lot::MutexGuard<'_, HashMap<String, Legacy>> {
        self.sessions.lock()
    }
}

/// The legacy HTTP+SSE endpoints (`/sse` and `/message`) hosting one service ([`Serve`]).
#[derive(Clone)]
pub struct LegacySse {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for LegacySse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LegacySse").finish_non_exhaustive()
    }
}

/// Removes the session when the stream's body is dropped (the client went away): its engine's
/// input closes, and the engine ends.
struct SessionGuard {
    inner: Arc<Inner>,
    id: String,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.inner.sessions().remove(&self.id);
    }
}

impl LegacySse {
    /// Legacy endpoints for `service`, with the same settings type as Streamable HTTP (`path`
    /// is not used: the paths are `/sse` and `/message`).
    pub fn new(service: impl Serve, config: HttpConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                engine: config.engine(service.engine_config()),
                service: Arc::new(service),
                config,
                sessions: Mutex::new(HashMap::new()),
                clients: ClientTable::default(),
            }),
        }
    }

    /// Open legacy sessions.
    pub fn session_count(&self) -> usize {
        self.inner.sessions().len()
    }

    /// The axum router with `GET /sse` and `POST /message`.
    pub fn router(&self) -> axum::Router {
        let weak = Arc::downgrade(&self.inner);
        let shutdown = self.inner.config.shutdown.clone();
        tokio::spawn(async move {
            shutdown.cancelled().await;
            // Closing each session's input lets its engine answer what it accepted; then its
            // output closes and the stream ends.
            if let Some(inner) = weak.upgrade() {
                inner.sessions().clear();
            }
        });
        axum::Router::new()
            .route("/sse", get(open_stream))
            .route("/message", post(receive))
            .with_state(self.inner.clone())
    }
}

async fn open_stream(State(inner): State<Arc<Inner>>, request: Request) -> Response {
    let (mut parts, _) = request.into_parts();
    if guard::check(&inner.config, &parts.headers).is_err() {
        return Refusal::forbidden_host().into_response();
    }
    if let Err(r) = crate::auth::authenticate(inner.config.auth.as_deref(), &mut parts).await {
        return r.into_response();
    }
    let client = match admit(&inner, &parts) {
        Ok(c) => c,
        Err(r) => return r.into_response(),
    };
    let Some(id) = random_hex(16) else {
        if let Some(key) = client.key() {
            inner.clients.release(&key);
        }
        return Refusal::invalid_request(
            StatusCode::SERVICE_UNAVAILABLE,
            "Cannot make a secure session id right now",
        )
        .into_response();
    };
    let guard = SessionGuard {
        inner: inner.clone(),
        id,
    };
    let lease = Lease::open(&inner.config, &parts).map(Arc::new);
    let (out_rx, initialized) = start(&inner, &guard.id, &client, lease.clone());
    let first = format!("event: endpoint\ndata: /message?sessionId={}\n\n", guard.id);
    let deadline = tokio::time::Instant::now() + inner.config.session_init_timeout;
    let stream = Outgoing {
        rx: out_rx,
        initialized,
        deadline,
        keep_alive: inner.config.keep_alive,
        lease,
        _guard: guard,
    };
    let first = futures::stream::once(async move { Ok(Bytes::from(first)) });
    sse_body(first.chain(stream.into_stream()), None)
}

/// The checks a new legacy stream passes: DNS-rebinding protection, shutdown, the
/// endpoint's and the client's session caps.
fn admit(inner: &Inner, parts: &axum::http::request::Parts) -> Result<Client, Refusal> {
    if guard::check(&inner.config, &parts.headers).is_err() {
        return Err(Refusal::forbidden_host());
    }
    if inner.config.shutdown.is_cancelled() {
        return Err(Refusal::invalid_request(
            StatusCode::SERVICE_UNAVAILABLE,
            "Server is shutting down",
        ));
    }
    if inner.sessions().len() >= inner.config.max_sessions {
        return Err(Refusal::invalid_request(
            StatusCode::SERVICE_UNAVAILABLE,
            "Too many sessions",
        ));
    }
    let client = Client::of(&inner.config, &parts.extensions);
    if inner.clients.admit(&inner.config, &client).is_err() {
        return Err(Refusal::invalid_request(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many sessions from this client; slow down",
        ));
    }
    Ok(client)
}

/// Registers session `id` and starts serving it; returns its output and whether its
/// handshake is done.
fn start(
    inner: &Arc<Inner>,
    id: &str,
    client: &Client,
    lease: Option<Arc<Watched>>,
) -> (mpsc::Receiver<Outbound>, Arc<AtomicBool>) {
    let (in_tx, in_rx) = mpsc::channel(64);
    let (out_tx, out_rx) = mpsc::channel::<Outbound>(1024);
    let initialized = Arc::new(AtomicBool::new(false));
    let legacy = Legacy {
        input: in_tx,
        initialized: initialized.clone(),
        owner: client.principal().map(str::to_owned),
        lease,
    };
    inner.sessions().insert(id.to_owned(), legacy);
    let serving = inner.service.serve(Connection {
        incoming: in_rx,
        outgoing: out_tx,
        config: inner.engine.clone(),
        principal: client.principal().map(str::to_owned),
        direct: None,
        parking: None,
        session: None,
    });
    let (ended, id, key) = (inner.clone(), id.to_owned(), client.key());
    tokio::spawn(async move {
        serving.await;
        // Input closed (the client went away) or the client stopped reading: gone either way.
        ended.sessions().remove(&id);
        if let Some(key) = key {
            ended.clients.release(&key);
        }
    });
    (out_rx, initialized)
}

/// The session's messages as SSE events, with keep-alives; ends when the session ends or
/// when the handshake does not finish in time. A client that stops reading fills `rx`; its
/// engine then closes the connection after the stall timeout (ending this stream), so that
/// nothing waits for it for longer.
struct Outgoing {
    rx: mpsc::Receiver<Outbound>,
    initialized: Arc<AtomicBool>,
    deadline: tokio::time::Instant,
    keep_alive: Duration,
    /// Ends the stream when the session's token ends.
    lease: Option<Arc<Watched>>,
    /// Removes the session when the stream's body is dropped.
    _guard: SessionGuard,
}

impl Outgoing {
    fn into_stream(self) -> impl futures::Stream<Item = Result<Bytes, Infallible>> + Send {
        futures::stream::unfold(self, |mut out| async move {
            let chunk = out.next_chunk().await?;
            Some((Ok(chunk), out))
        })
    }

    async fn next_chunk(&mut self) -> Option<Bytes> {
        loop {
            let handshake_due = !self.initialized.load(Ordering::Relaxed);
            let next = tokio::select! {
                () = tokio::time::sleep_until(self.deadline), if handshake_due => {
                    tracing::debug!("legacy session did not initialize in time; closed");
                    return None;
                }
                why = crate::server::lease::ended(self.lease.as_deref()) => {
                    tracing::debug!("legacy session closed: {why}");
                    return None;
                }
                m = tokio::time::timeout(self.keep_alive, self.rx.recv()) => m,
            };
            match next {
                Ok(Some(Outbound::Message(m))) => {
                    return Some(sse_message(&m.line, Encoding::Json));
                }
                // Stream signals mean nothing on one stream.
                Ok(Some(Outbound::CloseStream(_) | Outbound::Ended(_))) => continue,
                Ok(None) => return None,
                Err(_) => return Some(Bytes::from_static(KEEP_ALIVE)),
            }
        }
    }
}

#[derive(serde::Deserialize)]
struct SessionQuery {
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
}

async fn receive(
    State(inner): State<Arc<Inner>>,
    Query(q): Query<SessionQuery>,
    request: Request,
) -> Response {
    let (mut parts, body) = request.into_parts();
    if guard::check(&inner.config, &parts.headers).is_err() {
        return Refusal::forbidden_host().into_response();
    }
    if let Err(r) = crate::auth::authenticate(inner.config.auth.as_deref(), &mut parts).await {
        return r.into_response();
    }
    let headers = &parts.headers;
    let principal = parts
        .extensions
        .get::<crate::Principal>()
        .map(|p| p.0.as_str());
    let Some(id) = q.session_id else {
        return Refusal::bad_request("sessionId is required").into_response();
    };
    if id.len() > 128 {
        return Refusal::bad_request("malformed sessionId").into_response();
    }
    if inner.config.shutdown.is_cancelled() {
        return Refusal::invalid_request(
            StatusCode::SERVICE_UNAVAILABLE,
            "Server is shutting down",
        )
        .into_response();
    }
    let legacy = inner
        .sessions()
        .get(&id)
        .filter(|l| l.owner.as_deref() == principal)
        .cloned();
    let Some(legacy) = legacy else {
        return Refusal::unknown_session().into_response();
    };
    // A fresh token of the session's principal (checked above) renews the stream's.
    if let Some(lease) = &legacy.lease
        && let Ok(Some(token)) = crate::auth::bearer_token(&parts.headers)
        && let Some(identity) = parts.extensions.get::<Arc<crate::auth::Identity>>()
    {
        lease.adopt(token, identity.clone());
    }
    let body = match crate::server::replies::read_body(&inner.config, headers, body).await {
        Ok(b) => b,
        Err(r) => return r.into_response(),
    };
    let max_batch = inner.engine.max_batch;
    let decoded: Vec<oxmcp_jsonrpc::Message> =
        match oxmcp_jsonrpc::Frame::decode_limited(&body, max_batch) {
            oxmcp_jsonrpc::Frame::Single(Err(e)) => return Refusal::undecodable(e).into_response(),
            oxmcp_jsonrpc::Frame::Single(Ok(m)) => vec![m],
            oxmcp_jsonrpc::Frame::Batch(items) => items.into_iter().flatten().collect(),
        };
    if decoded.iter().any(handshake_done) {
        legacy.initialized.store(true, Ordering::Relaxed);
    }
    if let Err(r) =
        crate::auth::check_scopes(inner.config.auth.as_deref(), &parts.extensions, &decoded)
    {
        return r.into_response();
    }
    let tx = legacy.input;
    match tokio::time::timeout(
        Duration::from_secs(30),
        tx.send(Inbound::Frame(body.to_vec())),
    )
    .await
    {
        Ok(Ok(())) => StatusCode::ACCEPTED.into_response(),
        Ok(Err(_)) => Refusal::unknown_session().into_response(),
        Err(_) => {
            Refusal::invalid_request(StatusCode::SERVICE_UNAVAILABLE, "Session is overloaded")
                .into_response()
        }
    }
}
