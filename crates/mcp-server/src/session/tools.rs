//! `tools/list` and `tools/call`: arguments validated against the input schema, structured
//! results against the output schema.

use futures::future::BoxFuture;
use mcp_engine::HandlerResult;
use mcp_jsonrpc::{ErrorObject, RawValue, parse_params};
use mcp_types::{CallToolParams, CallToolResult, ListToolsResult};
use serde_json::Value;

use super::Session;
use super::dispatch::Call;
use super::reply::{encode, fail};
use crate::echo::echo;

impl Session {
    pub(super) fn list_tools(
        &self,
        params: Option<&RawValue>,
    ) -> BoxFuture<'static, HandlerResult> {
        self.list(
            params,
            |reg| reg.tools.values().map(|t| t.tool.clone()).collect(),
            |tools, next_cursor| ListToolsResult {
                tools,
                next_cursor,
                ..Default::default()
            },
        )
    }

    pub(super) fn call_tool(
        &self,
        params: Option<&RawValue>,
        call: Call,
    ) -> BoxFuture<'static, HandlerResult> {
        let p: CallToolParams = match parse_params(params) {
            Ok(p) => p,
            Err(e) => return fail(e),
        };
        let Some(entry) = self.server.read().tools.get(&p.name).cloned() else {
            let name = echo(&p.name);
            return fail(
                ErrorObject::invalid_params(format!("Unknown tool: {name}"))
                    .with_data(serde_json::json!({ "tool": name })),
            );
        };
        let ctx = call.ctx(p.meta);
        Box::pin(async move {
            let args_value = Value::Object(p.arguments.unwrap_or_default());
            if let Err(errors) = entry.input.validate(&args_value) {
                return encode(&CallToolResult::error(format!(
                    "Invalid arguments for tool {}: {}",
                    entry.tool.name,
                    errors.join("; ")
                )));
            }
            let Value::Object(args) = args_value else {
                return Err(ErrorObject::internal("arguments are not an object"));
            };
            let result = (entry.handler)(ctx, args).await?;
            if let (Some(schema), false) = (&entry.output, result.failed()) {
                let structured = result.structured_content.clone().unwrap_or(Value::Null);
                if let Err(errors) = schema.validate(&structured) {
                    return Err(ErrorObject::internal(format!(
                        "tool {} returned structuredContent that does not match its outputSchema",
                        entry.tool.name
                    ))
                    .with_data(serde_json::json!({ "errors": errors })));
                }
            }
            encode(&result)
        })
    }
}
