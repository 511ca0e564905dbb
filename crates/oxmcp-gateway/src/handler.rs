//! The gateway's [`ServerHandler`]: lists answered from the [`Catalog`] (each upstream's
//! lists as last read), calls, reads and completions forwarded to the upstream that owns the
//! name or URI (in the set of [`Upstreams`] as it is when the request comes).

use std::sync::Arc;

use oxmcp_jsonrpc::ErrorObject;
use oxmcp_server::dynamic::{
    missing_prompt_arguments, paginate, resource_not_found, unknown_prompt, unknown_tool,
};
use oxmcp_server::{Ctx, HandlerCapabilities, ServerHandler};
use oxmcp_types::{
    CacheScope, CallToolParams, CallToolResult, CompleteParams, CompleteResult, GetPromptParams,
    GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, ReadResourceResult, ResourceUriParams, Tool,
};

use super::{Catalog, Pool, Upstreams, forward};

/// Answers for every upstream at once.
pub(super) struct Handler {
    pub(super) catalog: Arc<Catalog>,
    pub(super) upstreams: Arc<Upstreams>,
}

impl Handler {
    /// The connections to `upstream` now (a reload may have taken it away since it was listed).
    fn pool(&self, upstream: &str) -> Result<Arc<Pool>, ErrorObject> {
        self.upstreams
            .now()
            .pools
            .get(upstream)
            .cloned()
            .ok_or_else(|| ErrorObject::internal(format!("no upstream {upstream}")))
    }
}

/// A page of `items` at the server's page size.
fn page<T: Clone>(
    ctx: &Ctx,
    items: &[T],
    cursor: Option<String>,
) -> Result<(Vec<T>, Option<String>), ErrorObject> {
    paginate(items, cursor.as_deref(), ctx.server().config().page_size)
}

/// The cache scope of the gateway's 2026-07-28 results: what the server's settings say,
/// since every caller sees the same lists (a handler's results are private otherwise).
fn scope(ctx: &Ctx) -> Option<CacheScope> {
    let modern = !ctx.protocol_version().is_legacy();
    modern.then(|| ctx.server().config().cache.scope)
}

impl ServerHandler for Handler {
    fn capabilities(&self) -> HandlerCapabilities {
        HandlerCapabilities::none()
            .with_tools()
            .with_prompts()
            .with_resources()
            .with_completions()
            .with_list_changed(true)
            .with_subscribe(true)
    }

    async fn list_tools(
        &self,
        ctx: &Ctx,
        cursor: Option<String>,
    ) -> Result<ListToolsResult, ErrorObject> {
        let (tools, next_cursor) = page(ctx, &self.catalog.snapshot().tool_list, cursor)?;
        Ok(ListToolsResult::default()
            .with_tools(tools)
            .with_next_cursor(next_cursor)
            .with_cache_scope(scope(ctx)))
    }

    async fn tool(&self, _ctx: &Ctx, name: &str) -> Result<Option<Tool>, ErrorObject> {
        Ok(self.peek_tool(name))
    }

    fn peek_tool(&self, name: &str) -> Option<Tool> {
        let snapshot = self.catalog.snapshot();
        snapshot.tools.get(name).map(|t| t.tool.clone())
    }

    async fn call_tool(
        &self,
        ctx: Ctx,
        params: CallToolParams,
    ) -> Result<CallToolResult, ErrorObject> {
        let Some(route) = self.catalog.snapshot().tools.get(&params.name).cloned() else {
            return Err(unknown_tool(&params.name));
        };
        let pool = self.pool(&route.upstream)?;
        let args = params.arguments.unwrap_or_default();
        forward::call(&pool, ctx, &route.original, args, route.retry).await
    }

    async fn list_prompts(
        &self,
        ctx: &Ctx,
        cursor: Option<String>,
    ) -> Result<ListPromptsResult, ErrorObject> {
        let (prompts, next_cursor) = page(ctx, &self.catalog.snapshot().prompt_list, cursor)?;
        Ok(ListPromptsResult {
            prompts,
            next_cursor,
            cache_scope: scope(ctx),
            ..Default::default()
        })
    }

    async fn get_prompt(
        &self,
        ctx: Ctx,
        params: GetPromptParams,
    ) -> Result<GetPromptResult, ErrorObject> {
        let Some(route) = self.catalog.snapshot().prompts.get(&params.name).cloned() else {
            return Err(unknown_prompt(&params.name));
        };
        let args = params.arguments.unwrap_or_default();
        missing_prompt_arguments(&route.prompt, &args)?;
        let pool = self.pool(&route.upstream)?;
        forward::get_prompt(&pool, ctx, &route.original, args).await
    }

    async fn list_resources(
        &self,
        ctx: &Ctx,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, ErrorObject> {
        let (resources, next_cursor) = page(ctx, &self.catalog.snapshot().resource_list, cursor)?;
        Ok(ListResourcesResult {
            resources,
            next_cursor,
            cache_scope: scope(ctx),
            ..Default::default()
        })
    }

    async fn list_resource_templates(
        &self,
        ctx: &Ctx,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, ErrorObject> {
        let (resource_templates, next_cursor) =
            page(ctx, &self.catalog.snapshot().template_list, cursor)?;
        Ok(ListResourceTemplatesResult {
            resource_templates,
            next_cursor,
            cache_scope: scope(ctx),
            ..Default::default()
        })
    }

    /// A listed resource, else the first listed template that matches.
    async fn read_resource(
        &self,
        ctx: Ctx,
        params: ResourceUriParams,
    ) -> Result<ReadResourceResult, ErrorObject> {
        let uri = params.uri;
        let upstream = self.catalog.snapshot().owner(&uri).map(str::to_owned);
        let Some(upstream) = upstream else {
            return Err(resource_not_found(ctx.protocol_version(), &uri));
        };
        let scope = scope(&ctx);
        let mut result = forward::read(&self.pool(&upstream)?, ctx, uri).await?;
        result.cache_scope = result.cache_scope.or(scope);
        Ok(result)
    }

    async fn complete(
        &self,
        ctx: Ctx,
        params: CompleteParams,
    ) -> Result<CompleteResult, ErrorObject> {
        forward::complete(&self.upstreams.now(), &ctx, params).await
    }
}
