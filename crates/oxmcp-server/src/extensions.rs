//! Extensions (SEP-2133): the `extensions` capability a server declares, and the methods it
//! serves beyond the specification's (an extension's `skills/list`, a vendor's
//! `acme/reindex`). A custom method runs like any other request: with a [`Ctx`], in both
//! eras, with multi round-trip input on 2026-07-28.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use oxmcp_jsonrpc::ErrorObject;
use oxmcp_types::JsonObject;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::context::Ctx;

/// A handler for a method of the server's own: gets the request's params (`None` when the
/// request has none) and answers with the result's JSON or a JSON-RPC error.
pub type MethodFn =
    Arc<dyn Fn(Ctx, Option<Value>) -> BoxFuture<'static, Result<Value, ErrorObject>> + Send + Sync>;

/// Methods the specification (and this library) defines: a custom method may not take
/// their names.
pub const RESERVED_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "subscriptions/listen",
    "sampling/createMessage",
    "elicitation/create",
    "roots/list",
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
    "tasks/update",
];

/// What a server declares and serves beyond the specification's methods.
#[derive(Default, Clone)]
pub(crate) struct Extensions {
    /// Declared under `capabilities.extensions`: identifier to settings.
    pub(crate) declared: BTreeMap<String, JsonObject>,
    /// Custom methods by name.
    pub(crate) methods: BTreeMap<String, MethodFn>,
}

/// Why a method name cannot be registered, if it cannot.
pub(crate) fn method_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("a method name must not be empty".into());
    }
    if RESERVED_METHODS.contains(&name) || name.starts_with("notifications/") {
        return Some(format!("{name:?} is a method of the specification"));
    }
    if name.starts_with("rpc.") {
        return Some("names starting with \"rpc.\" are reserved by JSON-RPC 2.0".into());
    }
    None
}

/// Wraps a typed handler: params parsed into `P` (missing params parse as `{}`; a mismatch is
/// -32602), the answer serialised.
pub(crate) fn typed_method<P, R, F, Fut>(f: F) -> MethodFn
where
    P: DeserializeOwned + Send + 'static,
    R: Serialize + 'static,
    F: Fn(Ctx, P) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
{
    let f = Arc::new(f);
    Arc::new(move |ctx, params| {
        let f = f.clone();
        Box::pin(async move {
            let mut value = params.unwrap_or_else(|| Value::Object(JsonObject::new()));
            if let Value::Object(m) = &mut value {
                m.remove("_meta");
            }
            let p: P = serde_json::from_value(value)
                .map_err(|e| ErrorObject::invalid_params(format!("invalid params: {e}")))?;
            let r = f(ctx, p).await?;
            serde_json::to_value(r)
                .map_err(|e| ErrorObject::internal(format!("could not encode the result: {e}")))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_the_specification_are_refused() {
        assert!(method_name_problem("tools/call").is_some());
        assert!(method_name_problem("notifications/anything").is_some());
        assert!(method_name_problem("rpc.discover").is_some());
        assert!(method_name_problem("").is_some());
        assert!(method_name_problem("skills/list").is_none());
        assert!(method_name_problem("acme/reindex").is_none());
    }
}
