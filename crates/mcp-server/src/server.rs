//! [`ServerBuilder`] and [`Server`]: what is registered, and serving it on connections.

use std::collections::BTreeMap;
use std::fmt::Display;
use std::future::Future;
use std::sync::{Arc, Mutex, RwLock, Weak};

use mcp_engine::{EngineConfig, Peer};
use mcp_jsonrpc::ErrorObject;
use mcp_types::{
    CompleteParams, CompleteResult, GetPromptResult, Implementation, JsonObject,
    ListChangedCapability, Prompt, ReadResourceResult, Resource, ResourceContents,
    ResourceTemplate, ResourcesCapability, ServerCapabilities, Tool,
};
use schemars::JsonSchema;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::context::Ctx;
use crate::handler::{
    CompletionFn, IntoCallToolResult, PromptFn, ResourceFn, TemplateFn, ToolFn, typed_tool,
};
use crate::schema::{CompiledSchema, SchemaError};
use crate::session::{Session, SessionService};
use crate::uri_template::{TemplateError, UriTemplate};

/// Why a server could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A tool's input or output schema is unusable.
    #[error("tool {tool:?}: {error}")]
    Schema {
        /// The tool.
        tool: String,
        /// Why.
        error: SchemaError,
    },
    /// A resource template does not parse.
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// Two items share a name.
    #[error("duplicate {kind} {name:?}")]
    Duplicate {
        /// Tool, prompt or resource.
        kind: &'static str,
        /// The name.
        name: String,
    },
}

pub(crate) struct ToolEntry {
    pub(crate) tool: Tool,
    pub(crate) input: CompiledSchema,
    pub(crate) output: Option<CompiledSchema>,
    pub(crate) handler: ToolFn,
}

pub(crate) struct ResourceEntry {
    pub(crate) resource: Resource,
    pub(crate) handler: ResourceFn,
}

pub(crate) struct TemplateEntry {
    pub(crate) template: ResourceTemplate,
    pub(crate) parsed: UriTemplate,
    pub(crate) handler: TemplateFn,
}

pub(crate) struct PromptEntry {
    pub(crate) prompt: Prompt,
    pub(crate) handler: PromptFn,
}

#[derive(Default)]
pub(crate) struct Registry {
    pub(crate) tools: BTreeMap<String, Arc<ToolEntry>>,
    pub(crate) resources: BTreeMap<String, Arc<ResourceEntry>>,
    pub(crate) templates: Vec<Arc<TemplateEntry>>,
    pub(crate) prompts: BTreeMap<String, Arc<PromptEntry>>,
}

/// Cache hints on cacheable results (2026-07-28: lists and `resources/read`).
#[derive(Debug, Clone)]
pub struct CacheConfig {
    /// `ttlMs`: how long a client may reuse the result.
    pub ttl_ms: u64,
    /// `cacheScope`: who may share a cached copy.
    pub scope: mcp_types::CacheScope,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self {
            ttl_ms: 60_000,
            scope: mcp_types::CacheScope::Public,
        }
    }
}

/// Settings of a server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Serve the handshake era (2024-11-05 .. 2025-11-25).
    pub legacy: bool,
    /// Serve self-describing 2026-07-28 requests.
    pub modern: bool,
    /// Cache hints for modern (2026-07-28) results.
    pub cache: CacheConfig,
    /// Signs `requestState` of multi round-trip requests (random unless shared by instances).
    pub request_state_key: crate::mrtr::RequestStateKey,
    /// How long a `requestState` stays valid after the server issued it (default 15 min): a
    /// retry with an older one is refused with -32602.
    pub request_state_ttl: std::time::Duration,
    /// Items per page of list results.
    pub page_size: usize,
    /// Message loop settings.
    pub engine: EngineConfig,
    /// Maximum line size on stdio.
    pub max_line: usize,
    /// Resources one session may be subscribed to at once (`resources/subscribe`), and URIs
    /// one `subscriptions/listen` may name (default 1,000). One more is refused with -32602
    /// (`data.limit` says the limit) and nothing is stored.
    pub max_subscriptions: usize,
    /// The longest resource URI a request may name, in bytes (`resources/read`,
    /// `resources/subscribe`, `resources/unsubscribe`); a longer one is refused with -32602.
    /// Default 8 KiB.
    pub max_uri_len: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            legacy: true,
            modern: true,
            cache: CacheConfig::default(),
            request_state_key: crate::mrtr::RequestStateKey::random(),
            request_state_ttl: std::time::Duration::from_secs(15 * 60),
            page_size: 100,
            engine: EngineConfig {
                max_in_flight: 64,
                // JSON-RPC answers unparseable input with `"id": null`; a client never
                // answers a response, so this cannot start an error storm.
                answer_unidentified: true,
                ..EngineConfig::default()
            },
            max_line: 4 * 1024 * 1024,
            max_subscriptions: 1_000,
            max_uri_len: 8 * 1024,
        }
    }
}

