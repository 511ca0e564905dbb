//! The gRPC client transport: `grpc://HOST:PORT` (HTTP/2 without TLS) and `grpcs://`
//! (rustls; the system's roots, `SSL_CERT_FILE`, the webpki roots, or a CA of your own).

use std::time::Duration;

use futures::future::BoxFuture;
use oxmcp_jsonrpc::{Inbound, Outbound};
use oxmcp_proto::{DecodeLimits, Envelope};
use oxmcp_transport::{Channels, Exit, Link};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

use oxmcp_http::reauth::{Presented, Reauthorizer, Waiting};

use crate::{CALL_PATH, CONNECT_PATH, ENCODING_KEY, Form, codec, from_json, to_json};

/// Settings of a gRPC client connection.
#[derive(Debug, Clone, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "", generate_private = false)]
pub struct GrpcClientConfig {
    /// Call metadata (`authorization`, say); names are lowercased.
    pub headers: Vec<(String, String)>,
    /// The form of our envelopes; the server answers in the same form.
    pub form: Form,
    /// The largest message accepted from the server.
    pub max_message: usize,
    /// HTTP/2 keep-alive pings: how often, also while idle; a server silent for as long
    /// again is gone.
    pub ping_interval: Duration,
    /// How long the connection (TCP, TLS, HTTP/2) may take.
    pub connect_timeout: Duration,
    /// A CA (PEM) to trust for `grpcs://` besides the system's and the webpki roots.
    pub ca_pem: Option<Vec<u8>>,
}

impl Default for GrpcClientConfig {
    fn default() -> Self {
        Self {
            headers: Vec::new(),
            form: Form::Json,
            max_message: 16 * 1024 * 1024,
            ping_interval: Duration::from_secs(20),
            connect_timeout: Duration::from_secs(10),
            ca_pem: None,
        }
    }
}

/// Why a gRPC connection could not be made.
#[derive(Debug, thiserror::Error)]
pub enum GrpcClientError {
    /// The URL or a header is not usable.
    #[error("{0}")]
    Request(String),
    /// The server could not be reached, or refused the call.
    #[error("gRPC connection to {url} failed: {error}")]
    Connect {
        /// The URL.
        url: String,
        /// What went wrong.
        error: String,
    },
}

/// Ends the connection: our side of the stream first, so that the server answers what it
/// accepted, then (after at most 5 s) the connection.
#[derive(Debug)]
pub struct GrpcLink {
    stop: Option<oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<()>>,
    reauthorizer: Reauthorizer,
}

impl GrpcLink {
    /// Presents fresh bearer tokens on this stream (an `oxmcp/authorize` envelope), so that
    /// it outlives the token it was opened with. Take it before handing the link on.
    pub fn reauthorizer(&self) -> Reauthorizer {
        self.reauthorizer.clone()
    }
}

impl Link for GrpcLink {
    fn close(mut self: Box<Self>) -> BoxFuture<'static, Option<Exit>> {
        Box::pin(async move {
            if let Some(stop) = self.stop.take() {
                let _ = stop.send(());
            }
            if let Some(done) = self.done.take() {
                let abort = done.abort_handle();
                if tokio::time::timeout(Duration::from_secs(5), done)
                    .await
                    .is_err()
                {
                    abort.abort();
                }
            }
            None
        })
    }
}

/// The HTTP/2 channel for `url` (`grpc://` or `grpcs://`).
async fn channel(url: &str, config: &GrpcClientConfig) -> Result<Channel, GrpcClientError> {
    let (tls, rest) = if let Some(rest) = url.strip_prefix("grpcs://") {
        (true, rest)
    } else if let Some(rest) = url.strip_prefix("grpc://") {
        (false, rest)
    } else {
        return Err(GrpcClientError::Request(format!(
            "{url:?} is not a grpc:// or grpcs:// URL"
        )));
    };
    let authority = rest.trim_end_matches('/');
    let scheme = if tls { "https" } else { "http" };
    let mut endpoint = Endpoint::from_shared(format!("{scheme}://{authority}"))
        .map_err(|e| GrpcClientError::Request(format!("{url:?} is not a usable URL: {e}")))?
        .connect_timeout(config.connect_timeout)
        .http2_keep_alive_interval(config.ping_interval)
        .keep_alive_timeout(config.ping_interval)
        .keep_alive_while_idle(true)
        .tcp_nodelay(true);
    if tls {
        let mut tls_config = ClientTlsConfig::new().with_enabled_roots();
        if let Some(pem) = &config.ca_pem {
            tls_config = tls_config.ca_certificate(Certificate::from_pem(pem));
        }
        endpoint = endpoint
            .tls_config(tls_config)
            .map_err(|e| GrpcClientError::Request(format!("TLS settings for {url}: {e}")))?;
    }
    endpoint
        .connect()
        .await
        .map_err(|e| GrpcClientError::Connect {
            url: url.to_owned(),
            error: crate::error_chain(&e),
        })
}

