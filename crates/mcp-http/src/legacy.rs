//! The legacy HTTP+SSE transport of protocol 2024-11-05: `GET /sse` opens a stream whose first
//! event (`endpoint`) names a same-origin `/message?sessionId=…` URL; the client POSTs its
//! messages there (202) and every server message arrives on the stream as `event: message`.
//! The session ends when the stream closes. The same Host/Origin checks and body limit as
//! Streamable HTTP apply.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use mcp_jsonrpc::{ErrorCode, ErrorObject, Message, Outbound};
use mcp_server::Server;
use tokio::sync::mpsc;

use crate::config::HttpConfig;
use crate::guard;
use crate::session::random_hex;

struct Inner {
    server: Server,
    config: HttpConfig,
    sessions: Mutex<HashMap<String, mpsc::Sender<Vec<u8>>>>,
}

impl Inner {
    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, mpsc::Sender<Vec<u8>>>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The legacy HTTP+SSE endpoints (`/sse` and `/message`) for one [`Server`].
#[derive(Clone)]
pub struct LegacySse {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for LegacySse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LegacySse").finish_non_exhaustive()
    }
}

/// Removes the session when the stream's body is dropped (the client went away).
struct SessionGuard {
    inner: Arc<Inner>,
    id: String,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.inner.sessions().remove(&self.id);
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    let body = Message::error(None, ErrorObject::new(ErrorCode::INVALID_REQUEST, message)).encode();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

impl LegacySse {
    /// Legacy endpoints for `server`, with the same settings type as Streamable HTTP (`path` is
    /// not used: the paths are `/sse` and `/message`).
    pub fn new(server: Server, config: HttpConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                server,
                config,
                sessions: Mutex::new(HashMap::new()),
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

async fn open_stream(State(inner): State<Arc<Inner>>, headers: HeaderMap) -> Response {
    if guard::check(&inner.config, &headers).is_err() {
        return error(
            StatusCode::FORBIDDEN,
            "Forbidden: Host or Origin not allowed",
        );
    }
    if inner.config.shutdown.is_cancelled() {
        return error(StatusCode::SERVICE_UNAVAILABLE, "Server is shutting down");
    }
    if inner.sessions().len() >= inner.config.max_sessions {
        return error(StatusCode::SERVICE_UNAVAILABLE, "Too many sessions");
    }
    let id = random_hex(16);
    let (in_tx, in_rx) = mpsc::channel(64);
    let (out_tx, out_rx) = mpsc::channel::<Outbound>(1024);
    inner.sessions().insert(id.clone(), in_tx);
    let server = inner.server.clone();
    let engine = mcp_engine::EngineConfig {
        busy_after: Some(inner.config.max_requests_per_session.max(1)),
        ..server.config().engine.clone()
    };
    tokio::spawn(async move { server.serve_with(in_rx, out_tx, engine).await });
    let first = format!("event: endpoint\ndata: /message?sessionId={id}\n\n");
    let guard = SessionGuard {
        inner: inner.clone(),
        id,
    };
    let keep_alive = inner.config.keep_alive;
    let state = (Some(first), out_rx, guard);
    let stream = futures::stream::unfold(state, move |(first, mut rx, guard)| async move {
        if let Some(f) = first {
            return Some((Ok::<_, Infallible>(Bytes::from(f)), (None, rx, guard)));
        }
        loop {
            match tokio::time::timeout(keep_alive, rx.recv()).await {
                Ok(Some(out)) if out.line.is_empty() => continue, // stream control: one stream only
                Ok(Some(out)) => {
                    let chunk = format!("event: message\ndata: {}\n\n", out.line);
                    return Some((Ok(Bytes::from(chunk)), (None, rx, guard)));
                }
                Ok(None) => return None,
                Err(_) => {
                    return Some((
                        Ok(Bytes::from_static(b": keep-alive\n\n")),
                        (None, rx, guard),
                    ));
                }
            }
        }
    });
    let mut resp = Response::new(Body::from_stream(stream));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

#[derive(serde::Deserialize)]
struct SessionQuery {
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
}

async fn receive(
    State(inner): State<Arc<Inner>>,
    Query(q): Query<SessionQuery>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if guard::check(&inner.config, &headers).is_err() {
        return error(
            StatusCode::FORBIDDEN,
            "Forbidden: Host or Origin not allowed",
        );
    }
    let Some(id) = q.session_id else {
        return error(StatusCode::BAD_REQUEST, "sessionId is required");
    };
    if id.len() > 128 {
        return error(StatusCode::BAD_REQUEST, "malformed sessionId");
    }
    if inner.config.shutdown.is_cancelled() {
        return error(StatusCode::SERVICE_UNAVAILABLE, "Server is shutting down");
    }
    let body = match crate::server::read_body(&inner.config, &headers, body).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let Some(tx) = inner.sessions().get(&id).cloned() else {
        return error(StatusCode::NOT_FOUND, "Session not found");
    };
    let max_batch = inner.server.config().engine.max_batch;
    if let mcp_jsonrpc::Frame::Single(Err(e)) = mcp_jsonrpc::Frame::decode_limited(&body, max_batch)
    {
        let body = Message::error(e.id, e.error).encode();
        return (
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response();
    }
    match tokio::time::timeout(Duration::from_secs(30), tx.send(body.to_vec())).await {
        Ok(Ok(())) => StatusCode::ACCEPTED.into_response(),
        Ok(Err(_)) => error(StatusCode::NOT_FOUND, "Session not found"),
        Err(_) => error(StatusCode::SERVICE_UNAVAILABLE, "Session is overloaded"),
    }
}
