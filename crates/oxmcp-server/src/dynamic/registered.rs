//! [`Server`] as a [`ServerHandler`]: the user's handler when it was built with one, its
//! registry otherwise. The session answers every list, call, read and completion through it;
//! [`Target`] and [`Server::run_tool`] are the two halves of a `tools/call` (the session
//! looks at the tool between them, to run it as a task).

use std::sync::Arc;

use oxmcp_jsonrpc::ErrorObject;
use oxmcp_types::{
    CallToolParams, CallToolResult, CompleteParams, CompleteResult, GetPromptParams,
    GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, ReadResourceResult, ResourceUriParams, Tool,
};
use serde_json::Value;

use super::{
    DynHandler, HandlerCapabilities, ServerHandler, missing_prompt_arguments, paginate,
    resource_not_found, unknown_prompt, unknown_tool,
};
use crate::context::Ctx;
use crate::registry::{Registry, ToolEntry};
use crate::schema::CompiledSchema;
use crate::server::Server;
use crate::tasks::TaskStart;

/// The tool a `tools/call` names, as found before it runs.
pub(crate) enum Target {
    /// A registered tool (its schemas compiled when it was registered).
    Registered(Arc<ToolEntry>),
    /// A tool the handler lists: its schemas, compiled (cached by their text).
    Listed {
        tool: Box<Tool>,
        input: Arc<CompiledSchema>,
        output: Option<Arc<CompiledSchema>>,
    },
    /// A tool the handler does not list: called unchecked.
    Unlisted,
}

impl Target {
    /// The tool's definition, when known.
    pub(crate) fn tool(&self) -> Option<&Tool> {
        match self {
            Target::Registered(e) => Some(&e.tool),
            Target::Listed { tool, .. } => Some(tool),
            Target::Unlisted => None,
        }
    }

    /// When a task-eligible call becomes a task.
    pub(crate) fn task_start(&self) -> TaskStart {
        match self {
            Target::Registered(e) => e.task_start,
            _ => TaskStart::default(),
        }
    }
}

impl Server {
    fn dynamic(&self) -> Option<&Arc<dyn DynHandler>> {
        self.state.dynamic.handler.as_ref()
    }

    /// Whether the registry serves `uri` (a resource, or a match of a template); `None` when
    /// only someone else knows: a server answering from a user's handler, or one that
    /// declared resources without registering any (its `on_subscribe` hook decides).
    pub(crate) fn serves_uri(&self, uri: &str) -> Option<bool> {
        if self.dynamic().is_some() {
            return None;
        }
        let reg = self.state.catalogue.read();
        if reg.resources.is_empty() && reg.templates.is_empty() {
            return None;
        }
        Some(
            reg.resources.contains_key(uri)
                || reg
                    .templates
                    .iter()
                    .any(|t| t.parsed.matches(uri).is_some()),
        )
    }

    fn page_size(&self) -> usize {
        self.state.about.config.page_size
    }

    /// A page of one of the registry's lists.
    fn registry_page<T: Clone>(
        &self,
        cursor: Option<&str>,
        pick: impl FnOnce(&Registry) -> Vec<T>,
    ) -> Result<(Vec<T>, Option<String>), ErrorObject> {
        let items = pick(&self.state.catalogue.read());
        paginate(&items, cursor, self.page_size())
    }

    /// Finds the tool `name` for a call: unknown to a registry is an error; a handler's tool
    /// is looked up ([`ServerHandler::tool`]) and its schemas compiled.
    pub(crate) async fn target(&self, ctx: &Ctx, name: &str) -> Result<Target, ErrorObject> {
        let Some(h) = self.dynamic() else {
            return match self.state.catalogue.read().tools.get(name) {
                Some(e) => Ok(Target::Registered(e.clone())),
                None => Err(unknown_tool(name)),
            };
        };
        let Some(tool) = h.tool(ctx, name).await? else {
            return Ok(Target::Unlisted);
        };
        let validators = &self.state.dynamic.validators;
        let input = validators.get(&tool.name, &tool.input_schema)?;
        let output = match &tool.output_schema {
            Some(s) => Some(validators.get(&tool.name, s)?),
            None => None,
        };
        Ok(Target::Listed {
            tool: Box::new(tool),
            input,
            output,
        })
    }

