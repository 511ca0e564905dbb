//! [`Client`]: connect, handshake, typed calls, shutdown.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use mcp_engine::{
    CallError, EngineConfig, HandlerResult, Peer, RequestContext, RequestOptions, Service,
};
use mcp_jsonrpc::{ErrorCode, ErrorObject, Notification, RawJson, Request, parse_params, to_raw};
use mcp_transport::{ChildConfig, ChildProcess, Exit};
use mcp_types::methods::{self, Request as RequestMethod};
use mcp_types::{
    CallToolParams, CallToolResult, ClientCapabilities, CompleteParams, CompleteResult,
    ElicitParams, EmptyParams, EmptyResult, GetPromptParams, GetPromptResult, Implementation,
    InitializeParams, InitializeResult, JsonObject, ListChangedCapability, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
    LoggingMessageParams, PaginatedParams, ProtocolVersion, ReadResourceResult, ResourceUriParams,
    ServerCapabilities, SetLevelParams, Tool, apply_schema_defaults,
};
use mcp_types::{DiscoverResult, meta_keys};
use serde_json::Value;
use tokio::sync::{Mutex, mpsc};
use tokio::task::JoinHandle;

use crate::handler::{ClientHandlers, ServerEvent};

/// Errors connecting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The server process could not be started.
    #[error(transparent)]
    Spawn(#[from] mcp_transport::ChildError),
    /// The handshake failed.
    #[error("initialize failed")]
    Initialize(#[from] CallError),
    /// The server answered with a version we do not speak.
    #[error("the server chose protocol version {0:?}, which this client does not support")]
    Version(String),
}

/// Client settings.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Which protocol era to speak.
    pub era: EraChoice,
    /// How failed calls of safe methods are retried.
    pub retry: crate::retry::RetryPolicy,
    /// Our name and version.
    pub info: Implementation,
    /// The version we ask for.
    pub protocol_version: ProtocolVersion,
    /// Default options for requests.
    pub request: RequestOptions,
    /// Message loop settings.
    pub engine: EngineConfig,
    /// Child process settings (stdio). The child's environment is by default a small safe set
    /// from ours (`PATH`, `HOME`, `LANG`, ...; see [`mcp_transport::env::SAFE_VARS`]), not all
    /// of it: add what the server needs with `child.env.var(..)`, or use
    /// [`mcp_transport::ChildEnv::inherit_all`].
    pub child: ChildConfig,
    /// Most pages [`Client::list_tools`] and the other `list_all_*` methods request before
    /// they give up with [`CallError::Protocol`] (they also stop when the server repeats a
    /// cursor). Default 1,000.
    pub max_pages: usize,
}

/// Most `input_required` rounds a single call goes through before it fails.
const MAX_INPUT_ROUNDS: usize = 8;

/// Which protocol era a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EraChoice {
    /// The `initialize` handshake (2024-11-05 .. 2025-11-25).
    #[default]
    Legacy,
    /// 2026-07-28 only: self-describing requests, no handshake.
    Modern,
    /// Probe with `server/discover`; speak 2026-07-28 if the server does, else fall back to
    /// the handshake. Either way the same handlers answer sampling, elicitation and roots:
    /// as server-to-client requests on a legacy session, as `input_required` rounds (retried
    /// for the caller, at most 8 rounds) in 2026-07-28.
    Auto,
}

/// The era in use.
#[derive(Debug)]
enum Active {
    Legacy,
    Modern {
        meta: JsonObject,
        log_level: std::sync::Mutex<Option<LoggingLevel>>,
    },
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            era: EraChoice::Legacy,
            retry: crate::retry::RetryPolicy::default(),
            info: Implementation::new("mcp-rs-client", env!("CARGO_PKG_VERSION")),
            protocol_version: ProtocolVersion::LATEST_LEGACY,
            request: RequestOptions::default(),
            engine: EngineConfig::default(),
            child: ChildConfig::default(),
            max_pages: 1000,
        }
    }
}

/// Open `subscriptions/listen` streams by subscription id (the listen request's id).
type Subscriptions =
    Arc<std::sync::Mutex<std::collections::HashMap<String, mpsc::Sender<ServerEvent>>>>;

type ListCache = Arc<std::sync::Mutex<ListPages>>;

