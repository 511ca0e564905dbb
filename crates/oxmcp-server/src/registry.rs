//! What a server has registered (tools, resources, templates, prompts), the state every
//! connection shares, and [`Edit`], for changing the registry at run time.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use oxmcp_engine::Peer;
use oxmcp_jsonrpc::ErrorObject;
use oxmcp_types::{
    Implementation, JsonObject, ListChangedCapability, Prompt, Resource, ResourceTemplate,
    ResourcesCapability, ServerCapabilities, Tool,
};
use parking_lot::{Mutex, RwLock};

use crate::builder::BuildError;
use crate::config::ServerConfig;
use crate::dynamic::HandlerCapabilities;
use crate::handler::{CompletionFn, PromptFn, ResourceFn, TemplateFn, ToolFn};
use crate::schema::CompiledSchema;
use crate::session::Session;
use crate::uri_template::UriTemplate;

pub(crate) struct ToolEntry {
    pub(crate) tool: Tool,
    pub(crate) input: CompiledSchema,
    pub(crate) output: Option<CompiledSchema>,
    pub(crate) handler: ToolFn,
    /// When a task-eligible call becomes a task.
    pub(crate) task_start: crate::tasks::TaskStart,
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
    /// Told of every change made here, for other instances.
    pub(crate) on_change: std::sync::OnceLock<ChangeFn>,
    /// Told of a session's roots each time they are read again after
    /// `notifications/roots/list_changed`.
    pub(crate) on_roots_changed: Option<RootsChangedFn>,
    /// Declared extensions and custom methods.
    pub(crate) extensions: crate::extensions::Extensions,
    /// Tasks, when any tool may run as one (or they were configured).
    pub(crate) tasks: Option<Arc<crate::tasks::Tasks>>,
    /// The user's handler, when the server answers from one instead of the registry.
    pub(crate) dynamic: crate::dynamic::Dynamic,
}

/// Called with a legacy session's new roots after the client said they changed
/// (`notifications/roots/list_changed`) and the server read them again (`roots/list`).
pub type RootsChangedFn = Arc<dyn Fn(&[oxmcp_types::Root]) + Send + Sync>;

/// Called with the client's principal (when the transport verified who it is, as
/// [`crate::Ctx::principal`]; `None` otherwise) and the URI each time a client starts holding
/// a subscription to a resource: a legacy session's `resources/subscribe` of a URI it does not
/// hold yet, or a 2026-07-28 `subscriptions/listen` naming it. An error refuses the
/// subscription: the client gets it and nothing is stored. Called while the session's state is
/// locked: it must not block.
pub type SubscribeFn = Arc<dyn Fn(Option<&str>, &str) -> Result<(), ErrorObject> + Send + Sync>;

/// Called with the client's principal and the URI each time a client stops holding a
/// subscription that [`SubscribeFn`] accepted: `resources/unsubscribe`, the end of the
/// session's connection, or the end of the `subscriptions/listen` request. Exactly once per
/// accepted subscription, with the principal it was accepted for, so holders can be counted
/// (per principal too).
pub type UnsubscribeFn = Arc<dyn Fn(Option<&str>, &str) + Send + Sync>;

/// A change of the server's that its clients hear about (`list_changed`, a resource
/// update). Instances of one server share them through [`crate::Server::on_change`] and
/// [`crate::Server::apply_change`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", content = "uri", rename_all = "camelCase")]
pub enum Change {
    /// The tool list changed.
    Tools,
    /// The prompt list changed.
    Prompts,
    /// The resource list changed.
    Resources,
    /// The resource with this URI changed.
    ResourceUpdated(String),
}

/// Told of each change this instance makes ([`crate::Server::on_change`]).
pub type ChangeFn = Arc<dyn Fn(&Change) + Send + Sync>;

/// Method families: declared up front by the builder, or served because of registrations.
#[derive(Default, Clone, Copy)]
pub(crate) struct Declared {
    pub(crate) tools: bool,
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
}

impl Inner {
    pub(crate) fn read(&self) -> parking_lot::RwLockReadGuard<'_, Registry> {
        self.registry.read()
    }

    pub(crate) fn write(&self) -> parking_lot::RwLockWriteGuard<'_, Registry> {
        self.registry.write()
    }

    /// Which method families are served now: the handler's (when there is one) or those
    /// with something registered, and those declared up front either way.
    pub(crate) fn served(&self) -> HandlerCapabilities {
        let mut served = match &self.dynamic.handler {
            Some(h) => h.capabilities(),
            None => {
                let reg = self.read();
                HandlerCapabilities {
                    tools: !reg.tools.is_empty(),
                    resources: !reg.resources.is_empty() || !reg.templates.is_empty(),
                    prompts: !reg.prompts.is_empty(),
                    completions: self.completion.is_some(),
                    list_changed: true,
                    subscribe: true,
                }
            }
        };
        served.tools |= self.declare.tools;
        served.resources |= self.declare.resources;
        served.prompts |= self.declare.prompts;
        served
    }

    /// Capabilities, computed from what is served.
    pub(crate) fn capabilities(&self) -> ServerCapabilities {
        let served = self.served();
        let changes = served.list_changed.then_some(true);
        let listed = || ListChangedCapability::default().with_list_changed(changes);
        ServerCapabilities::default()
            .with_tools(served.tools.then(listed))
            .with_resources(served.resources.then(|| {
                ResourcesCapability::default()
                    .with_subscribe(served.subscribe.then_some(true))
                    .with_list_changed(changes)
            }))
            .with_prompts(served.prompts.then(listed))
            .with_logging(self.logging.then(JsonObject::new))
            .with_completions(served.completions.then(JsonObject::new))
            .with_extensions(self.declared_extensions())
            .with_extra(self.legacy_tasks_capability())
    }
}

impl Inner {
    /// The declared extensions, the tasks extension included when tasks are on.
    fn declared_extensions(&self) -> Option<BTreeMap<String, JsonObject>> {
        let mut declared = self.extensions.declared.clone();
        if self.tasks.is_some() {
            declared.insert(oxmcp_types::TASKS_EXTENSION.to_owned(), JsonObject::new());
        }
        (!declared.is_empty()).then_some(declared)
    }

    /// The 2025-11-25 `tasks` capability when tasks are on (left out of `server/discover`).
    fn legacy_tasks_capability(&self) -> JsonObject {
        let mut extra = JsonObject::new();
        if self.tasks.is_some() {
            extra.insert(
                "tasks".to_owned(),
                serde_json::json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
            );
        }
        extra
    }
}

/// Inserts `entry` under `name`; a second item with the same name is a build error.
pub(crate) fn insert_unique<T>(
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

pub(crate) fn make_tool_entry(tool: Tool, handler: ToolFn) -> Result<ToolEntry, BuildError> {
    if let Some(why) = oxmcp_types::tools::tool_name_problem(&tool.name) {
        return Err(BuildError::ToolName {
            name: tool.name.clone(),
            why,
        });
    }
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
        task_start: crate::tasks::TaskStart::default(),
    })
}

/// The registry while [`crate::Server::edit`] changes it.
pub struct Edit<'a> {
    pub(crate) reg: &'a mut Registry,
    pub(crate) changed: Declared,
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
