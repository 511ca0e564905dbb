//! What the client answers when the server asks: sampling, roots, elicitation.

use std::sync::Arc;

use futures::future::BoxFuture;
use oxmcp_jsonrpc::ErrorObject;
use oxmcp_types::{
    CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult, ListRootsResult,
    LoggingMessageParams,
};

/// Answers `sampling/createMessage`.
pub type SamplingFn = Arc<
    dyn Fn(CreateMessageParams) -> BoxFuture<'static, Result<CreateMessageResult, ErrorObject>>
        + Send
        + Sync,
>;
/// Answers `elicitation/create`.
pub type ElicitationFn = Arc<
    dyn Fn(ElicitParams) -> BoxFuture<'static, Result<ElicitResult, ErrorObject>> + Send + Sync,
>;
/// Answers `roots/list`.
pub type RootsFn =
    Arc<dyn Fn() -> BoxFuture<'static, Result<ListRootsResult, ErrorObject>> + Send + Sync>;

/// Answers a request of the server's that this library does not know (an extension's):
/// gets the params (`None` when there are none), returns the result's JSON.
pub type MethodFn = Arc<
    dyn Fn(Option<serde_json::Value>) -> BoxFuture<'static, Result<serde_json::Value, ErrorObject>>
        + Send
        + Sync,
>;

/// A notification from the server, typed where it matters.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ServerEvent {
    /// `notifications/message`.
    Log(LoggingMessageParams),
    /// `notifications/tools/list_changed`.
    ToolsChanged,
    /// `notifications/prompts/list_changed`.
    PromptsChanged,
    /// `notifications/resources/list_changed`.
    ResourcesChanged,
    /// `notifications/resources/updated`.
    ResourceUpdated(String),
    /// `notifications/elicitation/complete` (2025-11-25): the URL-mode elicitation with this
    /// id is done; what waited for it (a -32042 error, see [`crate::url_elicitations`]) may
    /// be retried.
    ElicitationComplete(String),
    /// Anything else.
    Other {
        /// Method.
        method: String,
        /// Params.
        params: serde_json::Value,
    },
}

/// The client's handlers. What is set here becomes the declared capabilities.
#[derive(Clone, Default)]
pub struct ClientHandlers {
    pub(crate) sampling: Option<SamplingFn>,
    pub(crate) elicitation: Option<ElicitationFn>,
    pub(crate) url_elicitation: bool,
    pub(crate) sampling_tools: bool,
    pub(crate) roots: Option<RootsFn>,
    pub(crate) events: Option<Arc<dyn Fn(ServerEvent) + Send + Sync>>,
    pub(crate) extensions: std::collections::BTreeMap<String, oxmcp_types::JsonObject>,
    pub(crate) methods: std::collections::BTreeMap<String, MethodFn>,
}

impl std::fmt::Debug for ClientHandlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientHandlers")
            .field("sampling", &self.sampling.is_some())
            .field("elicitation", &self.elicitation.is_some())
            .field("roots", &self.roots.is_some())
            .finish()
    }
}

impl ClientHandlers {
    /// No handlers: the client declares no capabilities.
    pub fn new() -> Self {
        Self::default()
    }

    /// Handles sampling requests (declares `sampling`).
    pub fn sampling<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(CreateMessageParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, ErrorObject>> + Send + 'static,
    {
        self.sampling = Some(Arc::new(move |p| Box::pin(f(p))));
        self
    }

    /// Handles form-mode elicitation (declares `elicitation.form`). Schema defaults are filled
    /// in for fields the handler's answer leaves out.
    pub fn elicitation<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(ElicitParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, ErrorObject>> + Send + 'static,
    {
        self.elicitation = Some(Arc::new(move |p| Box::pin(f(p))));
        self
    }

    /// Also accepts sampling requests with `tools` and `toolChoice` (declares
    /// `sampling.tools`); without it such requests are refused with -32602. The sampling
    /// handler answers with `tool_use` content when the model calls a tool.
    pub fn sampling_tools(mut self) -> Self {
        self.sampling_tools = true;
        self
    }

    /// Also accepts URL-mode elicitation (declares `elicitation.url`).
    pub fn url_elicitation(mut self) -> Self {
        self.url_elicitation = true;
        self
    }

    /// Answers `roots/list` (declares `roots`).
    pub fn roots<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ListRootsResult, ErrorObject>> + Send + 'static,
    {
        self.roots = Some(Arc::new(move || Box::pin(f())));
        self
    }

    /// Declares an extension (SEP-2133) in our capabilities (`extensions`, in `initialize`
    /// and in every 2026-07-28 request's `_meta`), with its settings (`{}` for none).
    pub fn extension(mut self, id: impl Into<String>, settings: oxmcp_types::JsonObject) -> Self {
        self.extensions.insert(id.into(), settings);
        self
    }

    /// Answers a server request of a method this library does not know (an extension's).
    /// The specification's methods keep their own handlers: registering one of their names
    /// here has no effect.
    pub fn method<F, Fut>(mut self, name: impl Into<String>, f: F) -> Self
    where
        F: Fn(Option<serde_json::Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<serde_json::Value, ErrorObject>> + Send + 'static,
    {
        self.methods
            .insert(name.into(), Arc::new(move |p| Box::pin(f(p))));
        self
    }

    /// Takes tasks (declares the 2026-07-28 tasks extension): a server may then answer any
    /// `tools/call` with a task, which [`crate::Client::call_tool`] follows to its end,
    /// answering the task's input requests with these handlers.
    pub fn tasks(self) -> Self {
        self.extension(oxmcp_types::TASKS_EXTENSION, oxmcp_types::JsonObject::new())
    }

    /// Receives server notifications (log messages, list changes, resource updates).
    pub fn on_event(mut self, f: impl Fn(ServerEvent) + Send + Sync + 'static) -> Self {
        self.events = Some(Arc::new(f));
        self
    }
}