/// Cached list pages (2026-07-28 cacheable results), by method and cursor, until `ttlMs`.
#[derive(Debug, Default)]
struct ListPages {
    pages: std::collections::HashMap<(&'static str, Option<String>), (tokio::time::Instant, Value)>,
}

impl ListPages {
    fn get(&self, method: &'static str, cursor: &Option<String>) -> Option<Value> {
        let (until, v) = self.pages.get(&(method, cursor.clone()))?;
        (tokio::time::Instant::now() < *until).then(|| v.clone())
    }

    fn forget(&mut self, methods: &[&str]) {
        self.pages.retain(|(m, _), _| !methods.contains(m));
    }
}

struct ClientService {
    handlers: ClientHandlers,
    subscriptions: Subscriptions,
    /// Pages are dropped when the server says their list changed.
    list_cache: ListCache,
}

fn encode<T: serde::Serialize>(v: &T) -> HandlerResult {
    to_raw(v).map_err(|e| ErrorObject::internal(format!("could not encode the result: {e}")))
}

/// A server notification as a typed event.
fn event_of(n: Notification) -> ServerEvent {
    let params: Value = n
        .params
        .as_deref()
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or(Value::Null);
    match n.method.as_str() {
        "notifications/message" => {
            match serde_json::from_value::<LoggingMessageParams>(params.clone()) {
                Ok(p) => ServerEvent::Log(p),
                Err(_) => ServerEvent::Other {
                    method: n.method,
                    params,
                },
            }
        }
        "notifications/tools/list_changed" => ServerEvent::ToolsChanged,
        "notifications/prompts/list_changed" => ServerEvent::PromptsChanged,
        "notifications/resources/list_changed" => ServerEvent::ResourcesChanged,
        "notifications/resources/updated" => match params.get("uri").and_then(Value::as_str) {
            Some(uri) => ServerEvent::ResourceUpdated(uri.to_owned()),
            None => ServerEvent::Other {
                method: n.method,
                params,
            },
        },
        _ => ServerEvent::Other {
            method: n.method,
            params,
        },
    }
}

/// Answers a server request (or a 2026-07-28 input request) with the registered handlers.
async fn answer(h: ClientHandlers, method: String, params: Option<RawJson>) -> HandlerResult {
    let params = params.as_deref();
    match method.as_str() {
        "ping" => encode(&EmptyResult::default()),
        "sampling/createMessage" if h.sampling.is_some() => {
            let p = parse_params(params)?;
            let f = h
                .sampling
                .as_ref()
                .ok_or_else(|| ErrorObject::method_not_found(&method))?;
            encode(&f(p).await?)
        }
        "elicitation/create" if h.elicitation.is_some() => {
            let p: ElicitParams = parse_params(params)?;
            if p.mode.as_deref() == Some("url") && !h.url_elicitation {
                return Err(ErrorObject::invalid_params(
                    "URL-mode elicitation is not supported",
                ));
            }
            let schema = p.requested_schema.clone();
            let f = h
                .elicitation
                .as_ref()
                .ok_or_else(|| ErrorObject::method_not_found(&method))?;
            let mut result = f(p).await?;
            if let (Some(schema), Some(content)) = (&schema, result.content.as_mut()) {
                apply_schema_defaults(schema, content);
            }
            encode(&result)
        }
        "roots/list" if h.roots.is_some() => {
            let f = h
                .roots
                .as_ref()
                .ok_or_else(|| ErrorObject::method_not_found(&method))?;
            encode(&f().await?)
        }
        _ => Err(ErrorObject::method_not_found(&method)),
    }
}

impl Service for ClientService {
    fn call(&self, req: Request, _ctx: RequestContext) -> BoxFuture<'static, HandlerResult> {
        Box::pin(answer(self.handlers.clone(), req.method, req.params))
    }

