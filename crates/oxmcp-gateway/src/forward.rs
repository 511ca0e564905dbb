//! Gateway tools, prompts, resources and completions: each forwards to its upstream.

use std::collections::BTreeMap;
use std::sync::Arc;

use oxmcp_client::{RequestOptions, RetryChoice};
use oxmcp_jsonrpc::ErrorObject;
use oxmcp_server::Ctx;
use oxmcp_types::{
    CallToolResult, CompleteParams, CompleteResult, CompletionReference, GetPromptResult,
    JsonObject, ReadResourceResult,
};

use super::{Event, Pool, Set, relay, route_name, route_uri};

/// Calls `tool` on the upstream, passing progress back. `retry` says whether a failed call
/// may be repeated (from the tool's annotations, as the gateway lists them).
pub(super) async fn call(
    pool: &Arc<Pool>,
    ctx: Ctx,
    tool: &str,
    args: JsonObject,
    retry: RetryChoice,
) -> Result<CallToolResult, ErrorObject> {
    let (progress_link, progress_ctx) = (pool.link.clone(), ctx.clone());
    let mut options = RequestOptions::default().on_progress(move |p| {
        progress_link.send(Event::Progress(progress_ctx.clone(), p));
    });
    // The caller's trace goes on to the upstream (W3C trace context in `_meta`).
    if let Some(trace) = ctx.trace_context() {
        options = options.trace(&trace);
    }
    relay(pool, &ctx, |client| async move {
        client.call_tool_retry(tool, args, &options, retry).await
    })
    .await
}

/// Gets `prompt` from the upstream.
pub(super) async fn get_prompt(
    pool: &Arc<Pool>,
    ctx: Ctx,
    prompt: &str,
    args: BTreeMap<String, String>,
) -> Result<GetPromptResult, ErrorObject> {
    relay(pool, &ctx, |client| async move {
        client.get_prompt(prompt, args).await
    })
    .await
}

/// Reads an exposed URI from its upstream; the contents carry exposed URIs too.
pub(super) async fn read(
    pool: &Arc<Pool>,
    ctx: Ctx,
    uri: String,
) -> Result<ReadResourceResult, ErrorObject> {
    let link = pool.link.clone();
    let Some(original) = link.original_uri(&uri).map(str::to_owned) else {
        let prefix = link.exposed_uri("");
        return Err(ErrorObject::invalid_params(format!(
            "not a {prefix} URI: {uri}"
        )));
    };
    let mut result = relay(pool, &ctx, |client| async move {
        client.read_resource(&original).await
    })
    .await?;
    for c in &mut result.contents {
        c.uri = link.exposed_uri(&c.uri);
    }
    Ok(result)
}

/// `completion/complete` for a gateway prompt or template: asked of its upstream.
pub(super) async fn complete(
    set: &Set,
    ctx: &Ctx,
    mut params: CompleteParams,
) -> Result<CompleteResult, ErrorObject> {
    let unknown = || ErrorObject::invalid_params("Invalid params: unknown completion reference");
    let (link, original) = match &params.reference {
        CompletionReference::Prompt { name } => {
            let (link, prompt) = route_name(&set.links, name).ok_or_else(unknown)?;
            (link, prompt.to_owned())
        }
        CompletionReference::Resource { uri } => {
            let (link, original) = route_uri(&set.links, uri).ok_or_else(unknown)?;
            (link, original.to_owned())
        }
    };
    let pool = set.pools.get(&link.name).ok_or_else(unknown)?;
    match &mut params.reference {
        CompletionReference::Prompt { name } => *name = original,
        CompletionReference::Resource { uri } => *uri = original,
    }
    relay(pool, ctx, |client| async move {
        if client.server_capabilities().completions.is_none() {
            return Ok(CompleteResult::default());
        }
        client.complete(&params).await
    })
    .await
}
