//! The WebSocket client transport: `ws://` and `wss://` (rustls, the webpki roots).

use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::{SinkExt, StreamExt};
use oxmcp_jsonrpc::{Inbound, Outbound};
use oxmcp_transport::{Channels, Exit, Link};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use oxmcp_http::reauth::{Presented, Reauthorizer, Waiting};

use crate::SUBPROTOCOL;

/// Settings of a WebSocket client connection.
#[derive(Debug, Clone, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "", generate_private = false)]
pub struct WsClientConfig {
    /// Extra request headers of the upgrade (`Authorization`, say).
    pub headers: Vec<(String, String)>,
    /// The largest message accepted from the server.
    pub max_message: usize,
    /// How often the client pings; a server silent for two intervals is gone.
    pub ping_interval: Duration,
    /// How long the connection (TCP, TLS and the upgrade) may take.
    pub connect_timeout: Duration,
}

impl Default for WsClientConfig {
    fn default() -> Self {
        Self {
            headers: Vec::new(),
            max_message: 16 * 1024 * 1024,
            ping_interval: Duration::from_secs(20),
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// Why a WebSocket connection could not be made.
#[derive(Debug, thiserror::Error)]
pub enum WsClientError {
    /// The URL or a header is not usable.
    #[error("{0}")]
    Request(String),
    /// The server could not be reached, or refused the upgrade.
    #[error("WebSocket connection to {url} failed: {error}")]
    Connect {
        /// The URL.
        url: String,
        /// What went wrong.
        error: String,
    },
    /// The server did not agree to the `mcp` subprotocol.
    #[error("the server at {0} did not accept the WebSocket subprotocol \"mcp\"")]
    Subprotocol(String),
}

/// Closes the connection: a close frame, then the socket.
#[derive(Debug)]
pub struct WsLink {
    stop: Option<oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<()>>,
    reauthorizer: Reauthorizer,
}

impl WsLink {
    /// Presents fresh bearer tokens on this connection (`oxmcp/authorize`), so that it
    /// outlives the token it was opened with. Take it before handing the link on.
    pub fn reauthorizer(&self) -> Reauthorizer {
        self.reauthorizer.clone()
    }
}

impl Link for WsLink {
    fn close(mut self: Box<Self>) -> BoxFuture<'static, Option<Exit>> {
        Box::pin(async move {
            if let Some(stop) = self.stop.take() {
                let _ = stop.send(());
            }
            if let Some(done) = self.done.take() {
                let _ = tokio::time::timeout(Duration::from_secs(5), done).await;
            }
            None
        })
    }
}

/// Connects to the MCP WebSocket endpoint at `url` (`ws://` or `wss://`): the channels the
/// engine uses, and the link that closes the connection.
///
/// # Errors
/// [`WsClientError`] when the upgrade does not succeed.
pub async fn connect(
    url: &str,
    config: WsClientConfig,
) -> Result<(Channels, WsLink), WsClientError> {
    let mut request = url
        .into_client_request()
        .map_err(|e| WsClientError::Request(format!("{url:?} is not a WebSocket URL: {e}")))?;
    let headers = request.headers_mut();
    headers.insert(
        "sec-websocket-protocol",
        HeaderValue::from_static(SUBPROTOCOL),
    );
    for (k, v) in &config.headers {
        let name = tokio_tungstenite::tungstenite::http::HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| WsClientError::Request(format!("bad header name {k:?}")))?;
        let value = HeaderValue::from_str(v)
            .map_err(|_| WsClientError::Request(format!("bad value for header {k}")))?;
        headers.insert(name, value);
    }
    let ws_config = WebSocketConfig::default()
        .max_message_size(Some(config.max_message))
        .max_frame_size(Some(config.max_message));
    let connecting =
        tokio_tungstenite::connect_async_tls_with_config(request, Some(ws_config), true, None);
    let failed = |error: String| WsClientError::Connect {
        url: url.to_owned(),
        error,
    };
    let (socket, response) = match tokio::time::timeout(config.connect_timeout, connecting).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err(failed(e.to_string())),
        Err(_) => {
            return Err(failed(format!(
                "no answer within {:?}",
                config.connect_timeout
            )));
        }
    };
    let agreed = response
        .headers()
        .get("sec-websocket-protocol")
        .and_then(|v| v.to_str().ok());
    if agreed != Some(SUBPROTOCOL) {
        return Err(WsClientError::Subprotocol(url.to_owned()));
    }
    let (in_tx, in_rx) = mpsc::channel(oxmcp_transport::stdio::QUEUE_DEPTH);
    let (out_tx, out_rx) = mpsc::channel(oxmcp_transport::stdio::QUEUE_DEPTH);
    let (stop_tx, stop_rx) = oneshot::channel();
    let (present_tx, presents) = mpsc::channel(4);
    let done = tokio::spawn(run(
        socket,
        in_tx,
        out_rx,
        (stop_rx, presents),
        config.ping_interval,
    ));
    Ok((
        Channels {
            incoming: in_rx,
            outgoing: out_tx,
        },
        WsLink {
            stop: Some(stop_tx),
            done: Some(done),
            reauthorizer: Reauthorizer::new(present_tx),
        },
    ))
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// One frame (or the end) from the server: an answer to our `oxmcp/authorize`, a message for
/// the engine, or the end of the connection (`false`).
async fn on_frame(
    frame: Option<Result<Message, tokio_tungstenite::tungstenite::Error>>,
    waiting: &Waiting,
    in_tx: &mpsc::Sender<Inbound>,
    sink: &mut futures::stream::SplitSink<Socket, Message>,
) -> bool {
    match frame {
        Some(Ok(Message::Text(text))) => {
            waiting.answered(text.as_bytes())
                || in_tx
                    .send(Inbound::Frame(text.as_bytes().to_vec()))
                    .await
                    .is_ok()
        }
        Some(Ok(Message::Binary(_))) => {
            tracing::warn!("the server sent a binary WebSocket frame; closing");
            let frame = CloseFrame {
                code: CloseCode::Unsupported,
                reason: "binary frames are not MCP messages".into(),
            };
            let _ = sink.send(Message::Close(Some(frame))).await;
            false
        }
        Some(Ok(Message::Close(frame))) => {
            if let Some(f) = frame {
                let code = u16::from(f.code);
                tracing::debug!(code, "the server closed the WebSocket: {}", f.reason);
            }
            false
        }
        Some(Ok(_)) => true,
        Some(Err(e)) => {
            tracing::debug!("WebSocket read error: {e}");
            false
        }
        None => false,
    }
}

/// Moves messages both ways until either side closes; `control` is the link's stop signal
/// and the fresh tokens to present.
async fn run(
    socket: Socket,
    in_tx: mpsc::Sender<Inbound>,
    mut out_rx: mpsc::Receiver<Outbound>,
    control: (oneshot::Receiver<()>, mpsc::Receiver<Presented>),
    every: Duration,
) {
    let (mut stop, mut presents) = control;
    let waiting = Waiting::default();
    let (mut sink, mut stream) = socket.split();
    let mut ping = tokio::time::interval(every);
    ping.tick().await;
    let mut heard = Instant::now();
    loop {
        tokio::select! {
            frame = stream.next() => {
                heard = Instant::now();
                if !on_frame(frame, &waiting, &in_tx, &mut sink).await {
                    break;
                }
            }
            out = out_rx.recv() => match out {
                Some(out) => {
                    let Some(line) = out.line() else { continue };
                    if sink.send(Message::Text(line.to_owned().into())).await.is_err() {
                        break;
                    }
                }
                None => {
                    let _ = sink.send(Message::Close(None)).await;
                    break;
                }
            },
            Some(presented) = presents.recv() => {
                let line = waiting.sent(presented);
                if sink.send(Message::Text(line.into())).await.is_err() {
                    break;
                }
            }
            _ = ping.tick() => {
                if heard.elapsed() > every * 2 {
                    tracing::warn!("the WebSocket server stopped answering pings");
                    break;
                }
                if sink.send(Message::Ping(Default::default())).await.is_err() {
                    break;
                }
            }
            _ = &mut stop => {
                let _ = sink.send(Message::Close(None)).await;
                break;
            }
        }
    }
    let _ = sink.close().await;
    // Dropping `in_tx` ends the engine's input: requests still waiting fail.
}
