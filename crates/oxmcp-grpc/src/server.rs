//! [`Grpc`]: the `mcp.v1.Mcp` service hosting any [`Serve`], as an axum router.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use oxmcp_engine::{Connection, EngineConfig, Serve};
use oxmcp_jsonrpc::{Inbound, Outbound};
use oxmcp_proto::{DecodeLimits, Envelope};
use parking_lot::Mutex;
use tokio::sync::{OwnedSemaphorePermit, mpsc};
use tonic::{Code, Status, Streaming};

use oxmcp_http::front::{Client, ClientTable, Held, Lease, Refusal, Refused, Watched};
use oxmcp_http::{HttpConfig, Identity, Principal};

use crate::{CALL_PATH, CONNECT_PATH, ENCODING_KEY, Form, codec, from_json, to_json};
use connect::{AbortOnDrop, open};

mod connect;

struct Inner {
    service: Arc<dyn Serve>,
    engine: EngineConfig,
    http: Arc<HttpConfig>,
    /// One permit per open `Connect` stream or `Call`: at most `max_sessions` at once.
    streams: Arc<tokio::sync::Semaphore>,
    /// Streams and calls per client, counted like sessions.
    clients: Arc<ClientTable>,
}

/// What an open stream or call holds: its place under `max_sessions` and under its client's
/// limit. Both come free when it is dropped.
struct Slot {
    _permit: OwnedSemaphorePermit,
    _held: Held,
}

/// The gRPC service `mcp.v1.Mcp` hosting one MCP service, with the checks and limits of an
/// [`HttpConfig`]: Host/Origin, the bearer check on `authorization` metadata (the token is
/// held while a `Connect` stream or a `Call` lasts, which ends `UNAUTHENTICATED` at its `exp`
/// or once a check every `token_recheck_interval` refuses it), the message size
/// limit (`max_body`), the idle timeout (`session_idle_timeout`), the most streams and calls
/// at once (`max_sessions`; `RESOURCE_EXHAUSTED` above it), the per-client limits (a
/// `Connect` stream counts as a session against `max_sessions_per_principal` /
/// `_per_address` and `client_session_rate` / `_burst`; a `Call` counts against the first
/// two while it runs; `RESOURCE_EXHAUSTED` above them) and shutdown. Cheap to clone.
#[derive(Clone)]
pub struct Grpc {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Grpc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grpc").finish_non_exhaustive()
    }
}

impl Grpc {
    /// The service for `service` with the checks and limits of `http`.
    pub fn new(service: impl Serve, http: HttpConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                engine: http.engine(service.engine_config()),
                service: Arc::new(service),
                streams: Arc::new(tokio::sync::Semaphore::new(http.max_sessions.max(1))),
                clients: Arc::new(ClientTable::default()),
                http: Arc::new(http),
            }),
        }
    }

    /// The axum router serving `Connect` and `Call`; any other gRPC method is
    /// `UNIMPLEMENTED`. Serve it over HTTP/2 ([`oxmcp_http::serve_router_with`] does), alone or
    /// beside the HTTP endpoints with [`split`].
    pub fn router(&self) -> axum::Router {
        axum::Router::new()
            .route(CONNECT_PATH, axum::routing::post(connect))
            .route(CALL_PATH, axum::routing::post(call))
            .fallback(|| async { status_response(Status::unimplemented("no such MCP method")) })
            .with_state(self.inner.clone())
    }
}

/// One router serving both: requests with `content-type: application/grpc…` go to `grpc`,
/// every other request to `http`.
pub fn split(http: axum::Router, grpc: axum::Router) -> axum::Router {
    let service = tower::service_fn(move |request: Request| {
        let grpc_call = header_str(request.headers(), axum::http::header::CONTENT_TYPE)
            .is_some_and(|t| t.starts_with("application/grpc"));
        let router = if grpc_call {
            grpc.clone()
        } else {
            http.clone()
        };
        async move {
            use tower::ServiceExt;
            router.oneshot(request).await
        }
    });
    axum::Router::new().fallback_service(service)
}

fn status_response(status: Status) -> Response {
    status.into_http::<axum::body::Body>().into_response()
}