pub(crate) struct Inner {
    pub(crate) info: Implementation,
    pub(crate) instructions: Option<String>,
    pub(crate) registry: RwLock<Registry>,
    pub(crate) completion: Option<CompletionFn>,
    pub(crate) logging: bool,
    pub(crate) declare: Declared,
    pub(crate) config: ServerConfig,
    pub(crate) sessions: Mutex<Vec<(Weak<Session>, Peer)>>,
    /// Changes announced to `subscriptions/listen` streams (2026-07-28).
    pub(crate) changes: tokio::sync::broadcast::Sender<Change>,
    /// Told of every resource a client starts holding a subscription to; may refuse it.
    pub(crate) on_subscribe: Option<SubscribeFn>,
    /// Told of every subscription a client stops holding.
    pub(crate) on_unsubscribe: Option<UnsubscribeFn>,
}

/// Called with the URI each time a client starts holding a subscription to a resource: a
/// legacy session's `resources/subscribe` of a URI it does not hold yet, or a 2026-07-28
/// `subscriptions/listen` naming it. An error refuses the subscription: the client gets it and
/// nothing is stored. Called while the session's state is locked: it must not block.
pub type SubscribeFn = Arc<dyn Fn(&str) -> Result<(), ErrorObject> + Send + Sync>;

/// Called with the URI each time a client stops holding a subscription that
/// [`SubscribeFn`] accepted: `resources/unsubscribe`, the end of the session's connection, or
/// the end of the `subscriptions/listen` request. Exactly once per accepted subscription, so
/// holders can be counted.
pub type UnsubscribeFn = Arc<dyn Fn(&str) + Send + Sync>;

/// A change a `subscriptions/listen` stream may want to hear about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    Tools,
    Prompts,
    Resources,
    ResourceUpdated(String),
}

/// Method families: declared up front by the builder, or served because of registrations.
#[derive(Default, Clone, Copy)]
pub(crate) struct Declared {
    pub(crate) tools: bool,
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
}

