//! Every example under spec/2026-07-28/schema/examples/ (vendored) deserializes into our types
//! and serializes back to equal JSON. New example folders fail the test until they are mapped.

use std::path::{Path, PathBuf};

use oxmcp::jsonrpc::{Message, RawValue};
use oxmcp::types::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../spec/2026-07-28/schema/examples")
}

/// JSON equality where numbers compare by value (50 and 50.0 are the same JSON number).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

fn via<T: DeserializeOwned + Serialize>(v: &Value) -> Result<Value, String> {
    let t: T = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
    serde_json::to_value(&t).map_err(|e| e.to_string())
}

/// Round trip of a bare (non-envelope) type by its schema name.
fn bare(name: &str, v: &Value) -> Option<Result<Value, String>> {
    Some(match name {
        "AudioContent" | "ImageContent" | "TextContent" | "EmbeddedResource" | "ResourceLink"
        | "ToolResultContent" | "ToolUseContent" => via::<Content>(v),
        "BlobResourceContents" | "TextResourceContents" => via::<ResourceContents>(v),
        "BooleanSchema"
        | "NumberSchema"
        | "StringSchema"
        | "TitledSingleSelectEnumSchema"
        | "UntitledSingleSelectEnumSchema"
        | "TitledMultiSelectEnumSchema"
        | "UntitledMultiSelectEnumSchema" => via::<JsonObject>(v),
        "CallToolRequestParams" => via::<CallToolParams>(v),
        "CallToolResult" => via::<CallToolResult>(v),
        "CancelledNotificationParams" => via::<CancelledParams>(v),
        "ClientCapabilities" => via::<ClientCapabilities>(v),
        "ServerCapabilities" => via::<ServerCapabilities>(v),
        "CompleteRequestParams" => via::<CompleteParams>(v),
        "CompleteResult" => via::<CompleteResult>(v),
        "CreateMessageRequestParams" => via::<CreateMessageParams>(v),
        "CreateMessageResult" => via::<CreateMessageResult>(v),
        "DiscoverResult" => via::<DiscoverResult>(v),
        "ElicitRequestFormParams" | "ElicitRequestURLParams" => via::<ElicitParams>(v),
        "ElicitResult" => via::<ElicitResult>(v),
        "GetPromptRequestParams" => via::<GetPromptParams>(v),
        "GetPromptResult" => via::<GetPromptResult>(v),
        "InputRequests" => via::<InputRequests>(v),
        "InputResponses" => via::<InputResponses>(v),
        "InputRequiredResult" => via::<InputRequiredResult>(v),
        "ListPromptsResult" => via::<ListPromptsResult>(v),
        "ListResourceTemplatesResult" => via::<ListResourceTemplatesResult>(v),
        "ListResourcesResult" => via::<ListResourcesResult>(v),
        "ListRootsResult" => via::<ListRootsResult>(v),
        "ListToolsResult" => via::<ListToolsResult>(v),
        "LoggingMessageNotificationParams" => via::<LoggingMessageParams>(v),
        "ModelPreferences" => via::<ModelPreferences>(v),
        "PaginatedRequestParams" => via::<PaginatedParams>(v),
        "ProgressNotificationParams" => via::<ProgressParams>(v),
        "ReadResourceResult" => via::<ReadResourceResult>(v),
        "Resource" => via::<Resource>(v),
        "ResourceUpdatedNotificationParams" => via::<ResourceUriParams>(v),
        "Root" => via::<Root>(v),
        "SamplingMessage" => via::<SamplingMessage>(v),
        "SubscriptionsListenResult" => via::<EmptyResult>(v),
        "Tool" => via::<Tool>(v),
        _ => return None,
    })
}

