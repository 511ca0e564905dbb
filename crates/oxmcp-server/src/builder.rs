//! [`ServerBuilder`]: tools, resources, prompts and settings, collected and checked, then
//! built into a [`Server`].

use std::collections::BTreeMap;
use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;

use oxmcp_jsonrpc::ErrorObject;
use oxmcp_types::{
    CacheScope, CompleteParams, CompleteResult, GetPromptResult, Implementation, JsonObject,
    Prompt, ReadResourceResult, Resource, ResourceContents, ResourceTemplate, TaskSupport, Tool,
    ToolExecution,
};
use parking_lot::{Mutex, RwLock};
use schemars::JsonSchema;
use serde_json::Value;

use crate::config::ServerConfig;
use crate::context::Ctx;
use crate::extensions::{Extensions, MethodFn, method_name_problem, typed_method};
use crate::handler::{
    CompletionFn, IntoCallToolResult, PromptFn, ResourceFn, TemplateFn, ToolFn, typed_tool,
};
use crate::registry::{
    Catalogue, Declared, PromptEntry, Registry, ResourceEntry, TemplateEntry, insert_unique,
    make_tool_entry,
};
use crate::schema::SchemaError;
use crate::server::Server;
use crate::state::{
    About, Features, Hooks, Live, RootsChangedFn, ServerState, SubscribeFn, UnsubscribeFn,
};
use crate::tasks::{MemoryTaskStore, TaskConfig, TaskStart, TaskStore, Tasks};
use crate::uri_template::{TemplateError, UriTemplate};

