//! Handler types and the conversions that make typed handlers pleasant.

use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use oxmcp_jsonrpc::ErrorObject;
use oxmcp_types::{
    CallToolResult, CompleteParams, CompleteResult, Content, GetPromptResult, JsonObject,
    ReadResourceResult,
};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

use crate::context::Ctx;

/// A tool handler working on raw JSON arguments.
pub type ToolFn = Arc<
    dyn Fn(Ctx, JsonObject) -> BoxFuture<'static, Result<CallToolResult, ErrorObject>>
        + Send
        + Sync,
>;
/// A resource reader: gets the URI.
pub type ResourceFn = Arc<
    dyn Fn(Ctx, String) -> BoxFuture<'static, Result<ReadResourceResult, ErrorObject>>
        + Send
        + Sync,
>;
/// A template reader: gets the URI and the template variables.
pub type TemplateFn = Arc<
    dyn Fn(
            Ctx,
            String,
            BTreeMap<String, String>,
        ) -> BoxFuture<'static, Result<ReadResourceResult, ErrorObject>>
        + Send
        + Sync,
>;
/// A prompt renderer: gets the arguments.
pub type PromptFn = Arc<
    dyn Fn(
            Ctx,
            BTreeMap<String, String>,
        ) -> BoxFuture<'static, Result<GetPromptResult, ErrorObject>>
        + Send
        + Sync,
>;
/// A completion provider.
pub type CompletionFn = Arc<
    dyn Fn(Ctx, CompleteParams) -> BoxFuture<'static, Result<CompleteResult, ErrorObject>>
        + Send
        + Sync,
>;

/// What a tool handler may return on success.
pub trait IntoCallToolResult {
    /// Converts into a tool result.
    fn into_call_tool_result(self) -> CallToolResult;

    /// The tool's `outputSchema` implied by this type, if any: [`ServerBuilder::typed_tool`]
    /// (and so the `#[tool]` macros) sets it when the tool has none. `None` by default;
    /// [`Json<T>`] gives `T`'s schema.
    ///
    /// [`ServerBuilder::typed_tool`]: crate::ServerBuilder::typed_tool
    fn output_schema() -> Option<JsonObject>
    where
        Self: Sized,
    {
        None
    }
}

impl IntoCallToolResult for CallToolResult {
    fn into_call_tool_result(self) -> CallToolResult {
        self
    }
}

impl IntoCallToolResult for String {
    fn into_call_tool_result(self) -> CallToolResult {
        CallToolResult::text(self)
    }
}

impl IntoCallToolResult for &'static str {
    fn into_call_tool_result(self) -> CallToolResult {
        CallToolResult::text(self)
    }
}

/// Numbers and booleans answer as their text (`5`, `true`), so a tool can return `i64`.
macro_rules! text_results {
    ($($t:ty),*) => {$(
        impl IntoCallToolResult for $t {
            fn into_call_tool_result(self) -> CallToolResult {
                CallToolResult::text(self.to_string())
            }
        }
    )*};
}

text_results!(
    i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, f32, f64, bool
);

impl IntoCallToolResult for Vec<Content> {
    fn into_call_tool_result(self) -> CallToolResult {
        CallToolResult::success(self)
    }
}

/// Structured tool output: sent as `structuredContent` and, for older clients, as JSON text.
#[derive(Debug, Clone)]
pub struct Structured<T>(pub T);

impl<T: Serialize> IntoCallToolResult for Structured<T> {
    fn into_call_tool_result(self) -> CallToolResult {
        match serde_json::to_value(&self.0) {
            Ok(v) => CallToolResult::default()
                .with_content(vec![Content::text(v.to_string())])
                .with_structured_content(Some(v)),
            Err(e) => CallToolResult::error(format!("could not serialize the tool output: {e}")),
        }
    }
}

/// Structured tool output with a schema: sent as `structuredContent` and, for older clients,
/// as JSON text, like [`Structured`]; a tool returning it gets `T`'s JSON Schema as its
/// `outputSchema` (when `T`'s schema is an object schema, as MCP requires: use a struct or
/// a map), against which the server checks every result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Json<T>(pub T);

impl<T: Serialize + schemars::JsonSchema> IntoCallToolResult for Json<T> {
    fn into_call_tool_result(self) -> CallToolResult {
        Structured(self.0).into_call_tool_result()
    }

    fn output_schema() -> Option<JsonObject> {
        let schema = schemars::schema_for!(T);
        match serde_json::to_value(&schema) {
            Ok(Value::Object(mut m)) if m.get("type") == Some(&Value::from("object")) => {
                m.remove("title");
                Some(m)
            }
            _ => None,
        }
    }
}

/// The -32042 error (2025-11-25) a tool returns when the request cannot go on until the
/// user completes these URL-mode elicitations ([`oxmcp_types::ElicitParams::url`]); the client
/// retries it afterwards. Return it as the tool's `Err`.
pub fn url_elicitation_required(elicitations: Vec<oxmcp_types::ElicitParams>) -> ErrorObject {
    let data = oxmcp_types::UrlElicitationRequired::default().with_elicitations(elicitations);
    ErrorObject::new(
        oxmcp_jsonrpc::ErrorCode::URL_ELICITATION_REQUIRED,
        "This request requires more information.",
    )
    .with_data(serde_json::to_value(data).unwrap_or_default())
}

pub(crate) fn typed_tool<A, F, Fut, R, E>(f: F) -> ToolFn
where
    A: serde::de::DeserializeOwned + Send + 'static,
    F: Fn(Ctx, A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, E>> + Send + 'static,
    R: IntoCallToolResult,
    E: Display + 'static,
{
    let f = Arc::new(f);
    Arc::new(move |ctx, args| {
        let f = f.clone();
        Box::pin(async move {
            let args: A = match serde_json::from_value(Value::Object(args)) {
                Ok(a) => a,
                Err(e) => return Ok(CallToolResult::error(format!("Invalid arguments: {e}"))),
            };
            Ok(match f(ctx, args).await {
                Ok(r) => r.into_call_tool_result(),
                // A JSON-RPC error object is the request's error (-32042, say); any other
                // error is the tool's, a result with `isError`.
                Err(e) => match (&e as &dyn std::any::Any).downcast_ref::<ErrorObject>() {
                    Some(rpc) => return Err(rpc.clone()),
                    None => CallToolResult::error(e.to_string()),
                },
            })
        })
    })
}