/// A tonic request carrying `message` with the configured metadata.
fn request<T>(message: T, config: &GrpcClientConfig) -> Result<tonic::Request<T>, GrpcClientError> {
    let mut request = tonic::Request::new(message);
    let metadata = request.metadata_mut();
    for (k, v) in &config.headers {
        let key = tonic::metadata::MetadataKey::from_bytes(k.to_ascii_lowercase().as_bytes())
            .map_err(|_| GrpcClientError::Request(format!("bad metadata name {k:?}")))?;
        let value = v
            .parse()
            .map_err(|_| GrpcClientError::Request(format!("bad value for metadata {k}")))?;
        metadata.insert(key, value);
    }
    if let Ok(value) = config.form.name().parse() {
        metadata.insert(ENCODING_KEY, value);
    }
    Ok(request)
}

fn refused(url: &str, status: &tonic::Status) -> GrpcClientError {
    GrpcClientError::Connect {
        url: url.to_owned(),
        error: format!("{:?}: {}", status.code(), status.message()),
    }
}

/// Opens a `Connect` stream to the MCP gRPC service at `url`: the channels the engine uses,
/// and the link that ends the stream.
///
/// # Errors
/// [`GrpcClientError`] when the connection or the call does not succeed.
pub async fn connect(
    url: &str,
    config: GrpcClientConfig,
) -> Result<(Channels, GrpcLink), GrpcClientError> {
    let channel = channel(url, &config).await?;
    let (env_tx, env_rx) = mpsc::channel::<Envelope>(oxmcp_transport::stdio::QUEUE_DEPTH);
    let call = request(ReceiverStream::new(env_rx), &config)?;
    let mut grpc = tonic::client::Grpc::new(channel).max_decoding_message_size(config.max_message);
    grpc.ready().await.map_err(|e| GrpcClientError::Connect {
        url: url.to_owned(),
        error: crate::error_chain(&e),
    })?;
    let path = http::uri::PathAndQuery::from_static(CONNECT_PATH);
    let limits = DecodeLimits::for_bytes(config.max_message);
    let answers = tokio::time::timeout(
        config.connect_timeout,
        grpc.streaming(call, path, codec(limits)),
    )
    .await
    .map_err(|_| GrpcClientError::Connect {
        url: url.to_owned(),
        error: format!("no answer within {:?}", config.connect_timeout),
    })?
    .map_err(|s| refused(url, &s))?
    .into_inner();
    let (in_tx, in_rx) = mpsc::channel(oxmcp_transport::stdio::QUEUE_DEPTH);
    let (out_tx, out_rx) = mpsc::channel(oxmcp_transport::stdio::QUEUE_DEPTH);
    let (stop_tx, stop_rx) = oneshot::channel();
    let (present_tx, presents) = mpsc::channel(4);
    let done = tokio::spawn(pump(
        answers,
        in_tx,
        out_rx,
        env_tx,
        (stop_rx, presents),
        config.form,
    ));
    Ok((
        Channels {
            incoming: in_rx,
            outgoing: out_tx,
        },
        GrpcLink {
            stop: Some(stop_tx),
            done: Some(done),
            reauthorizer: Reauthorizer::new(present_tx),
        },
    ))
}

