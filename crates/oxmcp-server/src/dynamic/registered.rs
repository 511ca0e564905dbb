//! [`Server`] as a [`ServerHandler`]: it asks its one [`Handler`] (the user's handler when
//! it was built with one, its registry otherwise). The session answers every list, call,
//! read and completion through it; [`Target`] and [`Server::run_tool`] are the two halves of
//! a `tools/call` (the session looks at the tool between them, to run it as a task).

use std::sync::Arc;

use oxmcp_jsonrpc::ErrorObject;
use oxmcp_types::{
    CallToolParams, CallToolResult, CompleteParams, CompleteResult, GetPromptParams,
    GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, ReadResourceResult, ResourceUriParams, Tool,
};
use serde_json::Value;

use super::erased::Handler;
use super::{HandlerCapabilities, ServerHandler};
use crate::context::Ctx;
use crate::registry::ToolEntry;
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
    /// The tool's definition and compiled schemas, when known.
    fn schemas(&self) -> Option<(&Tool, &CompiledSchema, Option<&CompiledSchema>)> {
        match self {
            Target::Registered(e) => Some((&e.tool, &e.input, e.output.as_ref())),
            Target::Listed {
                tool,
                input,
                output,
            } => Some((&**tool, &**input, output.as_deref())),
            Target::Unlisted => None,
        }
    }

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
    /// Who answers: the registry, or the user's handler.
    fn handler(&self) -> &dyn Handler {
        &*self.state.handler
    }

    /// Whether the server serves `uri` (a resource, or a match of a template); `None` when
    /// only someone else knows: a server answering from a user's handler, or one that
    /// declared resources without registering any (its `on_subscribe` hook decides).
    pub(crate) fn serves_uri(&self, uri: &str) -> Option<bool> {
        self.handler().serves_uri(uri)
    }

    /// Finds the tool `name` for a call: unknown to a registry is an error; a handler's tool
    /// is looked up ([`ServerHandler::tool`]) and its schemas compiled.
    pub(crate) async fn target(&self, ctx: &Ctx, name: &str) -> Result<Target, ErrorObject> {
        self.handler().target(ctx, name).await
    }

    /// Runs the call of `target`: arguments checked against its input schema, a structured
    /// result against its output schema (when the definition is known).
    pub(crate) async fn run_tool(
        &self,
        target: &Target,
        ctx: Ctx,
        mut params: CallToolParams,
    ) -> Result<CallToolResult, ErrorObject> {
        let Some((tool, input, output)) = target.schemas() else {
            return self.handler().call_tool(target, ctx, params).await;
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
        params.arguments = Some(args);
        let result = self.handler().call_tool(target, ctx, params).await?;
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
        self.handler().list_tools(ctx, cursor).await
    }

    async fn tool(&self, ctx: &Ctx, name: &str) -> Result<Option<Tool>, ErrorObject> {
        self.handler().tool(ctx, name).await
    }

    fn peek_tool(&self, name: &str) -> Option<Tool> {
        self.handler().peek_tool(name)
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
        self.handler().list_prompts(ctx, cursor).await
    }

    async fn get_prompt(
        &self,
        ctx: Ctx,
        params: GetPromptParams,
    ) -> Result<GetPromptResult, ErrorObject> {
        self.handler().get_prompt(ctx, params).await
    }

    async fn list_resources(
        &self,
        ctx: &Ctx,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, ErrorObject> {
        self.handler().list_resources(ctx, cursor).await
    }

    async fn list_resource_templates(
        &self,
        ctx: &Ctx,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, ErrorObject> {
        self.handler().list_resource_templates(ctx, cursor).await
    }

    async fn read_resource(
        &self,
        ctx: Ctx,
        params: ResourceUriParams,
    ) -> Result<ReadResourceResult, ErrorObject> {
        self.handler().read_resource(ctx, params).await
    }

    async fn complete(
        &self,
        ctx: Ctx,
        params: CompleteParams,
    ) -> Result<CompleteResult, ErrorObject> {
        self.handler().complete(ctx, params).await
    }
}