    fn notify(&self, n: Notification, _peer: &Peer) {
        let stale: &[&str] = match n.method.as_str() {
            "notifications/tools/list_changed" => &["tools/list"],
            "notifications/prompts/list_changed" => &["prompts/list"],
            "notifications/resources/list_changed" => {
                &["resources/list", "resources/templates/list"]
            }
            _ => &[],
        };
        if !stale.is_empty() {
            self.list_cache
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .forget(stale);
        }
        // Notifications of a subscription go to its stream.
        let sub = n
            .params
            .as_deref()
            .filter(|p| p.get().contains(meta_keys::SUBSCRIPTION_ID))
            .and_then(|p| {
                let v: Value = serde_json::from_str(p.get()).ok()?;
                Some(match &v["_meta"][meta_keys::SUBSCRIPTION_ID] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
            });
        if let Some(id) = sub {
            let subs = self
                .subscriptions
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(tx) = subs.get(&id).cloned() {
                drop(subs);
                if tx.try_send(event_of(n)).is_err() {
                    tracing::warn!(subscription = %id, "a subscription's receiver is full or gone; event dropped");
                }
                return;
            }
        }
        let Some(events) = &self.handlers.events else {
            return;
        };
        let event = event_of(n);
        events(event);
    }
}

/// A connected, initialized MCP client.
pub struct Client {
    peer: Peer,
    handlers: ClientHandlers,
    subscriptions: Subscriptions,
    list_cache: ListCache,
    init: InitializeResult,
    version: ProtocolVersion,
    active: Active,
    options: RequestOptions,
    retry: crate::retry::RetryPolicy,
    /// [`ClientConfig::max_pages`].
    pub(crate) max_pages: usize,
    /// Tools known to be safe to repeat (read-only or idempotent), from `list_tools`.
    safe_tools: std::sync::Mutex<std::collections::HashSet<String>>,
    child: Mutex<Option<ChildProcess>>,
    engine: Option<JoinHandle<()>>,
    /// Cancelled when the connection's message loop has ended (the server went away).
    ended: tokio_util::sync::CancellationToken,
}

/// A `subscriptions/listen` stream: typed notifications until dropped.
#[derive(Debug)]
pub struct Subscription {
    rx: mpsc::Receiver<ServerEvent>,
    task: JoinHandle<()>,
    key: String,
    subscriptions: Subscriptions,
}

impl Subscription {
    /// The next notification; `None` once the subscription has ended.
    pub async fn next(&mut self) -> Option<ServerEvent> {
        self.rx.recv().await
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        // Dropping the request sends notifications/cancelled, which ends it on the server.
        self.task.abort();
        self.subscriptions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.key);
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server", &self.init.server_info)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// Whether an UnsupportedProtocolVersion error lists 2026-07-28 as supported.
fn lists_our_version(e: &CallError) -> bool {
    e.rpc().is_some_and(|err| {
        err.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
            && err
                .data
                .as_ref()
                .and_then(|d| d.get("supported"))
                .and_then(Value::as_array)
                .is_some_and(|vs| {
                    vs.iter()
                        .any(|v| v == ProtocolVersion::V2026_07_28.as_str())
                })
    })
}

/// After a failed `server/discover` probe: whether to fall back to the handshake. A modern
/// error means a modern server; only if it lists a legacy version we speak do we fall back.
fn falls_back(e: &CallError) -> bool {
    let err = match e {
        CallError::Rpc(err) => err,
        // An answer that is not a discover result: not a modern server.
        CallError::Decode(_) | CallError::Protocol(_) => return true,
        // No answer to judge by.
        _ => return false,
    };
    match err.code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION => err
            .data
            .as_ref()
            .and_then(|d| d.get("supported"))
            .and_then(Value::as_array)
            .is_some_and(|vs| {
                vs.iter()
                    .filter_map(Value::as_str)
                    .filter_map(ProtocolVersion::parse)
                    .any(ProtocolVersion::is_legacy)
            }),
        ErrorCode::MISSING_CLIENT_CAPABILITY | ErrorCode::HEADER_MISMATCH => false,
        _ => true,
    }
}

/// Why a tool's `x-mcp-header` annotations are invalid, if they are (2026-07-28: each must be a
/// non-empty header token, unique case-insensitively, on a string, integer or boolean
/// property). [`Client::list_tools`] leaves such tools out; callers that read pages themselves
/// can do the same.
pub fn invalid_header_annotation(tool: &Tool) -> Option<String> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    let mut seen = std::collections::HashSet::new();
    let props = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)?;
    for (prop, schema) in props {
        let Some(h) = schema.get("x-mcp-header") else {
            continue;
        };
        let Some(h) = h.as_str() else {
            return Some(format!("{prop}: not a string"));
        };
        if h.is_empty() || !h.chars().all(token) {
            return Some(format!("{prop}: {h:?} is not a header name token"));
        }
        if !seen.insert(h.to_ascii_lowercase()) {
            return Some(format!("{prop}: {h:?} is used twice"));
        }
        let ty = schema.get("type").and_then(Value::as_str).unwrap_or("");
        // Integer, string and boolean only: `number` is excluded by the spec.
        if !matches!(ty, "string" | "integer" | "boolean") {
            return Some(format!(
                "{prop}: x-mcp-header on a {ty:?} property (integer, string or boolean only)"
            ));
        }
    }
    None
}