/// The gRPC status for an HTTP refusal of the shared checks: an unknown
/// `mcp-protocol-version` is `INVALID_ARGUMENT`, the others by their HTTP status (401 keeps
/// its `www-authenticate` challenge in the metadata).
fn status_of(refusal: &Refusal) -> Status {
    if refusal.error_code() == Some(oxmcp_jsonrpc::ErrorCode::UNSUPPORTED_PROTOCOL_VERSION) {
        return Status::invalid_argument("unsupported mcp-protocol-version");
    }
    let (code, what) = match refusal.status() {
        StatusCode::UNAUTHORIZED => (Code::Unauthenticated, "authentication required"),
        StatusCode::FORBIDDEN => (Code::PermissionDenied, "refused"),
        StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE => {
            (Code::ResourceExhausted, "too many requests")
        }
        _ => (Code::InvalidArgument, "bad request"),
    };
    let mut status = Status::new(code, what);
    if let Some(challenge) = refusal.header(&header::WWW_AUTHENTICATE) {
        let text = challenge.to_str().unwrap_or_default();
        status = Status::new(code, format!("{what}: {text}"));
        if let Ok(value) = text.parse() {
            status.metadata_mut().insert("www-authenticate", value);
        }
    }
    status
}

/// Who is calling: the principal sessions belong to, the token's identity, and (on a
/// protected endpoint) the token's lease, which ends the `Connect` stream or the `Call`.
#[derive(Clone, Default)]
struct Caller {
    principal: Option<String>,
    identity: Option<Arc<Identity>>,
    lease: Option<Arc<Watched>>,
}

/// The checks of `/mcp`, on a gRPC call's headers: Host/Origin, the bearer token,
/// `mcp-protocol-version`. The caller, or the refusal.
async fn admit(inner: &Inner, parts: &mut axum::http::request::Parts) -> Result<Caller, Status> {
    // HTTP/2 carries the host as `:authority`, which hyper keeps in the URI.
    if !parts.headers.contains_key(header::HOST)
        && let Some(authority) = parts.uri.authority()
        && let Ok(value) = HeaderValue::from_str(authority.as_str())
    {
        parts.headers.insert(header::HOST, value);
    }
    oxmcp_http::front::host_checks(&inner.http, &parts.headers).map_err(|r| status_of(&r))?;
    oxmcp_http::front::authenticate(inner.http.auth.as_deref(), parts)
        .await
        .map_err(|r| status_of(&r))?;
    oxmcp_http::front::version_checks(&parts.headers).map_err(|r| status_of(&r))?;
    Ok(Caller {
        principal: parts.extensions.get::<Principal>().map(|p| p.0.clone()),
        identity: parts.extensions.get::<Arc<Identity>>().cloned(),
        lease: None,
    })
}

/// A header's value, if it is text.
fn header_str(
    headers: &axum::http::HeaderMap,
    name: impl axum::http::header::AsHeaderName,
) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The form the client asked for in `mcp-encoding`, if any.
fn chosen_form(parts: &axum::http::request::Parts) -> Result<Option<Form>, Status> {
    match header_str(&parts.headers, ENCODING_KEY) {
        None => Ok(None),
        Some(text) => Form::parse(text).map(Some).ok_or_else(|| {
            Status::invalid_argument("mcp-encoding must be \"json\" or \"protobuf\"")
        }),
    }
}

fn grpc_handler(inner: &Inner) -> tonic::server::Grpc<crate::EnvelopeCodec> {
    tonic::server::Grpc::new(codec(DecodeLimits::for_bytes(inner.http.max_body)))
        .max_decoding_message_size(inner.http.max_body)
        .max_encoding_message_size(usize::MAX)
}

/// The shared checks of both methods: the caller (with the lease of its token), the form it
/// chose, the request to hand to tonic and its slot (a `Connect` stream, `session`, is
/// admitted as a new session of its client); or the refusal as a gRPC status.
async fn admitted(
    inner: &Inner,
    request: Request,
    session: bool,
) -> Result<(Caller, Option<Form>, Request, Slot), Response> {
    let (mut parts, body) = request.into_parts();
    let mut caller = admit(inner, &mut parts).await.map_err(status_response)?;
    let chosen = chosen_form(&parts).map_err(status_response)?;
    let permit = inner.streams.clone().try_acquire_owned().map_err(|_| {
        tracing::warn!("gRPC call refused: max_sessions streams are open");
        status_response(Status::resource_exhausted(
            "too many open streams; retry later",
        ))
    })?;
    let client = Client::of(&inner.http, &parts.extensions);
    let held = Held::take(&inner.clients, &inner.http, &client, session).map_err(|refused| {
        let text = match refused {
            Refused::TooMany => "too many open streams from this client; end one first",
            Refused::TooFast(_) => "too many new streams from this client; slow down",
        };
        tracing::debug!("gRPC call refused: {text}");
        status_response(Status::resource_exhausted(text))
    })?;
    let slot = Slot {
        _permit: permit,
        _held: held,
    };
    caller.lease = Lease::open(&inner.http, &parts).map(Arc::new);
    Ok((caller, chosen, Request::from_parts(parts, body), slot))
}

