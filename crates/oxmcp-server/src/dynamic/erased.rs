//! [`Handler`]: what a server answers lists, calls, reads and completions with, behind a
//! pointer, so that a server holds one `Arc<dyn Handler>` whoever answers: its registry
//! ([`crate::registry::Catalogue`]) or the user's [`ServerHandler`] ([`UserHandler`]).

use futures::future::{BoxFuture, Either, Ready};
use oxmcp_jsonrpc::ErrorObject;
use oxmcp_types::{
    CallToolParams, CallToolResult, CompleteParams, CompleteResult, GetPromptParams,
    GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, ReadResourceResult, ResourceUriParams, Tool,
};

use super::{HandlerCapabilities, ServerHandler, Target, Validators};
use crate::context::Ctx;

/// An answer: ready at once (a registry's lists, errors), or a future to await (a handler's,
/// a registered function's: already boxed, so answering from the registry allocates nothing
/// more).
pub(crate) type Answer<'a, T> =
    Either<Ready<Result<T, ErrorObject>>, BoxFuture<'a, Result<T, ErrorObject>>>;

/// An answer ready now.
pub(crate) fn now<'a, T>(result: Result<T, ErrorObject>) -> Answer<'a, T> {
    Either::Left(futures::future::ready(result))
}

/// The object-safe face of whoever answers a server's tools, prompts, resources and
/// completions: [`ServerHandler`]'s methods, and the two halves of a `tools/call`.
pub(crate) trait Handler: Send + Sync {
    fn capabilities(&self) -> HandlerCapabilities;
    fn list_tools<'a>(
        &'a self,
        ctx: &'a Ctx,
        cursor: Option<String>,
    ) -> Answer<'a, ListToolsResult>;
    fn tool<'a>(&'a self, ctx: &'a Ctx, name: &'a str) -> Answer<'a, Option<Tool>>;
    fn peek_tool(&self, name: &str) -> Option<Tool>;
    /// Finds the tool a `tools/call` names, its schemas compiled.
    fn target<'a>(&'a self, ctx: &'a Ctx, name: &'a str) -> Answer<'a, Target>;
    /// Calls the tool `target` (its arguments already checked when its definition is known).
    fn call_tool<'a>(
        &'a self,
        target: &Target,
        ctx: Ctx,
        params: CallToolParams,
    ) -> Answer<'a, CallToolResult>;
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
    /// Whether `uri` is served (a resource, or a match of a template); `None` when only
    /// someone else knows (a user's handler, or a registry without resources: the
    /// `on_subscribe` hook decides).
    fn serves_uri(&self, uri: &str) -> Option<bool>;
}

/// The user's [`ServerHandler`], and the schemas of its tools compiled.
pub(crate) struct UserHandler<H> {
    handler: H,
    validators: Validators,
}

impl<H> UserHandler<H> {
    pub(crate) fn new(handler: H) -> Self {
        Self {
            handler,
            validators: Validators::default(),
        }
    }
}

impl<H: ServerHandler> UserHandler<H> {
    /// The handler's definition of `name`, its schemas compiled (cached by their text).
    async fn find(&self, ctx: &Ctx, name: &str) -> Result<Target, ErrorObject> {
        let Some(tool) = self.handler.tool(ctx, name).await? else {
            return Ok(Target::Unlisted);
        };
        let input = self.validators.get(&tool.name, &tool.input_schema)?;
        let output = match &tool.output_schema {
            Some(s) => Some(self.validators.get(&tool.name, s)?),
            None => None,
        };
        Ok(Target::Listed {
            tool: Box::new(tool),
            input,
            output,
        })
    }
}

impl<H: ServerHandler> Handler for UserHandler<H> {
    fn capabilities(&self) -> HandlerCapabilities {
        self.handler.capabilities()
    }

    fn list_tools<'a>(
        &'a self,
        ctx: &'a Ctx,
        cursor: Option<String>,
    ) -> Answer<'a, ListToolsResult> {
        Either::Right(Box::pin(self.handler.list_tools(ctx, cursor)))
    }

    fn tool<'a>(&'a self, ctx: &'a Ctx, name: &'a str) -> Answer<'a, Option<Tool>> {
        Either::Right(Box::pin(self.handler.tool(ctx, name)))
    }

    fn peek_tool(&self, name: &str) -> Option<Tool> {
        self.handler.peek_tool(name)
    }

    fn target<'a>(&'a self, ctx: &'a Ctx, name: &'a str) -> Answer<'a, Target> {
        Either::Right(Box::pin(self.find(ctx, name)))
    }

    fn call_tool<'a>(
        &'a self,
        _target: &Target,
        ctx: Ctx,
        params: CallToolParams,
    ) -> Answer<'a, CallToolResult> {
        Either::Right(Box::pin(self.handler.call_tool(ctx, params)))
    }

    fn list_prompts<'a>(
        &'a self,
        ctx: &'a Ctx,
        cursor: Option<String>,
    ) -> Answer<'a, ListPromptsResult> {
        Either::Right(Box::pin(self.handler.list_prompts(ctx, cursor)))
    }

    fn get_prompt(&self, ctx: Ctx, params: GetPromptParams) -> Answer<'_, GetPromptResult> {
        Either::Right(Box::pin(self.handler.get_prompt(ctx, params)))
    }

    fn list_resources<'a>(
        &'a self,
        ctx: &'a Ctx,
        cursor: Option<String>,
    ) -> Answer<'a, ListResourcesResult> {
        Either::Right(Box::pin(self.handler.list_resources(ctx, cursor)))
    }

    fn list_resource_templates<'a>(
        &'a self,
        ctx: &'a Ctx,
        cursor: Option<String>,
    ) -> Answer<'a, ListResourceTemplatesResult> {
        Either::Right(Box::pin(self.handler.list_resource_templates(ctx, cursor)))
    }

    fn read_resource(&self, ctx: Ctx, params: ResourceUriParams) -> Answer<'_, ReadResourceResult> {
        Either::Right(Box::pin(self.handler.read_resource(ctx, params)))
    }

    fn complete(&self, ctx: Ctx, params: CompleteParams) -> Answer<'_, CompleteResult> {
        Either::Right(Box::pin(self.handler.complete(ctx, params)))
    }

    fn serves_uri(&self, _uri: &str) -> Option<bool> {
        None
    }
}
