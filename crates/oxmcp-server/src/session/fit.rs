//! Results fit the negotiated version: what a client of an older revision does not know is
//! left out, or turned into what it knows, so that it never has to skip what it cannot read.
//!
//! - Before 2025-06-18: no `title` (tools, prompts, resources, templates, the server's
//!   info), no `outputSchema` and no `structuredContent` (its JSON goes in a text block
//!   when the result has no content), and a `resource_link` block becomes a text block
//!   naming the resource.
//! - Before 2025-03-26: an `audio` block becomes a text block saying that audio was left out.

use oxmcp_engine::HandlerResult;
use oxmcp_jsonrpc::RawValue;
use oxmcp_types::{Feature, ProtocolVersion};
use serde_json::{Map, Value, json};

/// Whether results for `version` need fitting at all.
pub(super) fn needed(version: ProtocolVersion) -> bool {
    !version.has(Feature::Titles) || !version.has(Feature::AudioContent)
}

/// `result` (of `method`) as a client of `version` can read it.
pub(super) fn fit(version: ProtocolVersion, method: &str, result: HandlerResult) -> HandlerResult {
    let raw = result?;
    let Ok(mut v) = serde_json::from_str::<Value>(raw.get()) else {
        return Ok(raw);
    };
    if !fit_value(version, method, &mut v) {
        return Ok(raw);
    }
    match RawValue::from_string(v.to_string()) {
        Ok(fitted) => Ok(fitted),
        Err(_) => Ok(raw),
    }
}

/// Changes `v` in place; whether anything changed.
fn fit_value(version: ProtocolVersion, method: &str, v: &mut Value) -> bool {
    let mut changed = false;
    let titles = version.has(Feature::Titles);
    if !titles {
        for list in ["tools", "prompts", "resources", "resourceTemplates"] {
            if let Some(items) = v.get_mut(list).and_then(Value::as_array_mut) {
                for item in items.iter_mut().filter_map(Value::as_object_mut) {
                    changed |= item.remove("title").is_some();
                    if list == "tools" {
                        changed |= item.remove("outputSchema").is_some();
                    }
                }
            }
        }
        if let Some(info) = v.get_mut("serverInfo").and_then(Value::as_object_mut) {
            changed |= info.remove("title").is_some();
        }
    }
    if method == "tools/call" && !version.has(Feature::StructuredOutput) {
        changed |= structured_to_text(v);
    }
    if let Some(content) = v.get_mut("content").and_then(Value::as_array_mut) {
        changed |= fit_blocks(version, content);
    }
    if let Some(messages) = v.get_mut("messages").and_then(Value::as_array_mut) {
        for m in messages {
            if let Some(block) = m.get_mut("content") {
                changed |= fit_block(version, block);
            }
        }
    }
    changed
}

/// Drops `structuredContent`; its JSON becomes the text when there is no other content.
fn structured_to_text(v: &mut Value) -> bool {
    let Some(obj) = v.as_object_mut() else {
        return false;
    };
    let Some(structured) = obj.remove("structuredContent") else {
        return false;
    };
    let empty = obj
        .get("content")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if empty {
        obj.insert(
            "content".to_owned(),
            json!([{"type": "text", "text": structured.to_string()}]),
        );
    }
    true
}

fn fit_blocks(version: ProtocolVersion, blocks: &mut [Value]) -> bool {
    let mut changed = false;
    for block in blocks {
        changed |= fit_block(version, block);
    }
    changed
}

/// One content block as `version` knows it.
fn fit_block(version: ProtocolVersion, block: &mut Value) -> bool {
    let kind = block
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let text = match kind {
        "resource_link" if !version.has(Feature::ResourceLinks) => {
            let field = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or_default();
            let name = match field("title") {
                "" => field("name"),
                title => title,
            };
            format!("Resource: {name} ({})", field("uri"))
        }
        "audio" if !version.has(Feature::AudioContent) => {
            let mime = block
                .get("mimeType")
                .and_then(Value::as_str)
                .unwrap_or("audio");
            format!("[{mime} audio left out: protocol {version} has no audio content]")
        }
        _ => return false,
    };
    let mut fitted = Map::new();
    fitted.insert("type".to_owned(), json!("text"));
    fitted.insert("text".to_owned(), json!(text));
    *block = Value::Object(fitted);
    true
}