/// Moves messages both ways until the server ends the stream; `control` is the link's stop
/// signal and the fresh tokens to present.
async fn pump(
    mut answers: tonic::Streaming<Envelope>,
    in_tx: mpsc::Sender<Inbound>,
    mut out_rx: mpsc::Receiver<Outbound>,
    env_tx: mpsc::Sender<Envelope>,
    control: (oneshot::Receiver<()>, mpsc::Receiver<Presented>),
    form: Form,
) {
    let (mut stop, mut presents) = control;
    let waiting = Waiting::default();
    let mut env_tx = Some(env_tx);
    loop {
        tokio::select! {
            answer = answers.message() => match answer {
                Ok(Some(envelope)) => {
                    if !hand_on(envelope, &waiting, &in_tx).await {
                        break;
                    }
                }
                Ok(None) => break,
                Err(status) => {
                    tracing::warn!("the gRPC stream ended: {:?}: {}", status.code(), status.message());
                    break;
                }
            },
            out = out_rx.recv(), if env_tx.is_some() => match out {
                Some(out) => {
                    let Some(line) = out.line() else { continue };
                    let sent = match &env_tx {
                        Some(tx) => tx.send(from_json(line, form)).await.is_ok(),
                        None => false,
                    };
                    if !sent {
                        break;
                    }
                }
                // Our side is done: half-close, and keep reading what the server still says.
                None => env_tx = None,
            },
            Some(presented) = presents.recv(), if env_tx.is_some() => {
                let line = waiting.sent(presented);
                if let Some(tx) = &env_tx
                    && tx.send(from_json(&line, form)).await.is_err()
                {
                    break;
                }
            }
            _ = &mut stop, if env_tx.is_some() => env_tx = None,
        }
    }
    // Dropping `in_tx` ends the engine's input: requests still waiting fail.
}

/// One 2026-07-28 request through the unary `Call` method: the JSON of its response.
///
/// # Errors
/// [`GrpcClientError`] when the connection or the call fails (a JSON-RPC error is an
/// answer, not an error).
pub async fn call(
    url: &str,
    message: &serde_json::Value,
    config: &GrpcClientConfig,
) -> Result<serde_json::Value, GrpcClientError> {
    let channel = channel(url, config).await?;
    let mut grpc = tonic::client::Grpc::new(channel).max_decoding_message_size(config.max_message);
    grpc.ready().await.map_err(|e| GrpcClientError::Connect {
        url: url.to_owned(),
        error: crate::error_chain(&e),
    })?;
    let envelope = from_json(&message.to_string(), config.form);
    let path = http::uri::PathAndQuery::from_static(CALL_PATH);
    let answer = grpc
        .unary(
            request(envelope, config)?,
            path,
            codec(DecodeLimits::for_bytes(config.max_message)),
        )
        .await
        .map_err(|s| refused(url, &s))?
        .into_inner();
    let bytes = to_json(answer).map_err(|e| GrpcClientError::Connect {
        url: url.to_owned(),
        error: e.to_string(),
    })?;
    serde_json::from_slice(&bytes).map_err(|e| GrpcClientError::Connect {
        url: url.to_owned(),
        error: format!("the answer is not JSON: {e}"),
    })
}

/// Gives the engine a message from the server (or settles one of the transport's own
/// requests with it); false once the engine is gone.
async fn hand_on(envelope: Envelope, waiting: &Waiting, in_tx: &mpsc::Sender<Inbound>) -> bool {
    let inbound = match decoded_answer(&envelope) {
        Some(Ok(message)) => Inbound::decoded(message, None),
        None => match to_json(envelope) {
            Ok(bytes) if waiting.answered(&bytes) => return true,
            Ok(bytes) => Inbound::Frame(bytes),
            Err(e) => {
                tracing::warn!("the gRPC server sent an unusable envelope: {e}");
                return true;
            }
        },
        Some(Err(e)) => {
            tracing::warn!("the gRPC server sent an unusable envelope: {e}");
            return true;
        }
    };
    in_tx.send(inbound).await.is_ok()
}

/// A plain result in protobuf to one of the engine's requests, decoded: its result written
/// as raw JSON ([`oxmcp_proto::plain_result`]), so that the engine does not scan its
/// text for the end of the result before the caller reads it. Only for a number id (the
/// engine's; the transport's own requests, [`Waiting`], have string ids); `None` for any
/// other envelope, which goes to the engine as its JSON text.
fn decoded_answer(
    envelope: &Envelope,
) -> Option<Result<oxmcp_jsonrpc::Message, oxmcp_proto::ProtoError>> {
    let Some(oxmcp_proto::envelope::Body::Message(m)) = &envelope.body else {
        return None;
    };
    let Some(oxmcp_proto::id::Kind::Number(n)) = m.id.as_ref().and_then(|id| id.kind.as_ref())
    else {
        return None;
    };
    let result = oxmcp_proto::plain_result(m)?;
    Some(result.map(|result| {
        oxmcp_jsonrpc::Message::Response(oxmcp_jsonrpc::Response {
            id: Some(oxmcp_jsonrpc::RequestId::Number(*n)),
            outcome: Ok(result),
        })
    }))
}
