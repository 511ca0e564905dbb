//! Answers: encoding a result, and the pages of list results.

use futures::future::BoxFuture;
use oxmcp_engine::HandlerResult;
use oxmcp_jsonrpc::{ErrorObject, parse_params, to_raw};
use oxmcp_types::PaginatedParams;
use serde::Serialize;

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

impl super::Session {
    /// The server as a [`crate::ServerHandler`]: what lists, calls, reads and completions
    /// are answered by (its registry, or the user's handler).
    pub(super) fn handler(&self) -> crate::Server {
        crate::Server {
            state: self.server.clone(),
        }
    }
}

/// Answers a paginated list request: the params parsed, the handler asked for the page.
pub(super) fn list_with<R, F, Fut>(
    params: Option<&oxmcp_jsonrpc::RawValue>,
    call: super::dispatch::Call<'_>,
    list: F,
) -> BoxFuture<'static, HandlerResult>
where
    R: crate::modern::ModernResult,
    F: FnOnce(crate::Server, crate::Ctx, Option<String>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<R, ErrorObject>> + Send + 'static,
{
    let p: PaginatedParams = match parse_params(params) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let server = call.session.handler();
    let finish = call.finish.clone();
    let ctx = call.ctx_owned(p.meta);
    Box::pin(async move {
        let page = list(server, ctx, p.cursor).await?;
        crate::modern::encode(finish.as_ref(), page)
    })
}