    /// Runs the call of `target`: arguments checked against its input schema, a structured
    /// result against its output schema (when the definition is known).
    pub(crate) async fn run_tool(
        &self,
        target: &Target,
        ctx: Ctx,
        mut params: CallToolParams,
    ) -> Result<CallToolResult, ErrorObject> {
        let (tool, input, output) = match (target, self.dynamic()) {
            (Target::Registered(e), _) => (&e.tool, &e.input, e.output.as_ref()),
            (
                Target::Listed {
                    tool,
                    input,
                    output,
                },
                Some(_),
            ) => (&**tool, &**input, output.as_deref()),
            (_, Some(h)) => return h.call_tool(ctx, params).await,
            (_, None) => return Err(unknown_tool(&params.name)),
        };
        let args = Value::Object(params.arguments.take().unwrap_or_default());
        if let Err(errors) = input.validate(&args) {
            return Ok(CallToolResult::error(format!(
                "Invalid arguments for tool {}: {}",
                tool.name,
                errors.join("; ")
            )));
        }
        let Value::Object(args) = args else {
            return Err(ErrorObject::internal("arguments are not an object"));
        };
        let result = match (target, self.dynamic()) {
            (Target::Registered(e), _) => (e.handler)(ctx, args).await?,
            (_, Some(h)) => {
                params.arguments = Some(args);
                h.call_tool(ctx, params).await?
            }
            (_, None) => return Err(unknown_tool(&params.name)),
        };
        check_output(&tool.name, output, &result)?;
        Ok(result)
    }
}

/// A structured result must match the tool's output schema (failures are not checked).
fn check_output(
    name: &str,
    schema: Option<&CompiledSchema>,
    result: &CallToolResult,
) -> Result<(), ErrorObject> {
    let (Some(schema), false) = (schema, result.failed()) else {
        return Ok(());
    };
    let structured = result.structured_content.clone().unwrap_or(Value::Null);
    match schema.validate(&structured) {
        Ok(()) => Ok(()),
        Err(errors) => Err(ErrorObject::internal(format!(
            "tool {name} returned structuredContent that does not match its outputSchema"
        ))
        .with_data(serde_json::json!({ "errors": errors }))),
    }
}

/// A server answers as it was built: from the handler given to
/// [`crate::ServerBuilder::handler`], or from what was registered (pages of
/// `ServerConfig::page_size`, arguments validated, required prompt arguments checked).
impl ServerHandler for Server {
    fn capabilities(&self) -> HandlerCapabilities {
        self.state.served()
    }

    async fn list_tools(
        &self,
        ctx: &Ctx,
        cursor: Option<String>,
    ) -> Result<ListToolsResult, ErrorObject> {
        if let Some(h) = self.dynamic() {
            return h.list_tools(ctx, cursor).await;
        }
        let (tools, next_cursor) = self.registry_page(cursor.as_deref(), |reg| {
            reg.tools.values().map(|t| t.tool.clone()).collect()
        })?;
        Ok(ListToolsResult::default()
            .with_tools(tools)
            .with_next_cursor(next_cursor))
    }

    async fn tool(&self, ctx: &Ctx, name: &str) -> Result<Option<Tool>, ErrorObject> {
        match self.dynamic() {
            Some(h) => h.tool(ctx, name).await,
            None => Ok(ServerHandler::peek_tool(self, name)),
        }
    }

    fn peek_tool(&self, name: &str) -> Option<Tool> {
        match self.dynamic() {
            Some(h) => h.peek_tool(name),
            None => self
                .state
                .catalogue
                .read()
                .tools
                .get(name)
                .map(|e| e.tool.clone()),
        }
    }

