//! [`ServerHandler`]: a server that computes its tools, prompts and resources per request
//! (per caller, per tenant, from a database) instead of registering them up front.
//!
//! A [`crate::Server`] always answers `tools/*`, `prompts/*`, `resources/*` and
//! `completion/complete` through this trait: a server built from registrations answers from
//! its registry ([`crate::Server`] implements the trait), a server built with
//! [`crate::ServerBuilder::handler`] from the user's handler. Everything around the handler
//! stays the server's: the lifecycle and both protocol eras, `_meta`, results fitted to the
//! negotiated version, 2026-07-28 cache hints, multi round-trip input, tasks, progress,
//! cancellation, subscriptions and `list_changed` notifications
//! ([`crate::Server::notify_tool_list_changed`] and its siblings).
//!
//! Tool arguments are validated before [`ServerHandler::call_tool`] runs whenever
//! [`ServerHandler::tool`] finds the tool's definition: against its `inputSchema` (and a
//! structured result against its `outputSchema`), with compiled schemas cached by their text.
//! See [`ServerHandler::tool`] for the rule.

mod catalogue;
mod erased;
mod registered;
mod validators;

use std::collections::BTreeMap;
use std::future::Future;

use oxmcp_jsonrpc::{ErrorCode, ErrorObject};
use oxmcp_types::{
    CallToolParams, CallToolResult, CompleteParams, CompleteResult, GetPromptParams,
    GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, Prompt, ProtocolVersion, ReadResourceResult, ResourceUriParams, Tool,
};

use crate::context::Ctx;
use crate::echo::echo;

pub(crate) use erased::{Handler, UserHandler};
pub(crate) use registered::Target;
use validators::Validators;

/// Pages [`ServerHandler::tool`]'s default reads at most while looking for a tool.
const MAX_LOOKUP_PAGES: usize = 100;

/// What a [`ServerHandler`] serves: the method families it answers and the capabilities the
/// server declares for them. A family not served is not declared, and its methods are
/// answered with -32601 (method not found), as the specification has it for a capability the
/// server did not declare; a family served answers with the handler's methods, whose
/// defaults are empty lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandlerCapabilities {
    /// `tools/list` and `tools/call`.
    pub tools: bool,
    /// `prompts/list` and `prompts/get`.
    pub prompts: bool,
    /// `resources/list`, `resources/templates/list` and `resources/read`.
    pub resources: bool,
    /// `completion/complete`.
    pub completions: bool,
    /// Declares `listChanged` on the families served: the handler announces changes with
    /// [`crate::Server::notify_tool_list_changed`] and its siblings.
    pub list_changed: bool,
    /// Declares resource `subscribe` (legacy `resources/subscribe`; 2026-07-28 clients use
    /// `subscriptions/listen` either way); updates are announced with
    /// [`crate::Server::notify_resource_updated`].
    pub subscribe: bool,
}

impl Default for HandlerCapabilities {
    /// Tools, with `listChanged`: what most dynamic servers serve.
    fn default() -> Self {
        Self::none().with_tools().with_list_changed(true)
    }
}

impl HandlerCapabilities {
    /// Nothing served.
    pub const fn none() -> Self {
        Self {
            tools: false,
            prompts: false,
            resources: false,
            completions: false,
            list_changed: false,
            subscribe: false,
        }
    }

    /// Serves tools.
    pub const fn with_tools(mut self) -> Self {
        self.tools = true;
        self
    }

    /// Serves prompts.
    pub const fn with_prompts(mut self) -> Self {
        self.prompts = true;
        self
    }

    /// Serves resources and resource templates.
    pub const fn with_resources(mut self) -> Self {
        self.resources = true;
        self
    }

    /// Serves `completion/complete`.
    pub const fn with_completions(mut self) -> Self {
        self.completions = true;
        self
    }

    /// Whether `listChanged` is declared.
    pub const fn with_list_changed(mut self, on: bool) -> Self {
        self.list_changed = on;
        self
    }

    /// Whether resource `subscribe` is declared.
    pub const fn with_subscribe(mut self, on: bool) -> Self {
        self.subscribe = on;
        self
    }
}