fn capabilities_of(h: &ClientHandlers) -> ClientCapabilities {
    let mut caps = ClientCapabilities::default();
    if h.sampling.is_some() {
        caps.sampling = Some(JsonObject::new());
    }
    if h.elicitation.is_some() {
        let mut e = JsonObject::new();
        e.insert("form".to_owned(), Value::Object(JsonObject::new()));
        if h.url_elicitation {
            e.insert("url".to_owned(), Value::Object(JsonObject::new()));
        }
        caps.elicitation = Some(e);
    }
    if h.roots.is_some() {
        caps.roots = Some(ListChangedCapability {
            list_changed: Some(true),
            ..Default::default()
        });
    }
    caps
}

impl Client {
    /// Connects over a transport's channels and performs the `initialize` handshake.
    ///
    /// # Errors
    /// [`ConnectError`] if the handshake fails.
    pub async fn connect(
        incoming: mpsc::Receiver<mcp_jsonrpc::Inbound>,
        outgoing: mpsc::Sender<mcp_jsonrpc::Outbound>,
        handlers: ClientHandlers,
        config: ClientConfig,
    ) -> Result<Client, ConnectError> {
        let peer = Peer::new(outgoing);
        let capabilities = capabilities_of(&handlers);
        let subscriptions: Subscriptions = Arc::default();
        let list_cache: ListCache = Arc::default();
        let service = Arc::new(ClientService {
            handlers: handlers.clone(),
            subscriptions: subscriptions.clone(),
            list_cache: list_cache.clone(),
        });
        let ended = tokio_util::sync::CancellationToken::new();
        let engine = {
            let ended = ended.clone();
            let run = mcp_engine::run(peer.clone(), incoming, service, config.engine.clone());
            tokio::spawn(async move {
                run.await;
                ended.cancel();
            })
        };
        if config.era != EraChoice::Legacy {
            let mut meta = JsonObject::new();
            meta.insert(
                meta_keys::PROTOCOL_VERSION.to_owned(),
                Value::from(ProtocolVersion::V2026_07_28.as_str()),
            );
            meta.insert(
                meta_keys::CLIENT_INFO.to_owned(),
                serde_json::to_value(&config.info).map_err(CallError::from)?,
            );
            meta.insert(
                meta_keys::CLIENT_CAPABILITIES.to_owned(),
                serde_json::to_value(&capabilities).map_err(CallError::from)?,
            );
            let discover = serde_json::json!({ "_meta": meta });
            let mut probe: Result<DiscoverResult, CallError> = peer
                .request_as("server/discover", &discover, &config.request)
                .await;
            // A -32022 that lists our version asks for a retry, not a fallback.
            if probe.as_ref().err().is_some_and(lists_our_version) {
                probe = peer
                    .request_as("server/discover", &discover, &config.request)
                    .await;
            }
            match probe {
                Ok(d)
                    if d.supported_versions
                        .iter()
                        .any(|v| v == ProtocolVersion::V2026_07_28.as_str()) =>
                {
                    let server_info = d
                        .meta
                        .as_ref()
                        .and_then(|m| m.get(meta_keys::SERVER_INFO))
                        .and_then(|v| serde_json::from_value(v.clone()).ok())
                        .unwrap_or_default();
                    let init = InitializeResult {
                        protocol_version: ProtocolVersion::V2026_07_28.as_str().to_owned(),
                        capabilities: d.capabilities,
                        server_info,
                        instructions: d.instructions,
                        ..InitializeResult::default()
                    };
                    return Ok(Client {
                        peer,
                        handlers,
                        subscriptions,
                        list_cache,
                        init,
                        version: ProtocolVersion::V2026_07_28,
                        active: Active::Modern {
                            meta,
                            log_level: std::sync::Mutex::new(None),
                        },
                        options: config.request,
                        retry: config.retry,
                        max_pages: config.max_pages,
                        safe_tools: Default::default(),
                        child: Mutex::new(None),
                        engine: Some(engine),
                        ended,
                    });
                }
                // A modern server that does not speak our version, or a modern-only client.
                Ok(d) if config.era == EraChoice::Modern => {
                    return Err(ConnectError::Version(d.supported_versions.join(", ")));
                }
                Err(e) if config.era == EraChoice::Modern || !falls_back(&e) => {
                    return Err(ConnectError::Initialize(e));
                }
                // Anything else identifies a legacy server: fall back to the handshake.
                _ => tracing::debug!("server/discover failed; falling back to initialize"),
            }
        }
        let params = InitializeParams {
            protocol_version: config.protocol_version.as_str().to_owned(),
            capabilities,
            client_info: config.info.clone(),
            ..InitializeParams::default()
        };
        let init: InitializeResult = peer
            .request::<methods::Initialize>(&params, &config.request)
            .await?;
        let Some(version) =
            ProtocolVersion::parse(&init.protocol_version).filter(|v| v.is_legacy())
        else {
            return Err(ConnectError::Version(init.protocol_version));
        };
        peer.notify::<methods::Initialized>(&EmptyParams::default())
            .await?;
        Ok(Client {
            peer,
            handlers,
            subscriptions,
            list_cache,
            init,
            version,
            active: Active::Legacy,
            options: config.request,
            retry: config.retry,
            max_pages: config.max_pages,
            safe_tools: Default::default(),
            child: Mutex::new(None),
            engine: Some(engine),
            ended,
        })
    }

