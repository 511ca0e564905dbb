//! Results fit the negotiated version: what a client of an older revision does not know is
//! left out, or turned into what it knows, so that it never has to skip what it cannot read.
//!
//! - Before 2025-06-18: no `title` (tools, prompts, resources, templates, the server's
//!   info), no `outputSchema` and no `structuredContent` (its JSON goes in a text block
//!   when the result has no content), and a `resource_link` block becomes a text block
//!   naming the resource.
//! - Before 2025-03-26: an `audio` block becomes a text block saying that audio was left out.
//! - Before 2026-07-28 (every handshake version): no `resultType`, no cache hints (`ttlMs`,
//!   `cacheScope`), and none of the 2026-07-28 entries of the result's `_meta` (the server's
//!   identity, the request's version, client and subscription). A handler's own results, or
//!   what a gateway forwards from a 2026-07-28 upstream, reach an older client without them.

use oxmcp_engine::HandlerResult;
use oxmcp_jsonrpc::RawValue;
use oxmcp_types::{Feature, ProtocolVersion, meta_keys};
use serde_json::{Map, Value, json};

/// Top-level result fields of 2026-07-28.
const MODERN_FIELDS: [&str; 3] = ["resultType", "ttlMs", "cacheScope"];

/// `_meta` entries of 2026-07-28 (2025-11-25 has `io.modelcontextprotocol/related-task`,
/// which stays).
const MODERN_META: [&str; 6] = [
    meta_keys::SERVER_INFO,
    meta_keys::SUBSCRIPTION_ID,
    meta_keys::PROTOCOL_VERSION,
    meta_keys::CLIENT_INFO,
    meta_keys::CLIENT_CAPABILITIES,
    meta_keys::LOG_LEVEL,
];

/// Whether results for `version` need fitting at all.
pub(super) fn needed(version: ProtocolVersion) -> bool {
    !version.has(Feature::Titles)
        || !version.has(Feature::AudioContent)
        || !version.has(Feature::ResultType)
}

/// Whether a result of `version` may hold something to fit, by a look at its text: a
/// 2025-11-25 result only needs parsing when it names a 2026-07-28 field (or a `_meta` key
/// of the protocol's own namespace).
fn worth_parsing(version: ProtocolVersion, text: &str) -> bool {
    if !version.has(Feature::Titles) || !version.has(Feature::AudioContent) {
        return true;
    }
    if version.has(Feature::ResultType) {
        return false;
    }
    // One pass over the quotes instead of one search of the whole text per key: a large blob
    // or text has few quotes, or none.
    let text = text.as_bytes();
    memchr::memchr_iter(b'"', text).any(|at| {
        let rest = &text[at..];
        MODERN_KEYS.iter().any(|key| rest.starts_with(key))
    })
}

/// What a 2025-11-25 result must name, quote included, to be worth parsing.
const MODERN_KEYS: [&[u8]; 4] = [
    b"\"resultType\"",
    b"\"ttlMs\"",
    b"\"cacheScope\"",
    b"\"io.modelcontextprotocol/",
];

/// `result` (of `method`) as a client of `version` can read it.
pub(super) fn fit(version: ProtocolVersion, method: &str, result: HandlerResult) -> HandlerResult {
    let raw = result?;
    if !worth_parsing(version, raw.get()) {
        return Ok(raw);
    }
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
    if !version.has(Feature::ResultType) {
        changed |= drop_modern_fields(v);
    }
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

/// Drops the 2026-07-28 fields of a result (and its `_meta` if nothing else was in it).
fn drop_modern_fields(v: &mut Value) -> bool {
    let Some(obj) = v.as_object_mut() else {
        return false;
    };
    let mut changed = false;
    for field in MODERN_FIELDS {
        changed |= obj.remove(field).is_some();
    }
    if let Some(meta) = obj.get_mut("_meta").and_then(Value::as_object_mut) {
        let before = meta.len();
        meta.retain(|k, _| !MODERN_META.contains(&k.as_str()));
        if meta.len() != before {
            changed = true;
            if meta.is_empty() {
                obj.remove("_meta");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_legacy_result_loses_the_2026_fields_and_keeps_its_own_meta() {
        let mut v = json!({
            "content": [],
            "resultType": "complete",
            "ttlMs": 1000,
            "cacheScope": "public",
            "_meta": {
                "io.modelcontextprotocol/serverInfo": {"name": "up", "version": "1"},
                "io.modelcontextprotocol/related-task": {"taskId": "t"},
                "app/own": 1
            }
        });
        assert!(fit_value(
            ProtocolVersion::V2025_11_25,
            "tools/call",
            &mut v
        ));
        assert_eq!(
            v,
            json!({"content": [], "_meta": {
                "io.modelcontextprotocol/related-task": {"taskId": "t"}, "app/own": 1
            }})
        );
        // A `_meta` that held only the server's identity goes.
        let mut v = json!({"tools": [], "_meta": {"io.modelcontextprotocol/serverInfo": {}}});
        assert!(fit_value(
            ProtocolVersion::V2025_11_25,
            "tools/list",
            &mut v
        ));
        assert_eq!(v, json!({"tools": []}));
        // 2026-07-28 keeps everything; a plain 2025-11-25 result is not even parsed.
        let mut v = json!({"content": [], "resultType": "complete"});
        assert!(!fit_value(
            ProtocolVersion::V2026_07_28,
            "tools/call",
            &mut v
        ));
        assert!(!worth_parsing(
            ProtocolVersion::V2025_11_25,
            r#"{"content":[{"type":"text","text":"no resultType here"}]}"#
        ));
        assert!(!needed(ProtocolVersion::V2026_07_28));
    }

    #[test]
    fn a_legacy_result_is_parsed_only_when_it_names_a_2026_key() {
        let blob = "A".repeat(100_000);
        for key in [
            r#""resultType":"complete""#,
            r#""ttlMs":5"#,
            r#""cacheScope":"public""#,
            r#""_meta":{"io.modelcontextprotocol/serverInfo":{}}"#,
        ] {
            let text = format!(r#"{{"contents":[{{"blob":"{blob}"}}],{key}}}"#);
            assert!(worth_parsing(ProtocolVersion::V2025_11_25, &text), "{key}");
            assert!(!worth_parsing(ProtocolVersion::V2026_07_28, &text), "{key}");
        }
        // A key's name as a value's text, or without its quotes, is not the key.
        let text = format!(r#"{{"contents":[{{"blob":"{blob}","text":"resultType ttlMs"}}]}}"#);
        assert!(!worth_parsing(ProtocolVersion::V2025_11_25, &text));
        // Older versions always need their titles and audio fitted.
        assert!(worth_parsing(ProtocolVersion::V2024_11_05, "{}"));
    }
}
