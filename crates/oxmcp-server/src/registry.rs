//! What a server has registered (tools, resources, templates, prompts) and its completion
//! provider ([`Catalogue`]), and [`Edit`], for changing the registry at run time.

use std::collections::BTreeMap;
use std::sync::Arc;

use oxmcp_types::{Prompt, Resource, ResourceTemplate, Tool};
use parking_lot::RwLock;

use crate::builder::BuildError;
use crate::handler::{CompletionFn, PromptFn, ResourceFn, TemplateFn, ToolFn};
use crate::schema::CompiledSchema;
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

/// The catalogue: what is registered, and the completion provider. It answers the server's
/// requests (it is its [`crate::dynamic::Handler`]) unless the server was built with a
/// handler of the user's.
pub(crate) struct Catalogue {
    pub(crate) registry: RwLock<Registry>,
    pub(crate) completion: Option<CompletionFn>,
    /// Items per page of a list (`ServerConfig::page_size`).
    pub(crate) page_size: usize,
    /// Whether it answers the server's requests (no handler of the user's).
    pub(crate) answers: bool,
}

impl Catalogue {
    pub(crate) fn read(&self) -> parking_lot::RwLockReadGuard<'_, Registry> {
        self.registry.read()
    }

    pub(crate) fn write(&self) -> parking_lot::RwLockWriteGuard<'_, Registry> {
        self.registry.write()
    }
}

/// Method families: declared up front by the builder, or served because of registrations.
#[derive(Default, Clone, Copy)]
pub(crate) struct Declared {
    pub(crate) tools: bool,
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
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