    /// Starts `program args...` as a child process and connects to it over stdio. The child
    /// gets the environment `config.child.env` describes: by default only the safe set (no
    /// API keys or tokens from ours).
    ///
    /// # Errors
    /// [`ConnectError`] if it cannot be started or the handshake fails.
    pub async fn spawn<S: AsRef<std::ffi::OsStr>>(
        program: &str,
        args: &[S],
        handlers: ClientHandlers,
        config: ClientConfig,
    ) -> Result<Client, ConnectError> {
        let (mut child, io) = ChildProcess::spawn(program, args, config.child.clone())?;
        match Client::connect(io.incoming, io.outgoing, handlers, config).await {
            Ok(client) => {
                *client.child.lock().await = Some(child);
                Ok(client)
            }
            Err(e) => {
                let _ = child.shutdown().await;
                Err(e)
            }
        }
    }

    /// The `initialize` result (server info, capabilities, instructions).
    pub fn server(&self) -> &InitializeResult {
        &self.init
    }

    /// The server's capabilities.
    pub fn server_capabilities(&self) -> &ServerCapabilities {
        &self.init.capabilities
    }

    /// The negotiated version.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.version
    }

    /// The underlying connection.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// The child server's pid, when it runs as a child.
    pub async fn child_pid(&self) -> Option<u32> {
        self.child.lock().await.as_ref().and_then(ChildProcess::id)
    }

    fn require(&self, present: bool, what: &str) -> Result<(), CallError> {
        if present {
            Ok(())
        } else {
            Err(CallError::Protocol(format!(
                "the server does not support {what}"
            )))
        }
    }

    async fn call<R: RequestMethod>(&self, params: &R::Params) -> Result<R::Result, CallError> {
        self.request_with::<R>(params, &self.options).await
    }

    /// Sends a typed request; in the 2026-07-28 era its `_meta` describes us.
    async fn request_with<R: RequestMethod>(
        &self,
        params: &R::Params,
        options: &RequestOptions,
    ) -> Result<R::Result, CallError> {
        let retry = crate::retry::safe_method(R::METHOD);
        self.retrying(retry, options, |o| self.request_once::<R>(params, o))
            .await
    }

    /// Runs `attempt` until it succeeds, fails in a way that is not retried, or the policy's
    /// attempts are used up; waits the backoff (or the server's Retry-After) in between.
    async fn retrying<T, F, Fut>(
        &self,
        retry: bool,
        options: &RequestOptions,
        mut attempt: F,
    ) -> Result<T, CallError>
    where
        F: FnMut(RequestOptions) -> Fut,
        Fut: Future<Output = Result<T, CallError>>,
    {
        let policy = &self.retry;
        let mut retries = 0u32;
        loop {
            let mut opts = options.clone();
            if let Some(t) = policy.attempt_timeout {
                opts.timeout = t;
            }
            match attempt(opts).await {
                Err(e) if retry && retries + 1 < policy.max_attempts => {
                    let Some(after) = policy.retryable(&e) else {
                        return Err(e);
                    };
                    let wait = after.unwrap_or_else(|| policy.backoff(retries));
                    tracing::debug!(attempt = retries + 1, ?wait, "retrying after: {e}");
                    tokio::time::sleep(wait).await;
                    retries += 1;
                }
                other => return other,
            }
        }
    }

    async fn request_once<R: RequestMethod>(
        &self,
        params: &R::Params,
        options: RequestOptions,
    ) -> Result<R::Result, CallError> {
        let options = &options;
        let Active::Modern { meta, log_level } = &self.active else {
            return self.peer.request::<R>(params, options).await;
        };
        let mut value = serde_json::to_value(params)?;
        if !value.is_object() {
            value = Value::Object(JsonObject::new());
        }
        if let Value::Object(p) = &mut value {
            let m = p
                .entry("_meta")
                .or_insert_with(|| Value::Object(JsonObject::new()));
            if let Value::Object(m) = m {
                for (k, v) in meta {
                    m.insert(k.clone(), v.clone());
                }
                let level = *log_level
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Some(level) = level {
                    m.insert(
                        meta_keys::LOG_LEVEL.to_owned(),
                        serde_json::to_value(level)?,
                    );
                }
            }
        }
        // Multi round-trip: answer input_required with our handlers and retry, a bounded
        // number of times.
        for _ in 0..=MAX_INPUT_ROUNDS {
            let raw = self
                .peer
                .request_raw(R::METHOD, value.clone(), options)
                .await?;
            let result: Value = serde_json::from_str(raw.get())?;
            if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
                return Ok(serde_json::from_value(result)?);
            }
            let mut responses = JsonObject::new();
            if let Some(Value::Object(requests)) = result.get("inputRequests") {
                for (key, request) in requests {
                    let method = request
                        .get("method")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    let params = match request.get("params") {
                        Some(p) => Some(to_raw(p)?),
                        None => None,
                    };
                    let answer = answer(self.handlers.clone(), method, params)
                        .await
                        .map_err(CallError::Rpc)?;
                    responses.insert(key.clone(), serde_json::from_str(answer.get())?);
                }
            }
            if let Value::Object(p) = &mut value {
                p.insert("inputResponses".to_owned(), Value::Object(responses));
                match result.get("requestState") {
                    Some(state) => p.insert("requestState".to_owned(), state.clone()),
                    None => p.remove("requestState"),
                };
            }
        }
        Err(CallError::Protocol(format!(
            "the server asked for input more than {MAX_INPUT_ROUNDS} times; giving up"
        )))
    }

    /// Opens a `subscriptions/listen` stream (2026-07-28) for the notifications in `filter`.
    /// The first event is the server's acknowledgement (`ServerEvent::Other` with method
    /// `notifications/subscriptions/acknowledged`); dropping the [`Subscription`] cancels it.
    ///
    /// # Errors
    /// [`CallError::Protocol`] on a legacy session (use `subscribe` and list-changed events).
    pub fn listen(&self, filter: mcp_types::ListenFilter) -> Result<Subscription, CallError> {
        let Active::Modern { meta, .. } = &self.active else {
            return Err(CallError::Protocol(
                "subscriptions/listen is 2026-07-28 only; on a legacy session use subscribe and list_changed events".into(),
            ));
        };
        let id = self.peer.reserve_id();
        let key = id.to_string();
        let (tx, rx) = mpsc::channel(256);
        self.subscriptions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key.clone(), tx);
        let params = serde_json::json!({ "_meta": meta, "notifications": filter });
        let peer = self.peer.clone();
        // A subscription lasts as long as the caller keeps it: no inactivity timeout.
        let forever = Duration::from_secs(365 * 24 * 3600);
        let options = RequestOptions::default()
            .timeout(forever)
            .max_total(forever);
        let task = tokio::spawn(async move {
            let _ = peer
                .request_raw_with_id(id, "subscriptions/listen", params, &options)
                .await;
        });
        Ok(Subscription {
            rx,
            task,
            key,
            subscriptions: self.subscriptions.clone(),
        })
    }

    /// Whether this client speaks 2026-07-28 with its server.
    pub fn is_modern(&self) -> bool {
        matches!(self.active, Active::Modern { .. })
    }

    /// One page of a paginated list method the server must have declared.
    async fn page<R: RequestMethod<Params = PaginatedParams>>(
        &self,
        supported: bool,
        what: &str,
        cursor: Option<String>,
    ) -> Result<R::Result, CallError> {
        self.require(supported, what)?;
        if let Some(v) = self
            .list_cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(R::METHOD, &cursor)
        {
            return Ok(serde_json::from_value(v)?);
        }
        let result = self
            .call::<R>(&PaginatedParams {
                cursor: cursor.clone(),
                ..Default::default()
            })
            .await?;
        // Cacheable results (2026-07-28) may be reused for ttlMs.
        let value = serde_json::to_value(&result)?;
        if let Some(ms) = value
            .get("ttlMs")
            .and_then(Value::as_u64)
            .filter(|ms| *ms > 0)
        {
            let until = tokio::time::Instant::now() + Duration::from_millis(ms);
            let mut cache = self
                .list_cache
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            cache.pages.insert((R::METHOD, cursor), (until, value));
        }
        Ok(result)
    }

    fn supports_subscribe(&self) -> bool {
        if self.is_modern() {
            return false; // replaced by subscriptions/listen in 2026-07-28
        }
        let resources = self.init.capabilities.resources.as_ref();
        resources.and_then(|r| r.subscribe) == Some(true)
    }

    /// `ping`.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn ping(&self) -> Result<(), CallError> {
        if self.is_modern() {
            // 2026-07-28 has no ping: server/discover is the cheapest liveness check.
            return self
                .call::<methods::Discover>(&EmptyParams::default())
                .await
                .map(|_| ());
        }
        self.call::<methods::Ping>(&EmptyParams::default())
            .await
            .map(|_| ())
    }

    /// One page of `tools/list`.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn list_tools_page(
        &self,
        cursor: Option<String>,
    ) -> Result<ListToolsResult, CallError> {
        let supported = self.init.capabilities.tools.is_some();
        self.page::<methods::ListTools>(supported, "tools", cursor)
            .await
    }

    /// Every tool, following cursors (at most [`ClientConfig::max_pages`] pages). Tools whose
    /// `x-mcp-header` annotations are invalid (2026-07-28: not a non-empty header token,
    /// duplicated case-insensitively, or on a non-primitive property) are left out, with a
    /// warning: they cannot be called correctly.
    ///
    /// # Errors
    /// See [`CallError`]; [`CallError::Protocol`] if the server repeats a cursor or the list
    /// does not end within the page limit.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, CallError> {
        let all = crate::pages::all_pages("tools/list", self.max_pages, |c| async move {
            let page = self.list_tools_page(c).await?;
            Ok((page.tools, page.next_cursor))
        })
        .await?;
        {
            let mut safe = self
                .safe_tools
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for t in &all {
                if crate::retry::safe_tool(t) {
                    safe.insert(t.name.clone());
                } else {
                    safe.remove(&t.name);
                }
            }
        }
        Ok(all
            .into_iter()
            .filter(|t| match invalid_header_annotation(t) {
                Some(why) => {
                    tracing::warn!(tool = ?t.name, "ignoring a tool with an invalid x-mcp-header: {why}");
                    false
                }
                None => true,
            })
            .collect())
    }

    /// Forgets every cached list page (the next list call asks the server).
    pub fn invalidate_lists(&self) {
        self.list_cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pages
            .clear();
    }

    /// `tools/call`.
    ///
    /// # Errors
    /// See [`CallError`]. A tool that fails is `Ok` with `is_error`.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: JsonObject,
    ) -> Result<CallToolResult, CallError> {
        self.call_tool_with(name, arguments, &self.options).await
    }

    /// `tools/call` with per-request options (timeouts, progress callback).
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: JsonObject,
        options: &RequestOptions,
    ) -> Result<CallToolResult, CallError> {
        self.call_tool_retry(name, arguments, options, crate::retry::RetryChoice::IfSafe)
            .await
    }

    /// `tools/call`, saying whether a failed call may be retried (by default only tools whose
    /// annotations, seen in `list_tools`, say read-only or idempotent are).
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn call_tool_retry(
        &self,
        name: &str,
        arguments: JsonObject,
        options: &RequestOptions,
        choice: crate::retry::RetryChoice,
    ) -> Result<CallToolResult, CallError> {
        self.require(self.init.capabilities.tools.is_some(), "tools")?;
        let retry = match choice {
            crate::retry::RetryChoice::Always => true,
            crate::retry::RetryChoice::Never => false,
            crate::retry::RetryChoice::IfSafe => self
                .safe_tools
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .contains(name),
        };
        let params = CallToolParams::new(name, arguments);
        self.retrying(retry, options, |o| {
            self.request_once::<methods::CallTool>(&params, o)
        })
        .await
    }

    /// One page of `resources/list`.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn list_resources(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, CallError> {
        let supported = self.init.capabilities.resources.is_some();
        self.page::<methods::ListResources>(supported, "resources", cursor)
            .await
    }

    /// One page of `resources/templates/list`.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn list_resource_templates(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, CallError> {
        let supported = self.init.capabilities.resources.is_some();
        self.page::<methods::ListResourceTemplates>(supported, "resources", cursor)
            .await
    }

    /// `resources/read`.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, CallError> {
        self.require(self.init.capabilities.resources.is_some(), "resources")?;
        self.call::<methods::ReadResource>(&ResourceUriParams::new(uri))
            .await
    }

    /// `resources/subscribe`.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn subscribe(&self, uri: &str) -> Result<(), CallError> {
        self.require(self.supports_subscribe(), "resource subscriptions")?;
        self.call::<methods::Subscribe>(&ResourceUriParams::new(uri))
            .await
            .map(|_| ())
    }

    /// `resources/unsubscribe`.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), CallError> {
        self.require(self.supports_subscribe(), "resource subscriptions")?;
        self.call::<methods::Unsubscribe>(&ResourceUriParams::new(uri))
            .await
            .map(|_| ())
    }

    /// One page of `prompts/list`.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn list_prompts(
        &self,
        cursor: Option<String>,
    ) -> Result<ListPromptsResult, CallError> {
        let supported = self.init.capabilities.prompts.is_some();
        self.page::<methods::ListPrompts>(supported, "prompts", cursor)
            .await
    }

    /// `prompts/get`.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: std::collections::BTreeMap<String, String>,
    ) -> Result<GetPromptResult, CallError> {
        self.require(self.init.capabilities.prompts.is_some(), "prompts")?;
        let params = GetPromptParams {
            name: name.to_owned(),
            arguments: Some(arguments),
            ..Default::default()
        };
        self.call::<methods::GetPrompt>(&params).await
    }

    /// `completion/complete`.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn complete(&self, params: &CompleteParams) -> Result<CompleteResult, CallError> {
        self.require(self.init.capabilities.completions.is_some(), "completions")?;
        self.call::<methods::Complete>(params).await
    }

    /// `logging/setLevel`.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn set_log_level(&self, level: LoggingLevel) -> Result<(), CallError> {
        self.require(self.init.capabilities.logging.is_some(), "logging")?;
        if let Active::Modern { log_level, .. } = &self.active {
            // 2026-07-28: the level travels in each request's _meta.
            *log_level
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(level);
            return Ok(());
        }
        self.call::<methods::SetLevel>(&SetLevelParams { level, meta: None })
            .await
            .map(|_| ())
    }

    /// Tells the server our roots changed.
    ///
    /// # Errors
    /// [`CallError::Closed`] if the connection is gone.
    pub async fn notify_roots_changed(&self) -> Result<(), CallError> {
        self.peer
            .notify::<methods::RootsListChanged>(&EmptyParams::default())
            .await
    }

    /// Resolves when the connection has ended: the server process exited or closed its
    /// output, or the transport gave up. Outstanding requests have failed with
    /// [`CallError::Closed`] by then.
    pub async fn closed(&self) {
        self.ended.cancelled().await;
    }

    /// Whether the connection has ended (see [`Client::closed`]).
    pub fn is_closed(&self) -> bool {
        self.ended.is_cancelled()
    }

    /// Shuts down a child server (close stdin, SIGTERM, SIGKILL, as [`Client::close`]) without
    /// consuming the client, for callers that share it. Returns how the child ended; `None`
    /// when there is no child or it was already shut down.
    pub async fn shutdown_child(&self) -> Option<Exit> {
        let child = self.child.lock().await.take();
        match child {
            Some(mut c) => c.shutdown().await.ok(),
            None => None,
        }
    }

    /// Graceful shutdown: no new requests (they fail with [`CallError::ShuttingDown`]),
    /// in-flight requests get up to `deadline` to be answered, then the connection closes
    /// as in [`Client::close`]. Returns how a child server ended.
    pub async fn shutdown(self, deadline: std::time::Duration) -> Option<Exit> {
        self.peer.drain();
        if tokio::time::timeout(deadline, self.peer.wait_idle())
            .await
            .is_err()
        {
            tracing::warn!(
                pending = self.peer.pending_count(),
                "shutdown deadline passed with requests in flight; closing"
            );
        }
        self.close().await
    }

    /// Closes the connection. A child server is shut down as the spec says (close stdin,
    /// wait, SIGTERM, wait, SIGKILL, whole process group); returns how it ended.
    pub async fn close(mut self) -> Option<Exit> {
        let child = self.child.lock().await.take();
        let exit = match child {
            Some(mut c) => c.shutdown().await.ok(),
            None => None,
        };
        if let Some(engine) = self.engine.take() {
            engine.abort();
        }
        exit
    }
}