async fn connect(State(inner): State<Arc<Inner>>, request: Request) -> Response {
    let (caller, chosen, request, permit) = match admitted(&inner, request, true).await {
        Ok(admitted) => admitted,
        Err(refused) => return refused,
    };
    let state = inner.clone();
    // The service is called once; the slot goes to the stream it opens.
    let permit = Arc::new(Mutex::new(Some(permit)));
    let service = tower::service_fn(move |call: tonic::Request<Streaming<Envelope>>| {
        let permit = permit.lock().take();
        let stream = open(
            state.clone(),
            caller.clone(),
            chosen,
            call.into_inner(),
            permit,
        );
        async move { Ok::<_, Status>(tonic::Response::new(stream)) }
    });
    grpc_handler(&inner)
        .streaming(service, request)
        .await
        .map(axum::body::Body::new)
}

async fn call(State(inner): State<Arc<Inner>>, request: Request) -> Response {
    let (caller, chosen, request, permit) = match admitted(&inner, request, false).await {
        Ok(admitted) => admitted,
        Err(refused) => return refused,
    };
    let state = inner.clone();
    let service = tower::service_fn(move |call: tonic::Request<Envelope>| {
        let state = state.clone();
        let caller = caller.clone();
        async move {
            let envelope = call.into_inner();
            let form = chosen.or(Form::of(&envelope)).unwrap_or_default();
            unary(&state, caller, envelope, form)
                .await
                .map(tonic::Response::new)
        }
    });
    let response = grpc_handler(&inner)
        .unary(service, request)
        .await
        .map(axum::body::Body::new);
    drop(permit);
    response
}

/// One 2026-07-28 request through a connection of its own; its response is the answer.
async fn unary(
    inner: &Inner,
    caller: Caller,
    envelope: Envelope,
    form: Form,
) -> Result<Envelope, Status> {
    let bytes = to_json(envelope).map_err(|e| Status::invalid_argument(e.to_string()))?;
    let auth = inner.http.auth.as_deref();
    if let Some(refusals) =
        oxmcp_http::front::frame_refusals(auth, caller.identity.as_deref(), &bytes)
        && let Some(first) = refusals.first()
    {
        return Ok(from_json(first, form));
    }
    let Ok(message) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        let error = serde_json::json!({
            "jsonrpc": "2.0", "id": null,
            "error": {"code": -32700, "message": "Parse error: the message is not JSON"},
        });
        return Ok(from_json(&error.to_string(), form));
    };
    match (message.get("id"), message.get("method")) {
        (Some(id), Some(_)) if !id.is_null() => {}
        _ => {
            return Err(Status::invalid_argument(
                "Call takes one JSON-RPC request (an id and a method); use Connect for \
                 notifications, batches and sessions",
            ));
        }
    }
    let (in_tx, in_rx) = mpsc::channel(1);
    let (out_tx, mut out_rx) = mpsc::channel::<Outbound>(64);
    let engine = tokio::spawn(inner.service.serve_request(Connection {
        incoming: in_rx,
        outgoing: out_tx,
        config: inner.engine.clone(),
        principal: caller.principal,
        direct: None,
        parking: None,
        session: None,
    }));
    // A call the client gives up on, or whose token ends, stops its engine with it.
    let _guard = AbortOnDrop(engine.abort_handle());
    if in_tx.send(Inbound::Frame(bytes)).await.is_err() {
        return Err(Status::unavailable("the server is shutting down"));
    }
    drop(in_tx);
    tokio::select! {
        answer = answer_of(&mut out_rx, form) => answer,
        why = oxmcp_http::front::ended(caller.lease.as_deref()) => Err(Status::unauthenticated(
            format!("{why}; call again with a fresh token"),
        )),
    }
}

/// The engine's answer to the one request of a unary call's connection, in `form`: the
/// first response it sends (told by its kind, not by reading the line); notifications and
/// requests to the client are not part of a unary answer.
async fn answer_of(out_rx: &mut mpsc::Receiver<Outbound>, form: Form) -> Result<Envelope, Status> {
    while let Some(out) = out_rx.recv().await {
        if let Some(m) = out.message().filter(|m| m.is_response()) {
            return Ok(from_json(&m.line, form));
        }
    }
    Err(Status::internal("the request was not answered"))
}
