//! Answers: encoding a result, and the pages of list results.

use futures::future::BoxFuture;
use oxmcp_engine::HandlerResult;
use oxmcp_jsonrpc::{ErrorObject, parse_params, to_raw};
use oxmcp_types::PaginatedParams;
use serde::Serialize;

use crate::echo::echo;

pub(super) fn encode<T: Serialize>(value: &T) -> HandlerResult {
    to_raw(value).map_err(|e| ErrorObject::internal(format!("could not encode the result: {e}")))
}

pub(super) fn ready<T: Serialize>(value: &T) -> BoxFuture<'static, HandlerResult> {
    let r = encode(value);
    Box::pin(async move { r })
}

pub(super) fn fail(e: ErrorObject) -> BoxFuture<'static, HandlerResult> {
    Box::pin(async move { Err(e) })
}

const CURSOR_PREFIX: &str = "mcp-offset:";

fn paginate<T: Clone>(
    items: &[T],
    cursor: Option<&str>,
    page: usize,
) -> Result<(Vec<T>, Option<String>), ErrorObject> {
    let start = match cursor {
        None => 0,
        Some(c) => c
            .strip_prefix(CURSOR_PREFIX)
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n <= items.len())
            .ok_or_else(|| ErrorObject::invalid_params(format!("Invalid cursor: {:?}", echo(c))))?,
    };
    let page = page.max(1);
    let end = (start + page).min(items.len());
    let next = (end < items.len()).then(|| format!("{CURSOR_PREFIX}{end}"));
    Ok((items[start..end].to_vec(), next))
}

/// Answers a paginated list request: read the cursor, cut the page, build the result.
pub(super) fn list_page<T: Clone, R: Serialize>(
    params: Option<&oxmcp_jsonrpc::RawValue>,
    items: &[T],
    page: usize,
    build: impl FnOnce(Vec<T>, Option<String>) -> R,
) -> BoxFuture<'static, HandlerResult> {
    let p: PaginatedParams = match parse_params(params) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    match paginate(items, p.cursor.as_deref(), page) {
        Ok((items, next)) => ready(&build(items, next)),
        Err(e) => fail(e),
    }
}

impl super::Session {
    /// A page of one of the registry's lists: `pick` reads the items, `build` makes the
    /// result from a page and the next cursor.
    pub(super) fn list<T: Clone, R: Serialize>(
        &self,
        params: Option<&oxmcp_jsonrpc::RawValue>,
        pick: impl FnOnce(&crate::registry::Registry) -> Vec<T>,
        build: impl FnOnce(Vec<T>, Option<String>) -> R,
    ) -> BoxFuture<'static, HandlerResult> {
        let items = pick(&self.server.read());
        list_page(params, &items, self.server.config.page_size, build)
    }
}
