//! [`WebSocket`]: an MCP endpoint at `/ws` hosting any [`Serve`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::ws::{CloseFrame, Message, WebSocket as Socket, WebSocketUpgrade};
use axum::extract::{FromRequestParts, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures::{SinkExt, StreamExt};
use oxmcp_engine::{Connection, DirectSlot, EngineConfig, Fed, Feeder, Serve};
use oxmcp_jsonrpc::Outbound;
use tokio::sync::mpsc;

use oxmcp_http::front::{Client, ClientTable, Held, Lease, Refusal, Refused, Watched};
use oxmcp_http::{HttpConfig, Principal};

use crate::{SUBPROTOCOL, close};

/// WebSocket settings (the rest comes from the [`HttpConfig`]: allowed hosts, auth, the
/// message size limit `max_body`, the idle timeout `session_idle_timeout`, the most
/// connections open at once `max_sessions` (503 above it), the per-client limits of
/// sessions `max_sessions_per_principal` / `_per_address`, `client_session_rate` /
/// `_burst` (429 above them), shutdown).
#[derive(Debug, Clone, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "", generate_private = false)]
pub struct WsConfig {
    /// Where it is served.
    pub path: String,
    /// How often the server pings; a client silent for two intervals is gone.
    pub ping_interval: Duration,
}

impl Default for WsConfig {
    fn default() -> Self {
        Self {
            path: "/ws".to_owned(),
            ping_interval: Duration::from_secs(20),
        }
    }
}

struct Inner {
    service: Arc<dyn Serve>,
    engine: EngineConfig,
    http: Arc<HttpConfig>,
    ws: WsConfig,
    /// One permit per open connection: at most `max_sessions` at once.
    connections: Arc<tokio::sync::Semaphore>,
    /// Connections per client, counted like sessions.
    clients: Arc<ClientTable>,
}

/// An MCP endpoint over WebSocket hosting one service. Cheap to clone.
#[derive(Clone)]
pub struct WebSocket {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for WebSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSocket")
            .field("path", &self.inner.ws.path)
            .finish_non_exhaustive()
    }
}

impl WebSocket {
    /// An endpoint for `service` with the checks and limits of `http` and the settings `ws`.
    pub fn new(service: impl Serve, http: HttpConfig, ws: WsConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                engine: http.engine(service.engine_config()),
                service: Arc::new(service),
                connections: Arc::new(tokio::sync::Semaphore::new(http.max_sessions.max(1))),
                clients: Arc::new(ClientTable::default()),
                http: Arc::new(http),
                ws,
            }),
        }
    }

    /// The axum router serving the endpoint at its path.
    pub fn router(&self) -> axum::Router {
        axum::Router::new()
            .route(&self.inner.ws.path, axum::routing::get(upgrade))
            .with_state(self.inner.clone())
    }
}