/// A server's tools, prompts, resources and completions, computed per request.
///
/// Every method has a default: an empty list, or the error a registry-built server answers
/// for an unknown name. Implement those the server serves, and say which in
/// [`ServerHandler::capabilities`] (tools alone by default). The [`Ctx`] tells who is asking
/// ([`Ctx::principal`], [`Ctx::identity`], [`Ctx::meta`], [`Ctx::http_extensions`]) and
/// carries progress, logging, cancellation and input requests, as for registered tools.
///
/// Install it with [`crate::ServerBuilder::handler`]. A [`crate::Server`] built from
/// registrations implements this trait too, so a handler may answer part of its lists from
/// one (delegating is plain method calls).
///
/// Lists are paginated by the handler: it gets the client's `cursor` and returns
/// `next_cursor`. [`paginate`] cuts a page out of a list held in memory.
///
/// 2026-07-28 results are cacheable: the server adds `ttlMs` (`ServerConfig::cache`) and
/// `cacheScope: private`, since a handler may answer each caller differently, unless the
/// handler's result sets `ttl_ms` or `cache_scope` itself (say `Public` for lists that are
/// the same for everyone).
pub trait ServerHandler: Send + Sync + 'static {
    /// What this handler serves (tools with `listChanged` by default). Read when the server
    /// declares its capabilities and routes each request: keep it cheap and constant.
    fn capabilities(&self) -> HandlerCapabilities {
        HandlerCapabilities::default()
    }

    /// `tools/list`: one page of the tools this caller may see (none by default).
    fn list_tools(
        &self,
        ctx: &Ctx,
        cursor: Option<String>,
    ) -> impl Future<Output = Result<ListToolsResult, ErrorObject>> + Send {
        let _ = (ctx, cursor);
        async { Ok(ListToolsResult::default()) }
    }

    /// The definition of tool `name` as this caller sees it, if it exists: the server reads
    /// it before each `tools/call` to validate the arguments against its `inputSchema` (and a
    /// structured result against its `outputSchema`) and to see whether it may run as a task.
    /// `None`: the call goes to [`ServerHandler::call_tool`] unvalidated (hidden tools), whose
    /// default answers "Unknown tool".
    ///
    /// The default reads [`ServerHandler::list_tools`] page by page (at most 100) until it
    /// finds the tool: override it when a direct lookup is cheaper. Compiled schemas are
    /// cached by their text (a bounded cache), so an unchanged schema is compiled once; a
    /// schema that does not compile makes the call fail (-32603) rather than run unchecked.
    fn tool(
        &self,
        ctx: &Ctx,
        name: &str,
    ) -> impl Future<Output = Result<Option<Tool>, ErrorObject>> + Send {
        async move {
            let mut cursor = None;
            for _ in 0..MAX_LOOKUP_PAGES {
                let page = self.list_tools(ctx, cursor).await?;
                if let Some(tool) = page.tools.into_iter().find(|t| t.name == name) {
                    return Ok(Some(tool));
                }
                cursor = page.next_cursor;
                if cursor.is_none() {
                    break;
                }
            }
            Ok(None)
        }
    }

    /// The definition of tool `name` when it does not depend on the caller, known without a
    /// request: [`crate::Server::tool`] answers with it, which is how a 2026-07-28 HTTP
    /// transport learns the tool's `Mcp-Param-*` headers to check them. `None` by default:
    /// no header checks for this handler's tools.
    fn peek_tool(&self, name: &str) -> Option<Tool> {
        let _ = name;
        None
    }

    /// `tools/call`. The default answers as a registry does for a tool it does not have
    /// ([`unknown_tool`]). An `Err` is a JSON-RPC error; a tool's own failure is a result
    /// with `isError: true` ([`CallToolResult::error`]).
    fn call_tool(
        &self,
        ctx: Ctx,
        params: CallToolParams,
    ) -> impl Future<Output = Result<CallToolResult, ErrorObject>> + Send {
        let _ = ctx;
        async move { Err(unknown_tool(&params.name)) }
    }

    /// `prompts/list`: one page (none by default).
    fn list_prompts(
        &self,
        ctx: &Ctx,
        cursor: Option<String>,
    ) -> impl Future<Output = Result<ListPromptsResult, ErrorObject>> + Send {
        let _ = (ctx, cursor);
        async { Ok(ListPromptsResult::default()) }
    }

    /// `prompts/get`. The default answers [`unknown_prompt`]; [`missing_prompt_arguments`]
    /// checks required arguments as a registry does.
    fn get_prompt(
        &self,
        ctx: Ctx,
        params: GetPromptParams,
    ) -> impl Future<Output = Result<GetPromptResult, ErrorObject>> + Send {
        let _ = ctx;
        async move { Err(unknown_prompt(&params.name)) }
    }

    /// `resources/list`: one page (none by default).
    fn list_resources(
        &self,
        ctx: &Ctx,
        cursor: Option<String>,
    ) -> impl Future<Output = Result<ListResourcesResult, ErrorObject>> + Send {
        let _ = (ctx, cursor);
        async { Ok(ListResourcesResult::default()) }
    }

    /// `resources/templates/list`: one page (none by default).
    fn list_resource_templates(
        &self,
        ctx: &Ctx,
        cursor: Option<String>,
    ) -> impl Future<Output = Result<ListResourceTemplatesResult, ErrorObject>> + Send {
        let _ = (ctx, cursor);
        async { Ok(ListResourceTemplatesResult::default()) }
    }

    /// `resources/read` (URIs over `ServerConfig::max_uri_len` are refused before). The
    /// default answers [`resource_not_found`] with the code of the request's version.
    fn read_resource(
        &self,
        ctx: Ctx,
        params: ResourceUriParams,
    ) -> impl Future<Output = Result<ReadResourceResult, ErrorObject>> + Send {
        async move { Err(resource_not_found(ctx.protocol_version(), &params.uri)) }
    }

    /// `completion/complete` (at most 100 values are sent). No suggestions by default.
    fn complete(
        &self,
        ctx: Ctx,
        params: CompleteParams,
    ) -> impl Future<Output = Result<CompleteResult, ErrorObject>> + Send {
        let _ = (ctx, params);
        async { Ok(CompleteResult::default()) }
    }
}