impl Inner {
    pub(crate) fn read(&self) -> std::sync::RwLockReadGuard<'_, Registry> {
        self.registry
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Registry> {
        self.registry
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Which method families are served now: declared, or something registered.
    pub(crate) fn served(&self) -> Declared {
        let reg = self.read();
        Declared {
            tools: self.declare.tools || !reg.tools.is_empty(),
            resources: self.declare.resources
                || !reg.resources.is_empty()
                || !reg.templates.is_empty(),
            prompts: self.declare.prompts || !reg.prompts.is_empty(),
        }
    }

    /// Capabilities, computed from what is registered.
    pub(crate) fn capabilities(&self) -> ServerCapabilities {
        let served = self.served();
        let listed = || ListChangedCapability {
            list_changed: Some(true),
            ..Default::default()
        };
        ServerCapabilities {
            tools: served.tools.then(listed),
            resources: served.resources.then(|| ResourcesCapability {
                subscribe: Some(true),
                list_changed: Some(true),
                ..Default::default()
            }),
            prompts: served.prompts.then(listed),
            logging: self.logging.then(JsonObject::new),
            completions: self.completion.is_some().then(JsonObject::new),
            ..Default::default()
        }
    }
}

/// Collects tools, resources, prompts and settings, then builds a [`Server`].
///
/// Capabilities are computed from what is registered: a server with no prompts does not
/// declare `prompts` and answers `prompts/list` with -32601.
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    registry: Registry,
    completion: Option<CompletionFn>,
    logging: bool,
    declare: Declared,
    config: ServerConfig,
    errors: Vec<BuildError>,
    on_subscribe: Option<SubscribeFn>,
    on_unsubscribe: Option<UnsubscribeFn>,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl ServerBuilder {
    /// A builder for a server with this name and version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            info: Implementation::new(name, version),
            instructions: None,
            registry: Registry::default(),
            completion: None,
            logging: true,
            declare: Declared::default(),
            config: ServerConfig::default(),
            errors: Vec::new(),
            on_subscribe: None,
            on_unsubscribe: None,
        }
    }

    /// Usage hints sent in the `initialize` result.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Replaces the server settings.
    pub fn config(mut self, config: ServerConfig) -> Self {
        self.config = config;
        self
    }

    /// Whether to declare and serve logging (on by default).
    pub fn logging(mut self, on: bool) -> Self {
        self.logging = on;
        self
    }

    /// Declares the tools capability even with no tool registered yet (tools added later).
    pub fn declare_tools(mut self) -> Self {
        self.declare.tools = true;
        self
    }

    /// Declares the resources capability even with no resource registered yet.
    pub fn declare_resources(mut self) -> Self {
        self.declare.resources = true;
        self
    }

    /// Declares the prompts capability even with no prompt registered yet.
    pub fn declare_prompts(mut self) -> Self {
        self.declare.prompts = true;
        self
    }

    /// Calls `f` with the URI each time a client starts holding a subscription (a gateway
    /// subscribes upstream then); an `Err` refuses it. See [`SubscribeFn`]. Subscriptions are
    /// recorded and updates delivered either way.
    pub fn on_subscribe(
        mut self,
        f: impl Fn(&str) -> Result<(), ErrorObject> + Send + Sync + 'static,
    ) -> Self {
        self.on_subscribe = Some(Arc::new(f));
        self
    }

    /// Calls `f` with the URI each time a client stops holding a subscription `on_subscribe`
    /// accepted, including when its connection ends (a gateway unsubscribes upstream once no
    /// client holds it). See [`UnsubscribeFn`].
    pub fn on_unsubscribe(mut self, f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.on_unsubscribe = Some(Arc::new(f));
        self
    }

    /// Registers a typed tool: the input schema is generated from `A` by schemars, inputs
    /// are validated against it, and an `Err` becomes a result with `isError: true`.
    pub fn tool<A, F, Fut, R, E>(self, name: &str, description: &str, f: F) -> Self
    where
        A: serde::de::DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(Ctx, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: IntoCallToolResult,
        E: Display,
    {
        let tool = Tool {
            name: name.to_owned(),
            description: Some(description.to_owned()),
            ..Tool::default()
        };
        self.typed_tool(tool, f)
    }

    /// Registers a typed tool with a full definition (title, annotations, output schema...).
    /// The input schema comes from `A`.
    pub fn typed_tool<A, F, Fut, R, E>(self, mut tool: Tool, f: F) -> Self
    where
        A: serde::de::DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(Ctx, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: IntoCallToolResult,
        E: Display,
    {
        tool.input_schema = schema_object::<A>();
        self.raw_tool(tool, typed_tool(f))
    }

    /// Registers a tool with an explicit definition and a raw-arguments handler.
    pub fn raw_tool(mut self, tool: Tool, handler: ToolFn) -> Self {
        match make_tool_entry(tool, handler) {
            Ok(entry) => {
                let name = entry.tool.name.clone();
                let dup = insert_unique(&mut self.registry.tools, "tool", name, entry);
                self.errors.extend(dup);
            }
            Err(e) => self.errors.push(e),
        }
        self
    }

    /// Registers a resource with a reader.
    pub fn resource<F, Fut>(mut self, resource: Resource, f: F) -> Self
    where
        F: Fn(Ctx, String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadResourceResult, ErrorObject>> + Send + 'static,
    {
        let uri = resource.uri.clone();
        let handler: ResourceFn = Arc::new(move |ctx, uri| Box::pin(f(ctx, uri)));
        let entry = ResourceEntry { resource, handler };
        let dup = insert_unique(&mut self.registry.resources, "resource", uri, entry);
        self.errors.extend(dup);
        self
    }

    /// Registers a resource with fixed text contents.
    pub fn text_resource(self, uri: &str, name: &str, mime: &str, text: &str) -> Self {
        let resource = Resource {
            uri: uri.to_owned(),
            name: name.to_owned(),
            mime_type: Some(mime.to_owned()),
            ..Resource::default()
        };
        let (mime, text) = (mime.to_owned(), text.to_owned());
        self.resource(resource, move |_, uri| {
            let contents = ResourceContents::text(uri, Some(&mime), text.clone());
            async move {
                Ok(ReadResourceResult {
                    contents: vec![contents],
                    ..Default::default()
                })
            }
        })
    }

    /// Registers a resource template (RFC 6570) with a reader that gets the variables.
    pub fn resource_template<F, Fut>(mut self, template: ResourceTemplate, f: F) -> Self
    where
        F: Fn(Ctx, String, BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadResourceResult, ErrorObject>> + Send + 'static,
    {
        match UriTemplate::parse(&template.uri_template) {
            Ok(parsed) => {
                let handler: TemplateFn =
                    Arc::new(move |ctx, uri, vars| Box::pin(f(ctx, uri, vars)));
                self.registry.templates.push(Arc::new(TemplateEntry {
                    template,
                    parsed,
                    handler,
                }));
            }
            Err(e) => self.errors.push(e.into()),
        }
        self
    }

    /// Registers a prompt with a renderer. Required arguments are checked before it runs.
    pub fn prompt<F, Fut>(mut self, prompt: Prompt, f: F) -> Self
    where
        F: Fn(Ctx, BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, ErrorObject>> + Send + 'static,
    {
        let name = prompt.name.clone();
        let handler: PromptFn = Arc::new(move |ctx, args| Box::pin(f(ctx, args)));
        let entry = PromptEntry { prompt, handler };
        let dup = insert_unique(&mut self.registry.prompts, "prompt", name, entry);
        self.errors.extend(dup);
        self
    }

    /// Sets the `completion/complete` provider (declares `completions`).
    pub fn completion<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Ctx, CompleteParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CompleteResult, ErrorObject>> + Send + 'static,
    {
        self.completion = Some(Arc::new(move |ctx, p| Box::pin(f(ctx, p))));
        self
    }

    /// Builds the server.
    ///
    /// # Errors
    /// The first registration error (bad schema, unsupported dialect, bad template,
    /// duplicate name).
    pub fn build(mut self) -> Result<Server, BuildError> {
        if !self.errors.is_empty() {
            return Err(self.errors.remove(0));
        }
        Ok(Server {
            inner: Arc::new(Inner {
                info: self.info,
                instructions: self.instructions,
                registry: RwLock::new(self.registry),
                completion: self.completion,
                logging: self.logging,
                declare: self.declare,
                config: self.config,
                sessions: Mutex::new(Vec::new()),
                changes: tokio::sync::broadcast::channel(256).0,
                on_subscribe: self.on_subscribe,
                on_unsubscribe: self.on_unsubscribe,
            }),
        })
    }
}

/// Inserts `entry` under `name`; a second item with the same name is a build error.
fn insert_unique<T>(
    map: &mut BTreeMap<String, Arc<T>>,
    kind: &'static str,
    name: String,
    entry: T,
) -> Option<BuildError> {
    if map.contains_key(&name) {
        return Some(BuildError::Duplicate { kind, name });
    }
    map.insert(name, Arc::new(entry));
    None
}

fn schema_object<A: JsonSchema>() -> JsonObject {
    let schema = schemars::schema_for!(A);
    match serde_json::to_value(&schema) {
        Ok(Value::Object(mut m)) => {
            // MCP requires an object schema even for argument-less tools.
            if !m.contains_key("type") {
                m.insert("type".to_owned(), Value::String("object".to_owned()));
            }
            m.remove("title");
            m
        }
        _ => {
            let mut m = JsonObject::new();
            m.insert("type".to_owned(), Value::String("object".to_owned()));
            m
        }
    }
}

fn make_tool_entry(tool: Tool, handler: ToolFn) -> Result<ToolEntry, BuildError> {
    let err = |error| BuildError::Schema {
        tool: tool.name.clone(),
        error,
    };
    let input = CompiledSchema::compile(&tool.input_schema).map_err(err)?;
    let output = match &tool.output_schema {
        Some(s) => Some(CompiledSchema::compile(s).map_err(err)?),
        None => None,
    };
    Ok(ToolEntry {
        tool,
        input,
        output,
        handler,
    })
}

/// A built server: serve it on any number of connections. Cheap to clone.
#[derive(Clone)]
pub struct Server {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("info", &self.inner.info)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Starts a builder.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder::new(name, version)
    }

    /// The capabilities this server declares.
    pub fn capabilities(&self) -> ServerCapabilities {
        self.inner.capabilities()
    }

    /// The settings.
    pub fn config(&self) -> &ServerConfig {
        &self.inner.config
    }

    /// Serves one connection given the transport's channels; returns when the input ends and
    /// every accepted request has been answered.
    pub async fn serve(
        &self,
        incoming: mpsc::Receiver<mcp_jsonrpc::Inbound>,
        outgoing: mpsc::Sender<mcp_jsonrpc::Outbound>,
    ) {
        self.serve_with(incoming, outgoing, self.inner.config.engine.clone())
            .await;
    }

    /// [`Server::serve`] with other message-loop settings for this connection (HTTP sessions
    /// answer "busy" instead of applying backpressure).
    pub async fn serve_with(
        &self,
        incoming: mpsc::Receiver<mcp_jsonrpc::Inbound>,
        outgoing: mpsc::Sender<mcp_jsonrpc::Outbound>,
        engine: EngineConfig,
    ) {
        self.serve_as(incoming, outgoing, engine, None).await;
    }

    /// [`Server::serve_with`] for a connection whose sender the transport has verified
    /// (`principal`, e.g. the subject of a bearer token): handlers see it
    /// ([`Ctx::principal`]), and the `requestState` of a multi round-trip request is bound
    /// to it, so that nobody else can continue the request.
    pub async fn serve_as(
        &self,
        incoming: mpsc::Receiver<mcp_jsonrpc::Inbound>,
        outgoing: mpsc::Sender<mcp_jsonrpc::Outbound>,
        engine: EngineConfig,
        principal: Option<String>,
    ) {
        let peer = Peer::with_config(outgoing, &engine);
        let session = Arc::new(Session::new(self.inner.clone()).with_principal(principal));
        {
            let mut sessions = self.lock_sessions();
            sessions.retain(|(s, p)| s.strong_count() > 0 && !p.is_closed());
            sessions.push((Arc::downgrade(&session), peer.clone()));
        }
        let weak = Arc::downgrade(&session);
        let service = Arc::new(SessionService(session.clone()));
        mcp_engine::run(peer, incoming, service, engine).await;
        // The connection is over: so are its subscriptions (`on_unsubscribe` hears of each).
        session.release_subscriptions();
        drop(session);
        // Forget the connection so its outgoing queue closes and the transport can finish.
        self.lock_sessions()
            .retain(|(s, _)| !s.ptr_eq(&weak) && s.strong_count() > 0);
    }

    /// Serves `connection` ([`mcp_engine::Serve`], for transports that host any service).
    pub async fn serve_connection(&self, connection: mcp_engine::Connection) {
        let mcp_engine::Connection {
            incoming,
            outgoing,
            config,
            principal,
        } = connection;
        self.serve_as(incoming, outgoing, config, principal).await;
    }

    fn lock_sessions(&self) -> std::sync::MutexGuard<'_, Vec<(Weak<Session>, Peer)>> {
        self.inner
            .sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn live_sessions(&self) -> Vec<(Arc<Session>, Peer)> {
        self.lock_sessions()
            .iter()
            .filter_map(|(s, p)| {
                s.upgrade()
                    .filter(|_| !p.is_closed())
                    .map(|s| (s, p.clone()))
            })
            .collect()
    }

    /// Number of connections being served.
    pub fn session_count(&self) -> usize {
        self.live_sessions().len()
    }

    fn announce(&self, change: Change) {
        // No listener is fine: nobody has subscribed.
        let _ = self.inner.changes.send(change);
    }

    async fn broadcast(&self, method: &str) {
        match method {
            "notifications/tools/list_changed" => self.announce(Change::Tools),
            "notifications/prompts/list_changed" => self.announce(Change::Prompts),
            "notifications/resources/list_changed" => self.announce(Change::Resources),
            _ => {}
        }
        for (session, peer) in self.live_sessions() {
            if session.is_ready() {
                deliver(&peer, method, &serde_json::json!({}));
            }
        }
    }

    /// Changes what is registered in one step, then tells every client once per kind that
    /// changed (`notifications/*/list_changed`), however many items `f` added or removed.
    pub async fn edit<R>(&self, f: impl FnOnce(&mut Edit<'_>) -> R) -> R {
        let (out, changed) = {
            let mut reg = self.inner.write();
            let mut edit = Edit {
                reg: &mut reg,
                changed: Declared::default(),
            };
            let out = f(&mut edit);
            (out, edit.changed)
        };
        if changed.tools {
            self.broadcast("notifications/tools/list_changed").await;
        }
        if changed.prompts {
            self.broadcast("notifications/prompts/list_changed").await;
        }
        if changed.resources {
            self.broadcast("notifications/resources/list_changed").await;
        }
        out
    }

    /// Adds or replaces a tool at run time and tells every client (`list_changed`).
    ///
    /// # Errors
    /// If its schema is unusable.
    pub async fn add_tool(&self, tool: Tool, handler: ToolFn) -> Result<(), BuildError> {
        self.edit(|e| e.add_tool(tool, handler)).await
    }

    /// Removes a tool and tells every client. Returns whether it existed.
    pub async fn remove_tool(&self, name: &str) -> bool {
        self.edit(|e| e.remove_tool(name)).await
    }

    /// Adds or replaces a prompt at run time and tells every client (`list_changed`).
    pub async fn add_prompt(&self, prompt: Prompt, handler: PromptFn) {
        self.edit(|e| e.add_prompt(prompt, handler)).await;
    }

    /// Removes a prompt and tells every client. Returns whether it existed.
    pub async fn remove_prompt(&self, name: &str) -> bool {
        self.edit(|e| e.remove_prompt(name)).await
    }

    /// Tells every client that the resource list changed.
    pub async fn notify_resource_list_changed(&self) {
        self.broadcast("notifications/resources/list_changed").await;
    }

    /// Sends a log message to every legacy session whose level lets it through (2026-07-28
    /// requests get log messages only from their own handlers, through [`Ctx::log`]).
    pub async fn log(&self, level: mcp_types::LoggingLevel, logger: Option<&str>, data: Value) {
        let params = mcp_types::LoggingMessageParams {
            level,
            logger: logger.map(str::to_owned),
            data,
            meta: None,
            extra: JsonObject::new(),
        };
        for (session, peer) in self.live_sessions() {
            if session.is_ready() && session.log_enabled(level) {
                deliver(&peer, "notifications/message", &params);
            }
        }
    }

    /// Tells the clients subscribed to `uri` that it changed.
    pub async fn notify_resource_updated(&self, uri: &str) {
        self.announce(Change::ResourceUpdated(uri.to_owned()));
        for (session, peer) in self.live_sessions() {
            if session.is_subscribed(uri) {
                deliver(
                    &peer,
                    "notifications/resources/updated",
                    &serde_json::json!({ "uri": uri }),
                );
            }
        }
    }

    /// The definition of the registered tool `name`.
    pub fn tool(&self, name: &str) -> Option<Tool> {
        self.inner.read().tools.get(name).map(|e| e.tool.clone())
    }

    /// Registered tool names, in `tools/list` order.
    pub fn tool_names(&self) -> Vec<String> {
        self.inner.read().tools.keys().cloned().collect()
    }
}

/// Sends one connection its copy of a server-wide notification without waiting: a client
/// whose queue stays full (it stopped reading) is disconnected by its stall timeout, and
/// nobody else ever waits for it.
fn deliver<P: serde::Serialize + ?Sized>(peer: &Peer, method: &str, params: &P) {
    match peer.notify_queued(method, params) {
        Ok(()) | Err(mcp_engine::CallError::Closed) => {}
        // Debug: a stuck client must not multiply the server's own log lines.
        Err(e) => tracing::debug!("a client missed {method}: {e}"),
    }
}

/// The registry while [`Server::edit`] changes it.
pub struct Edit<'a> {
    reg: &'a mut Registry,
    changed: Declared,
}

impl std::fmt::Debug for Edit<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Edit").finish_non_exhaustive()
    }
}

impl Edit<'_> {
    /// Adds or replaces a tool.
    ///
    /// # Errors
    /// If its schema is unusable (nothing changes then).
    pub fn add_tool(&mut self, tool: Tool, handler: ToolFn) -> Result<(), BuildError> {
        let entry = make_tool_entry(tool, handler)?;
        self.reg
            .tools
            .insert(entry.tool.name.clone(), Arc::new(entry));
        self.changed.tools = true;
        Ok(())
    }

    /// Removes a tool; whether it existed.
    pub fn remove_tool(&mut self, name: &str) -> bool {
        let removed = self.reg.tools.remove(name).is_some();
        self.changed.tools |= removed;
        removed
    }

    /// Adds or replaces a prompt.
    pub fn add_prompt(&mut self, prompt: Prompt, handler: PromptFn) {
        let name = prompt.name.clone();
        self.reg
            .prompts
            .insert(name, Arc::new(PromptEntry { prompt, handler }));
        self.changed.prompts = true;
    }

    /// Removes a prompt; whether it existed.
    pub fn remove_prompt(&mut self, name: &str) -> bool {
        let removed = self.reg.prompts.remove(name).is_some();
        self.changed.prompts |= removed;
        removed
    }

    /// Adds or replaces a resource (by URI).
    pub fn add_resource(&mut self, resource: Resource, handler: ResourceFn) {
        let uri = resource.uri.clone();
        self.reg
            .resources
            .insert(uri, Arc::new(ResourceEntry { resource, handler }));
        self.changed.resources = true;
    }

    /// Removes a resource; whether it existed.
    pub fn remove_resource(&mut self, uri: &str) -> bool {
        let removed = self.reg.resources.remove(uri).is_some();
        self.changed.resources |= removed;
        removed
    }

    /// Adds or replaces a resource template (by its `uriTemplate`).
    ///
    /// # Errors
    /// If the template does not parse (nothing changes then).
    pub fn add_resource_template(
        &mut self,
        template: ResourceTemplate,
        handler: TemplateFn,
    ) -> Result<(), BuildError> {
        let parsed = UriTemplate::parse(&template.uri_template)?;
        self.remove_resource_template(&template.uri_template);
        self.reg.templates.push(Arc::new(TemplateEntry {
            template,
            parsed,
            handler,
        }));
        self.changed.resources = true;
        Ok(())
    }

    /// Removes a resource template by its `uriTemplate`; whether it existed.
    pub fn remove_resource_template(&mut self, uri_template: &str) -> bool {
        let before = self.reg.templates.len();
        self.reg
            .templates
            .retain(|t| t.template.uri_template != uri_template);
        let removed = self.reg.templates.len() != before;
        self.changed.resources |= removed;
        removed
    }
}

impl mcp_engine::Serve for Server {
    fn engine_config(&self) -> EngineConfig {
        self.inner.config.engine.clone()
    }

    fn serve(&self, connection: mcp_engine::Connection) -> futures::future::BoxFuture<'static, ()> {
        let server = self.clone();
        Box::pin(async move { server.serve_connection(connection).await })
    }
}