async fn upgrade(State(inner): State<Arc<Inner>>, request: Request) -> Response {
    let (mut parts, _) = request.into_parts();
    if let Err(r) = oxmcp_http::front::host_checks(&inner.http, &parts.headers) {
        return r.into_response();
    }
    if let Err(r) = oxmcp_http::front::authenticate(inner.http.auth.as_deref(), &mut parts).await {
        return r.into_response();
    }
    let asked: Vec<String> = header_str(&parts.headers, "sec-websocket-protocol")
        .map(|v| v.split(',').map(|p| p.trim().to_owned()).collect())
        .unwrap_or_default();
    if !asked.is_empty() && !asked.iter().any(|p| p == SUBPROTOCOL) {
        return Refusal::bad_request("Bad Request: the WebSocket subprotocol must be \"mcp\"")
            .into_response();
    }
    let Ok(permit) = inner.connections.clone().try_acquire_owned() else {
        tracing::warn!("WebSocket upgrade refused: max_sessions connections are open");
        return Refusal::text(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many WebSocket connections",
        )
        .retry_after(Duration::from_secs(5))
        .into_response();
    };
    let held = match Held::take(
        &inner.clients,
        &inner.http,
        &Client::of(&inner.http, &parts.extensions),
        true,
    ) {
        Ok(held) => held,
        Err(refused) => return too_many(&refused).into_response(),
    };
    let principal = parts.extensions.get::<Principal>().map(|p| p.0.clone());
    let lease = Lease::open(&inner.http, &parts);
    let ws = match WebSocketUpgrade::from_request_parts(&mut parts, &()).await {
        Ok(ws) => ws,
        Err(e) => return Refusal::text(StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    let max = inner.http.max_body;
    ws.protocols([SUBPROTOCOL])
        .max_message_size(max)
        .max_frame_size(max)
        .on_upgrade(move |socket| async move {
            let _open = oxmcp_http::stats::Open::new(oxmcp_http::stats::Transport::WebSocket);
            serve(inner, socket, principal, lease).await;
            drop(permit);
            drop(held);
        })
}

/// A header's value, if it is text.
fn header_str<'a>(headers: &'a axum::http::HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// 429 for a client at its limit of connections, or opening them too fast.
fn too_many(refused: &Refused) -> Refusal {
    let (wait, text) = match refused {
        Refused::TooMany => (
            Duration::from_secs(1),
            "too many WebSocket connections from this client; close one first",
        ),
        Refused::TooFast(wait) => (
            *wait,
            "too many new WebSocket connections from this client; slow down",
        ),
    };
    tracing::debug!("WebSocket upgrade refused: {text}");
    Refusal::text(StatusCode::TOO_MANY_REQUESTS, text).retry_after(wait)
}

/// Why a connection ended, as its close frame.
fn closing(code: u16, reason: &str) -> Message {
    Message::Close(Some(CloseFrame {
        code,
        reason: reason.into(),
    }))
}

/// The close frame for a connection whose token ended (1008; a reason fits in 123 bytes).
fn token_ended(why: &str) -> Message {
    let mut reason = why.to_owned();
    while reason.len() > 123 {
        reason.pop();
    }
    closing(close::POLICY, &reason)
}

type Sink = futures::stream::SplitSink<Socket, Message>;

/// One frame (or the end of the stream) from the client. `Err`: the connection ends, with
/// this close frame if any.
async fn on_frame(
    inner: &Inner,
    lease: Option<&Watched>,
    sink: &mut Sink,
    to: (&mut Feeder, &mpsc::Sender<String>),
    frame: Option<Result<Message, axum::Error>>,
) -> Result<(), Option<Message>> {
    match frame {
        Some(Ok(Message::Text(text))) => on_text(inner, lease, sink, to, text.as_bytes()).await,
        Some(Ok(Message::Binary(_))) => Err(Some(closing(
            close::UNSUPPORTED,
            "binary frames are not MCP messages; send JSON text",
        ))),
        Some(Ok(Message::Ping(_) | Message::Pong(_))) => Ok(()),
        Some(Ok(Message::Close(_))) | None => Err(None),
        Some(Err(e)) => Err(Some(error_close(&e))),
    }
}

/// One text frame from the client: a fresh token (checked in a task of its own, whose answer
/// comes through `ours`), a request refused for a scope the token lacks (answered here), or
/// a message for the engine. `Err`: the connection ends, with this close frame if any.
async fn on_text(
    inner: &Inner,
    lease: Option<&Watched>,
    sink: &mut Sink,
    (feeder, ours): (&mut Feeder, &mpsc::Sender<String>),
    text: &[u8],
) -> Result<(), Option<Message>> {
    let ours = ours.clone();
    let reply = |line: String| async move {
        let _ = ours.send(line).await;
    };
    if let Some(lease) = lease
        && let Some(answer) = lease.authorize_frame(text, reply)
    {
        if let Some(line) = answer {
            sink.send(Message::Text(line.into()))
                .await
                .map_err(|_| None)?;
        }
        return Ok(());
    }
    let identity = lease.map(|l| l.identity());
    let auth = inner.http.auth.as_deref();
    if let Some(refusals) = oxmcp_http::front::frame_refusals(auth, identity.as_deref(), text) {
        for line in refusals {
            if sink.send(Message::Text(line.into())).await.is_err() {
                break;
            }
        }
        return Ok(());
    }
    let fed = feeder.feed(text, None).await;
    send_fed(sink, fed).await
}

/// Sends what a frame or a request answered here came to. `Err`: the connection ends.
async fn send_fed(sink: &mut Sink, fed: Fed) -> Result<(), Option<Message>> {
    match fed {
        Fed::Taken => Ok(()),
        Fed::Answer(line) => sink
            .send(Message::Text(line.into()))
            .await
            .map_err(|_| None),
        Fed::Closed => Err(Some(closing(close::NORMAL, "the session ended"))),
    }
}

/// Starts serving a connection of `principal`: the engine's input (and its handle for
/// answering requests on the socket's task), its output, its task.
fn start_engine(
    inner: &Inner,
    principal: Option<String>,
) -> (
    Feeder,
    mpsc::Receiver<Outbound>,
    tokio::task::JoinHandle<()>,
) {
    let (in_tx, in_rx) = mpsc::channel(64);
    let (out_tx, out_rx) = mpsc::channel::<Outbound>(1024);
    let direct = DirectSlot::new();
    let serving = inner.service.serve(Connection {
        incoming: in_rx,
        outgoing: out_tx,
        config: inner.engine.clone(),
        principal,
        direct: Some(direct.clone()),
        parking: None,
        session: None,
    });
    (Feeder::new(in_tx, direct), out_rx, tokio::spawn(serving))
}

async fn serve(
    inner: Arc<Inner>,
    socket: Socket,
    principal: Option<String>,
    lease: Option<Watched>,
) {
    let (mut input, mut out_rx, mut engine) = start_engine(&inner, principal);
    let mut engine_ended = false;
    // Our own answers (to `oxmcp/authorize`), from the tasks that check presented tokens.
    let (ours_tx, mut ours_rx) = mpsc::channel::<String>(4);
    let (mut sink, mut stream) = socket.split();
    let mut ping = tokio::time::interval(inner.ws.ping_interval);
    ping.tick().await;
    let mut heard = Instant::now();
    let mut last_message = Instant::now();
    let shutdown = inner.http.shutdown.clone();
    let mut going_away = false;
    let end = loop {
        tokio::select! {
            frame = stream.next() => {
                heard = Instant::now();
                if matches!(frame, Some(Ok(Message::Text(_)))) {
                    last_message = heard;
                }
                let to = (&mut input, &ours_tx);
                if let Err(end) = on_frame(&inner, lease.as_ref(), &mut sink, to, frame).await {
                    break end;
                }
            }
            _ = &mut engine, if !engine_ended => {
                engine_ended = true;
                input.loop_ended();
            }
            fed = input.answered(), if input.running() > 0 => {
                if let Err(end) = send_fed(&mut sink, fed).await {
                    break end;
                }
            }
            out = out_rx.recv() => match out {
                Some(Outbound::Message(out)) => {
                    if sink.send(Message::Text(out.line.into())).await.is_err() {
                        break None;
                    }
                }
                Some(_) => {}
                // The engine finished (its input ended and everything was answered).
                None if going_away => break Some(closing(close::GOING_AWAY, "the server is shutting down")),
                None => break Some(closing(close::NORMAL, "")),
            },
            Some(line) = ours_rx.recv() => {
                if sink.send(Message::Text(line.into())).await.is_err() {
                    break None;
                }
            }
            _ = ping.tick() => {
                if let Err(end) = on_tick(&inner, &mut sink, heard, last_message).await {
                    break end;
                }
            }
            why = oxmcp_http::front::ended(lease.as_ref()) => break Some(token_ended(&why)),
            () = shutdown.cancelled(), if input.is_open() => {
                // No more input; what the engine accepted is still answered, then the socket
                // closes with 1001.
                input.shut();
                going_away = true;
            }
        }
    };
    // The connection is gone: nothing more it asked for runs on.
    input.abandon();
    if let Some(frame) = end {
        let _ = sink.send(frame).await;
    }
    let _ = sink.close().await;
    // The engine ends once its input is gone; its requests in flight are cancelled with it.
    engine.abort();
}

/// A tick of the ping interval: a peer silent for two intervals is gone, one that sent no
/// message for `session_idle_timeout` is idle; else it is pinged. `Err`: the connection ends,
/// with this close frame if any.
async fn on_tick(
    inner: &Inner,
    sink: &mut Sink,
    heard: Instant,
    last_message: Instant,
) -> Result<(), Option<Message>> {
    if heard.elapsed() > inner.ws.ping_interval * 2 {
        tracing::debug!("a WebSocket peer stopped answering pings");
        return Err(None);
    }
    if last_message.elapsed() > inner.http.session_idle_timeout {
        return Err(Some(closing(close::POLICY, "idle for too long")));
    }
    if sink.send(Message::Ping(Default::default())).await.is_err() {
        return Err(None);
    }
    Ok(())
}

/// The close frame for a read error: too big, not UTF-8, or a protocol error.
fn error_close(e: &axum::Error) -> Message {
    let text = e.to_string();
    tracing::debug!("WebSocket read error: {text}");
    if text.contains("too long") || text.contains("too big") || text.contains("Space limit") {
        closing(close::TOO_BIG, "message over the size limit")
    } else if text.contains("UTF-8") || text.contains("utf-8") {
        closing(close::INVALID_DATA, "text frames must be UTF-8")
    } else {
        closing(close::INTERNAL, "protocol error")
    }
}