/// The error for a `tools/call` naming a tool the server does not have: -32602
/// `Unknown tool: NAME`, with `data.tool` (the name, shortened if it is huge).
pub fn unknown_tool(name: &str) -> ErrorObject {
    let name = echo(name);
    ErrorObject::invalid_params(format!("Unknown tool: {name}"))
        .with_data(serde_json::json!({ "tool": name }))
}

/// The error for a `prompts/get` naming a prompt the server does not have: -32602
/// `Unknown prompt: NAME`.
pub fn unknown_prompt(name: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!("Unknown prompt: {}", echo(name)))
}

/// The error for a `resources/read` of a URI the server does not have, with the code of
/// `version` (-32002 before 2026-07-28, -32602 since) and `data.uri`.
pub fn resource_not_found(version: ProtocolVersion, uri: &str) -> ErrorObject {
    let code = ErrorCode(version.resource_not_found_code());
    let uri = echo(uri);
    ErrorObject::new(code, format!("Resource not found: {uri}"))
        .with_data(serde_json::json!({ "uri": uri }))
}

/// Checks that `args` holds every argument `prompt` marks required.
///
/// # Errors
/// -32602 naming the missing arguments.
pub fn missing_prompt_arguments(
    prompt: &Prompt,
    args: &BTreeMap<String, String>,
) -> Result<(), ErrorObject> {
    let missing: Vec<&str> = prompt
        .arguments
        .iter()
        .flatten()
        .filter(|a| a.required == Some(true) && !args.contains_key(&a.name))
        .map(|a| a.name.as_str())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(ErrorObject::invalid_params(format!(
        "Missing required arguments for prompt {}: {}",
        prompt.name,
        missing.join(", ")
    )))
}

const CURSOR_PREFIX: &str = "mcp-offset:";

/// One page of `items` from `cursor`, at most `page_size` long, and the cursor of the next
/// page: the offset cursors a registry-built server uses (opaque to clients).
///
/// # Errors
/// -32602 `Invalid cursor` for a cursor this did not make (or past the end).
pub fn paginate<T: Clone>(
    items: &[T],
    cursor: Option<&str>,
    page_size: usize,
) -> Result<(Vec<T>, Option<String>), ErrorObject> {
    let start = match cursor {
        None => 0,
        Some(c) => c
            .strip_prefix(CURSOR_PREFIX)
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n <= items.len())
            .ok_or_else(|| ErrorObject::invalid_params(format!("Invalid cursor: {:?}", echo(c))))?,
    };
    let page = page_size.max(1);
    let end = start.saturating_add(page).min(items.len());
    let next = (end < items.len()).then(|| format!("{CURSOR_PREFIX}{end}"));
    Ok((items[start..end].to_vec(), next))
}