    async fn call_tool(
        &self,
        ctx: Ctx,
        params: CallToolParams,
    ) -> Result<CallToolResult, ErrorObject> {
        let target = self.target(&ctx, &params.name).await?;
        self.run_tool(&target, ctx, params).await
    }

    async fn list_prompts(
        &self,
        ctx: &Ctx,
        cursor: Option<String>,
    ) -> Result<ListPromptsResult, ErrorObject> {
        if let Some(h) = self.dynamic() {
            return h.list_prompts(ctx, cursor).await;
        }
        let (prompts, next_cursor) = self.registry_page(cursor.as_deref(), |reg| {
            reg.prompts.values().map(|p| p.prompt.clone()).collect()
        })?;
        Ok(ListPromptsResult {
            prompts,
            next_cursor,
            ..Default::default()
        })
    }

    async fn get_prompt(
        &self,
        ctx: Ctx,
        params: GetPromptParams,
    ) -> Result<GetPromptResult, ErrorObject> {
        if let Some(h) = self.dynamic() {
            return h.get_prompt(ctx, params).await;
        }
        let Some(entry) = self
            .state
            .catalogue
            .read()
            .prompts
            .get(&params.name)
            .cloned()
        else {
            return Err(unknown_prompt(&params.name));
        };
        let args = params.arguments.unwrap_or_default();
        missing_prompt_arguments(&entry.prompt, &args)?;
        (entry.handler)(ctx, args).await
    }

    async fn list_resources(
        &self,
        ctx: &Ctx,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, ErrorObject> {
        if let Some(h) = self.dynamic() {
            return h.list_resources(ctx, cursor).await;
        }
        let (resources, next_cursor) = self.registry_page(cursor.as_deref(), |reg| {
            reg.resources.values().map(|r| r.resource.clone()).collect()
        })?;
        Ok(ListResourcesResult {
            resources,
            next_cursor,
            ..Default::default()
        })
    }

    async fn list_resource_templates(
        &self,
        ctx: &Ctx,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, ErrorObject> {
        if let Some(h) = self.dynamic() {
            return h.list_resource_templates(ctx, cursor).await;
        }
        let (resource_templates, next_cursor) = self.registry_page(cursor.as_deref(), |reg| {
            reg.templates.iter().map(|t| t.template.clone()).collect()
        })?;
        Ok(ListResourceTemplatesResult {
            resource_templates,
            next_cursor,
            ..Default::default()
        })
    }

    async fn read_resource(
        &self,
        ctx: Ctx,
        params: ResourceUriParams,
    ) -> Result<ReadResourceResult, ErrorObject> {
        if let Some(h) = self.dynamic() {
            return h.read_resource(ctx, params).await;
        }
        let uri = params.uri;
        let (direct, template) = {
            let reg = self.state.catalogue.read();
            let direct = reg.resources.get(&uri).map(|r| r.handler.clone());
            let template = match direct {
                Some(_) => None,
                None => reg
                    .templates
                    .iter()
                    .find_map(|t| t.parsed.matches(&uri).map(|vars| (t.handler.clone(), vars))),
            };
            (direct, template)
        };
        match (direct, template) {
            (Some(h), _) => h(ctx, uri).await,
            (None, Some((h, vars))) => h(ctx, uri, vars).await,
            (None, None) => Err(resource_not_found(ctx.protocol_version(), &uri)),
        }
    }

    async fn complete(
        &self,
        ctx: Ctx,
        params: CompleteParams,
    ) -> Result<CompleteResult, ErrorObject> {
        if let Some(h) = self.dynamic() {
            return h.complete(ctx, params).await;
        }
        match self.state.catalogue.completion.clone() {
            Some(h) => h(ctx, params).await,
            None => Ok(CompleteResult::default()),
        }
    }
}
