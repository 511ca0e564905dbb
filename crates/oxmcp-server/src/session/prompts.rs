//! `prompts/list` and `prompts/get`, answered by the server's handler (a registry checks
//! required arguments).

use futures::future::BoxFuture;
use oxmcp_engine::HandlerResult;
use oxmcp_jsonrpc::{RawValue, parse_params};
use oxmcp_types::GetPromptParams;

use super::Session;
use super::dispatch::Call;
use super::reply::{fail, list_with};
use crate::dynamic::ServerHandler as _;

impl Session {
    pub(super) fn list_prompts(
        &self,
        params: Option<&RawValue>,
        call: Call<'_>,
    ) -> BoxFuture<'static, HandlerResult> {
        list_with(params, call, |server, ctx, cursor| async move {
            server.list_prompts(&ctx, cursor).await
        })
    }

    pub(super) fn get_prompt(
        &self,
        params: Option<&RawValue>,
        call: Call<'_>,
    ) -> BoxFuture<'static, HandlerResult> {
        let p: GetPromptParams = match parse_params(params) {
            Ok(p) => p,
            Err(e) => return fail(e),
        };
        call.note(|| crate::layer::Target::Prompt(p.name.clone()));
        let server = self.handler();
        let finish = call.finish.clone();
        let ctx = call.ctx(p.meta.as_ref());
        Box::pin(
            async move { crate::modern::encode(finish.as_ref(), server.get_prompt(ctx, p).await?) },
        )
    }
}
