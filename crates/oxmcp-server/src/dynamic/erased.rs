//! [`DynHandler`]: [`ServerHandler`] behind a pointer (boxed futures), so that a server holds
//! `Arc<dyn DynHandler>` whatever the user's handler is.

use futures::future::BoxFuture;
use oxmcp_jsonrpc::ErrorObject;
use oxmcp_types::{
    CallToolParams, CallToolResult, CompleteParams, CompleteResult, GetPromptParams,
    GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, ReadResourceResult, ResourceUriParams, Tool,
};

use super::{HandlerCapabilities, ServerHandler};
use crate::context::Ctx;

type Answer<'a, T> = BoxFuture<'a, Result<T, ErrorObject>>;

/// The object-safe face of a [`ServerHandler`].
pub(crate) trait DynHandler: Send + Sync {
    fn capabilities(&self) -> HandlerCapabilities;
    fn list_tools<'a>(
        &'a self,
        ctx: &'a Ctx,
        cursor: Option<String>,
    ) -> Answer<'a, ListToolsResult>;
    fn tool<'a>(&'a self, ctx: &'a Ctx, name: &'a str) -> Answer<'a, Option<Tool>>;
    fn peek_tool(&self, name: &str) -> Option<Tool>;
    fn call_tool(&self, ctx: Ctx, params: CallToolParams) -> Answer<'_, CallToolResult>;
    fn list_prompts<'a>(
        &'a self,
        ctx: &'a Ctx,
        cursor: Option<String>,
    ) -> Answer<'a, ListPromptsResult>;
    fn get_prompt(&self, ctx: Ctx, params: GetPromptParams) -> Answer<'_, GetPromptResult>;
    fn list_resources<'a>(
        &'a self,
        ctx: &'a Ctx,
        cursor: Option<String>,
    ) -> Answer<'a, ListResourcesResult>;
    fn list_resource_templates<'a>(
        &'a self,
        ctx: &'a Ctx,
        cursor: Option<String>,
    ) -> Answer<'a, ListResourceTemplatesResult>;
    fn read_resource(&self, ctx: Ctx, params: ResourceUriParams) -> Answer<'_, ReadResourceResult>;
    fn complete(&self, ctx: Ctx, params: CompleteParams) -> Answer<'_, CompleteResult>;
}

impl<H: ServerHandler> DynHandler for H {
    fn capabilities(&self) -> HandlerCapabilities {
        ServerHandler::capabilities(self)
    }

    fn list_tools<'a>(
        &'a self,
        ctx: &'a Ctx,
        cursor: Option<String>,
    ) -> Answer<'a, ListToolsResult> {
        Box::pin(ServerHandler::list_tools(self, ctx, cursor))
    }

    fn tool<'a>(&'a self, ctx: &'a Ctx, name: &'a str) -> Answer<'a, Option<Tool>> {
        Box::pin(ServerHandler::tool(self, ctx, name))
    }

    fn peek_tool(&self, name: &str) -> Option<Tool> {
        ServerHandler::peek_tool(self, name)
    }

    fn call_tool(&self, ctx: Ctx, params: CallToolParams) -> Answer<'_, CallToolResult> {
        Box::pin(ServerHandler::call_tool(self, ctx, params))
    }

    fn list_prompts<'a>(
        &'a self,
        ctx: &'a Ctx,
        cursor: Option<String>,
    ) -> Answer<'a, ListPromptsResult> {
        Box::pin(ServerHandler::list_prompts(self, ctx, cursor))
    }

    fn get_prompt(&self, ctx: Ctx, params: GetPromptParams) -> Answer<'_, GetPromptResult> {
        Box::pin(ServerHandler::get_prompt(self, ctx, params))
    }

    fn list_resources<'a>(
        &'a self,
        ctx: &'a Ctx,
        cursor: Option<String>,
    ) -> Answer<'a, ListResourcesResult> {
        Box::pin(ServerHandler::list_resources(self, ctx, cursor))
    }

    fn list_resource_templates<'a>(
        &'a self,
        ctx: &'a Ctx,
        cursor: Option<String>,
    ) -> Answer<'a, ListResourceTemplatesResult> {
        Box::pin(ServerHandler::list_resource_templates(self, ctx, cursor))
    }

    fn read_resource(&self, ctx: Ctx, params: ResourceUriParams) -> Answer<'_, ReadResourceResult> {
        Box::pin(ServerHandler::read_resource(self, ctx, params))
    }

    fn complete(&self, ctx: Ctx, params: CompleteParams) -> Answer<'_, CompleteResult> {
        Box::pin(ServerHandler::complete(self, ctx, params))
    }
}
