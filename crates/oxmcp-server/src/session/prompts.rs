//! `prompts/list` and `prompts/get` (required arguments checked).

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use oxmcp_engine::HandlerResult;
use oxmcp_jsonrpc::{ErrorObject, RawValue, parse_params};
use oxmcp_types::{GetPromptParams, ListPromptsResult};

use super::Session;
use super::dispatch::Call;
use super::reply::{encode, fail};
use crate::echo::echo;

impl Session {
    pub(super) fn list_prompts(
        &self,
        params: Option<&RawValue>,
    ) -> BoxFuture<'static, HandlerResult> {
        self.list(
            params,
            |reg| reg.prompts.values().map(|p| p.prompt.clone()).collect(),
            |prompts, next_cursor| ListPromptsResult {
                prompts,
                next_cursor,
                ..Default::default()
            },
        )
    }

    pub(super) fn get_prompt(
        &self,
        params: Option<&RawValue>,
        call: Call,
    ) -> BoxFuture<'static, HandlerResult> {
        let p: GetPromptParams = match parse_params(params) {
            Ok(p) => p,
            Err(e) => return fail(e),
        };
        let Some(entry) = self.server.read().prompts.get(&p.name).cloned() else {
            return fail(ErrorObject::invalid_params(format!(
                "Unknown prompt: {}",
                echo(&p.name)
            )));
        };
        let args: BTreeMap<String, String> = p.arguments.unwrap_or_default();
        let missing: Vec<&str> = entry
            .prompt
            .arguments
            .iter()
            .flatten()
            .filter(|a| a.required == Some(true) && !args.contains_key(&a.name))
            .map(|a| a.name.as_str())
            .collect();
        if !missing.is_empty() {
            return fail(ErrorObject::invalid_params(format!(
                "Missing required arguments for prompt {}: {}",
                p.name,
                missing.join(", ")
            )));
        }
        let ctx = call.ctx(p.meta);
        Box::pin(async move { encode(&(entry.handler)(ctx, args).await?) })
    }
}