/// Params type by method.
fn params_for(method: &str, v: &Value) -> Result<Value, String> {
    match method {
        "tools/call" => via::<CallToolParams>(v),
        "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" => {
            via::<PaginatedParams>(v)
        }
        "resources/read"
        | "resources/subscribe"
        | "resources/unsubscribe"
        | "notifications/resources/updated" => via::<ResourceUriParams>(v),
        "prompts/get" => via::<GetPromptParams>(v),
        "completion/complete" => via::<CompleteParams>(v),
        "sampling/createMessage" => via::<CreateMessageParams>(v),
        "elicitation/create" => via::<ElicitParams>(v),
        "notifications/cancelled" => via::<CancelledParams>(v),
        "notifications/progress" => via::<ProgressParams>(v),
        "notifications/message" => via::<LoggingMessageParams>(v),
        "subscriptions/listen" | "notifications/subscriptions/acknowledged" => {
            via::<ListenParams>(v)
        }
        "server/discover"
        | "roots/list"
        | "ping"
        | "notifications/tools/list_changed"
        | "notifications/prompts/list_changed"
        | "notifications/resources/list_changed" => via::<EmptyParams>(v),
        other => Err(format!("no params type for method {other}")),
    }
}

const ERRORS: &[&str] = &[
    "HeaderMismatchError",
    "InternalError",
    "InvalidParamsError",
    "MethodNotFoundError",
    "MissingRequiredClientCapabilityError",
    "ParseError",
    "UnsupportedProtocolVersionError",
];

fn envelope(name: &str, v: &Value) -> Result<Value, String> {
    if v.get("jsonrpc").is_none() {
        // The 2026 schema also uses bare error objects and envelope-less requests
        // (as embedded in `inputRequests`).
        if ERRORS.contains(&name) {
            return via::<oxmcp::jsonrpc::ErrorObject>(v);
        }
        let method = v.get("method").and_then(Value::as_str).ok_or("no method")?;
        let mut out = v.clone();
        if let Some(id) = v.get("id") {
            out["id"] = via::<oxmcp::jsonrpc::RequestId>(id)?;
        }
        if let Some(p) = v.get("params") {
            out["params"] = params_for(method, p)?;
        }
        return Ok(out);
    }
    let text = v.to_string();
    let msg = Message::decode_str(&text).map_err(|e| format!("decode: {e} {:?}", e.error.data))?;
    let mut out: Value = serde_json::from_str(&msg.encode()).map_err(|e| e.to_string())?;
    let typed =
        |raw: &RawValue| serde_json::from_str::<Value>(raw.get()).map_err(|e| e.to_string());
    match &msg {
        Message::Request(r) if name.ends_with("Request") => {
            if let Some(p) = &r.params {
                out["params"] = params_for(&r.method, &typed(p)?)?;
            }
        }
        Message::Notification(n) if name.ends_with("Notification") => {
            if let Some(p) = &n.params {
                out["params"] = params_for(&n.method, &typed(p)?)?;
            }
        }
        Message::Response(r) if name.ends_with("ResultResponse") => {
            let result = r
                .outcome
                .as_ref()
                .map_err(|e| format!("unexpected error {e}"))?;
            let result_type = name.trim_end_matches("Response");
            out["result"] = bare(result_type, &typed(result)?).ok_or("no result type")??;
        }
        Message::Response(r) if ERRORS.contains(&name) => {
            let e = r
                .outcome
                .as_ref()
                .err()
                .ok_or("expected an error response")?;
            out["error"] = serde_json::to_value(e).map_err(|e| e.to_string())?;
        }
        _ => return Err(format!("{name}: unexpected message kind")),
    }
    Ok(out)
}

#[test]
fn every_2026_example_round_trips() {
    let dir = examples_dir();
    let mut checked = 0;
    let mut failures = Vec::new();
    let mut types: Vec<_> = std::fs::read_dir(&dir)
        .expect("examples folder")
        .flatten()
        .collect();
    types.sort_by_key(|e| e.file_name());
    for ty in types {
        let name = ty.file_name().to_string_lossy().into_owned();
        for file in std::fs::read_dir(ty.path()).expect("type folder").flatten() {
            let text = std::fs::read_to_string(file.path()).expect("read example");
            let v: Value = serde_json::from_str(&text).expect("example is JSON");
            let back = match bare(&name, &v) {
                Some(r) => r,
                None => envelope(&name, &v),
            };
            match back {
                Ok(back) if json_eq(&v, &back) => checked += 1,
                Ok(back) => failures.push(format!(
                    "{}: changed\n  in:  {v}\n  out: {back}",
                    file.path().display()
                )),
                Err(e) => failures.push(format!("{}: {e}", file.path().display())),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked >= 120, "only {checked} examples checked");
}