mod dynamic;

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
    /// A tool name outside SEP-986's (1 to 128 ASCII letters, digits, `_`, `-`, `.`):
    /// clients may refuse or mangle it.
    #[error("tool {name:?}: {why}")]
    ToolName {
        /// The name.
        name: String,
        /// What is wrong with it.
        why: String,
    },
    /// A custom method's name is one of the specification's, or unusable.
    #[error("method {name:?}: {why}")]
    MethodName {
        /// The name.
        name: String,
        /// What is wrong with it.
        why: String,
    },
    /// A setting names an item that is not registered.
    #[error("unknown {kind} {name:?}")]
    Unknown {
        /// Tool, prompt or resource.
        kind: &'static str,
        /// The name.
        name: String,
    },
    /// Skills could not be loaded ([`ServerBuilder::skills_dir`]).
    #[error(transparent)]
    Skills(#[from] crate::skills::SkillsError),
    /// A handler ([`ServerBuilder::handler`]) and registered items (or a completion
    /// provider) on one builder: the handler answers every list, so they would never be seen.
    #[error(
        "a server built with a handler answers from it alone: register no {kind} on the builder (answer it from the handler, which may delegate to a registry-built Server)"
    )]
    HandlerAndRegistry {
        /// What was registered besides the handler: tool, prompt, resource, template or
        /// completion.
        kind: &'static str,
    },
    /// Two items share a name.
    #[error("duplicate {kind} {name:?}")]
    Duplicate {
        /// Tool, prompt or resource.
        kind: &'static str,
        /// The name.
        name: String,
    },
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
    pub(crate) completers: crate::register::Completers,
    logging: bool,
    declare: Declared,
    config: ServerConfig,
    errors: Vec<BuildError>,
    on_subscribe: Option<SubscribeFn>,
    on_unsubscribe: Option<UnsubscribeFn>,
    on_roots_changed: Option<RootsChangedFn>,
    extensions: Extensions,
    tasks: Option<(
        crate::tasks::TaskConfig,
        Option<Arc<dyn crate::tasks::TaskStore>>,
    )>,
    handler: Option<Arc<dyn crate::dynamic::Handler>>,
    layers: crate::layer::Layers,
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
            completers: Default::default(),
            logging: true,
            declare: Declared::default(),
            config: ServerConfig::default(),
            errors: Vec::new(),
            on_subscribe: None,
            on_unsubscribe: None,
            on_roots_changed: None,
            extensions: Extensions::default(),
            tasks: None,
            handler: None,
            layers: crate::layer::Layers::new(),
        }
    }

    /// Wraps every request to a handler in `layer` ([`crate::layer`]), inside the layers
    /// added before (and those of [`ServerConfig::layers`]); it works the same for a
    /// [`ServerBuilder::handler`] server.
    pub fn layer(mut self, layer: impl crate::layer::Layer) -> Self {
        self.layers.push(layer);
        self
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

    /// Calls `f` with the client's principal (if verified) and the URI each time a client
    /// starts holding a subscription (a gateway subscribes upstream then); an `Err` refuses
    /// it. See [`SubscribeFn`].
    pub fn on_subscribe(
        mut self,
        f: impl Fn(Option<&str>, &str) -> Result<(), ErrorObject> + Send + Sync + 'static,
    ) -> Self {
        self.on_subscribe = Some(Arc::new(f));
        self
    }

    /// Calls `f` with the client's principal and the URI each time a client stops holding a
    /// subscription `on_subscribe` accepted, including when its connection ends (a gateway
    /// unsubscribes upstream once no client holds it). See [`UnsubscribeFn`].
    pub fn on_unsubscribe(
        mut self,
        f: impl Fn(Option<&str>, &str) + Send + Sync + 'static,
    ) -> Self {
        self.on_unsubscribe = Some(Arc::new(f));
        self
    }

    /// Calls `f` with a session's roots each time its client says they changed
    /// (`notifications/roots/list_changed`, legacy sessions) and the server has read them
    /// again (`roots/list`). Handlers get the current roots from [`crate::Ctx::roots`].
    pub fn on_roots_changed(
        mut self,
        f: impl Fn(&[oxmcp_types::Root]) + Send + Sync + 'static,
    ) -> Self {
        self.on_roots_changed = Some(Arc::new(f));
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
        E: Display + 'static,
    {
        let tool = Tool::default()
            .with_name(name.to_owned())
            .with_description(Some(description.to_owned()));
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
        E: Display + 'static,
    {
        tool.input_schema = schema_object::<A>();
        if tool.output_schema.is_none() {
            tool.output_schema = R::output_schema();
        }
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
        let resource = Resource::default()
            .with_uri(uri.to_owned())
            .with_name(name.to_owned())
            .with_mime_type(Some(mime.to_owned()));
        let (mime, text) = (mime.to_owned(), text.to_owned());
        self.resource(resource, move |_, uri| {
            let contents = ResourceContents::text(uri, Some(&mime), text.clone());
            async move { Ok(ReadResourceResult::default().with_contents(vec![contents])) }
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

    /// Declares an extension (SEP-2133) under `capabilities.extensions`, with its settings
    /// (`{}` for none). Declaring commits the server to what the extension requires: register
    /// its methods with [`ServerBuilder::method`].
    pub fn extension(mut self, id: impl Into<String>, settings: JsonObject) -> Self {
        self.extensions.declared.insert(id.into(), settings);
        self
    }

    /// Serves a method of the server's own (an extension's, a vendor's), typed: the params
    /// parse into `P` (a mismatch answers -32602) and `R` is the result. The handler gets a
    /// [`Ctx`] as tools do. A name of the specification's is a build error.
    pub fn method<P, R, F, Fut>(self, name: &str, f: F) -> Self
    where
        P: serde::de::DeserializeOwned + Send + 'static,
        R: serde::Serialize + 'static,
        F: Fn(Ctx, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
    {
        self.raw_method(name, typed_method(f))
    }

    /// [`ServerBuilder::method`] on raw JSON params.
    pub fn raw_method(mut self, name: &str, handler: MethodFn) -> Self {
        if let Some(why) = method_name_problem(name) {
            self.errors.push(BuildError::MethodName {
                name: name.to_owned(),
                why,
            });
        } else if self
            .extensions
            .methods
            .insert(name.to_owned(), handler)
            .is_some()
        {
            self.errors.push(BuildError::Duplicate {
                kind: "method",
                name: name.to_owned(),
            });
        }
        self
    }

    /// Registers a tool that may run as a task ([`TaskSupport::Optional`]) or only as one
    /// ([`TaskSupport::Required`]): [`ServerBuilder::tool`] with `execution.taskSupport`.
    /// The handler is the same kind of function; see [`crate::tasks`] for how it runs.
    pub fn task_tool<A, F, Fut, R, E>(
        self,
        name: &str,
        description: &str,
        support: TaskSupport,
        f: F,
    ) -> Self
    where
        A: serde::de::DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(Ctx, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: IntoCallToolResult,
        E: Display + 'static,
    {
        let tool = Tool::default()
            .with_name(name.to_owned())
            .with_description(Some(description.to_owned()))
            .with_execution(Some(
                ToolExecution::default().with_task_support(Some(support)),
            ));
        self.typed_tool(tool, f)
    }

    /// When calls of the tool `name` (registered before) become tasks: by default before
    /// the handler runs; [`TaskStart::WhenHandlerAsks`] lets the handler gather input first
    /// and call [`Ctx::begin_task`].
    pub fn task_start(mut self, name: &str, start: TaskStart) -> Self {
        match self.registry.tools.get_mut(name).and_then(Arc::get_mut) {
            Some(entry) => entry.task_start = start,
            None => self.errors.push(BuildError::Unknown {
                kind: "tool",
                name: name.to_owned(),
            }),
        }
        self
    }

    /// Task settings. Tasks are on by themselves as soon as a tool allows them; this sets
    /// their lifetimes and limits, or turns them on for tools added later.
    pub fn tasks(mut self, config: TaskConfig) -> Self {
        let store = self.tasks.take().and_then(|(_, s)| s);
        self.tasks = Some((config, store));
        self
    }

    /// Where task state lives (in memory by default): a store shared by several instances
    /// lets any of them answer `tasks/get`.
    pub fn task_store(mut self, store: Arc<dyn TaskStore>) -> Self {
        let config = self.tasks.take().map(|(c, _)| c).unwrap_or_default();
        self.tasks = Some((config, Some(store)));
        self
    }

    /// Records a registration error, returned by [`ServerBuilder::build`].
    pub(crate) fn push_error(mut self, e: BuildError) -> Self {
        self.errors.push(e);
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
        // Per-argument completers and an explicit provider become one provider.
        self.completion =
            std::mem::take(&mut self.completers).into_provider(self.completion.take())?;
        let user = self.take_handler()?;
        let wanted = self
            .registry
            .tools
            .values()
            .any(|t| t.tool.task_support() != TaskSupport::Forbidden);
        let tasks = match self.tasks.take() {
            Some((config, store)) => Some((config, store)),
            None if wanted => Some((TaskConfig::default(), None)),
            None => None,
        }
        .map(|(config, store)| {
            let store = store
                .or_else(|| self.config.task_store.clone())
                .unwrap_or_else(|| MemoryTaskStore::new() as Arc<dyn TaskStore>);
            Arc::new(Tasks::new(config, store))
        });
        let catalogue = Arc::new(Catalogue {
            registry: RwLock::new(self.registry),
            completion: self.completion,
            page_size: self.config.page_size,
            answers: user.is_none(),
        });
        let cache_scope = match user {
            Some(_) => CacheScope::Private,
            None => self.config.cache.scope,
        };
        let handler = user.unwrap_or_else(|| catalogue.clone());
        let handler_state = crate::state::HandlerState {
            store: self.config.state_store.clone().unwrap_or_else(|| {
                crate::handler_state::MemoryStateStore::new()
                    as Arc<dyn crate::handler_state::StateStore>
            }),
            limits: Arc::new(self.config.state_limits.clone()),
        };
        let layers = self.config.layers.then(&self.layers);
        #[cfg(feature = "metrics")]
        let only_metrics = self.config.layers.only_metrics(&self.layers);
        Ok(Server {
            state: Arc::new(ServerState {
                about: About {
                    info: self.info,
                    instructions: self.instructions,
                    logging: self.logging,
                    declare: self.declare,
                    config: self.config,
                    cache_scope,
                },
                catalogue,
                hooks: Hooks {
                    on_subscribe: self.on_subscribe,
                    on_unsubscribe: self.on_unsubscribe,
                    on_change: std::sync::OnceLock::new(),
                    on_roots_changed: self.on_roots_changed,
                },
                live: Live {
                    sessions: Mutex::new(Vec::new()),
                    changes: tokio::sync::broadcast::channel(256).0,
                },
                features: Features {
                    tasks,
                    extensions: self.extensions,
                    state: handler_state,
                    layers,
                    #[cfg(feature = "metrics")]
                    only_metrics,
                },
                handler,
            }),
        })
    }
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
