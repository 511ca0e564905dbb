//! The headers of a 2026-07-28 request against the body they mirror: `MCP-Protocol-Version`
//! against `_meta`, `Mcp-Method` against `method`, `Mcp-Name` against `params.name`, `uri` or
//! `taskId`, and a tool's `Mcp-Param-{Name}` headers against the arguments they mirror (a
//! value may come in the `=?base64?…?=` sentinel form). A mismatch is a 400 with
//! `HeaderMismatch` (-32020); a `_meta` without the version or client capabilities is one
//! with `InvalidMeta`.

use axum::http::{HeaderMap, HeaderName};
use base64::Engine;
use oxmcp_jsonrpc::{RawValue, Request};
use oxmcp_types::{RequestMeta, meta_keys};
use serde_json::Value;

use crate::server::refusal::Refusal;
use crate::server::replies::VERSION_HEADER;

/// Decodes the `=?base64?…?=` sentinel form of a header value.
fn decode_header(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(b64) => {
            let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
            String::from_utf8(bytes).ok()
        }
        None => Some(value.to_owned()),
    }
}

/// Header-safe: printable ASCII, space and tab only.
fn header_safe(v: &str) -> bool {
    v.bytes().all(|b| b == b'\t' || (0x20..=0x7e).contains(&b))
}

/// `Mcp-Param-{Name}` headers of a tool call, checked against the arguments they mirror
/// (read from the params only for a tool that has such headers).
pub(crate) fn check_param_headers(
    lookup: Option<&crate::server::endpoint::ParamHeaders>,
    headers: &HeaderMap,
    req: &Request,
    request: &RequestMeta,
) -> Result<(), Refusal> {
    if req.method != "tools/call" {
        return Ok(());
    }
    let Some(tool) = request.name() else {
        return Ok(());
    };
    let Some(lookup) = lookup else {
        return Ok(());
    };
    let mirrored = lookup(tool);
    if mirrored.is_empty() {
        return Ok(());
    }
    let wanted: Vec<&str> = mirrored.iter().map(|(_, prop)| prop.as_str()).collect();
    let sent_args = req
        .params
        .as_deref()
        .map(|p| mirrored_arguments(p.get(), &wanted))
        .unwrap_or_default();
    for (header, prop) in &mirrored {
        let name = format!("mcp-param-{}", header.to_ascii_lowercase());
        let body = sent_args
            .iter()
            .rev()
            .find(|(key, _)| key == prop)
            .and_then(|(_, raw)| argument_text(raw));
        let sent = headers
            .get(name.as_str())
            .map(|v| v.to_str().map(str::to_owned));
        match (sent, body) {
            (None, None) => {}
            (None, Some(_)) => {
                return Err(Refusal::header_mismatch(
                    &req.id,
                    format!(
                        "Header mismatch: Mcp-Param-{header} header is required (argument {prop} is set)"
                    ),
                ));
            }
            (Some(Err(_)), _) => {
                return Err(Refusal::header_mismatch(
                    &req.id,
                    format!("Header mismatch: Mcp-Param-{header} has invalid characters"),
                ));
            }
            (Some(Ok(v)), body) => {
                if !header_safe(&v) {
                    return Err(Refusal::header_mismatch(
                        &req.id,
                        format!("Header mismatch: Mcp-Param-{header} has invalid characters"),
                    ));
                }
                let Some(decoded) = decode_header(&v) else {
                    return Err(Refusal::header_mismatch(
                        &req.id,
                        format!("Header mismatch: Mcp-Param-{header} is not valid base64"),
                    ));
                };
                if body.as_deref() != Some(decoded.as_str()) {
                    return Err(Refusal::header_mismatch(
                        &req.id,
                        format!(
                            "Header mismatch: Mcp-Param-{header} header value '{decoded}' does not match body value '{}'",
                            body.unwrap_or_default()
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The members `wanted` of the request's `arguments` (in the order sent, a member sent twice
/// twice), borrowed from the params text: the arguments themselves are not built, only
/// skimmed for these (their typed parse is the handler's).
fn mirrored_arguments<'p>(params: &'p str, wanted: &[&str]) -> Vec<(String, &'p RawValue)> {
    use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};

    struct Params<'w>(&'w [&'w str]);
    struct Arguments<'w>(&'w [&'w str]);

    impl<'de> Visitor<'de> for Params<'_> {
        type Value = Vec<(String, &'de RawValue)>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("params")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut found = Vec::new();
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                if key == "arguments" {
                    // As with a JSON object read whole, the last `arguments` counts.
                    found = map.next_value_seed(Arguments(self.0))?;
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(found)
        }
    }

    impl<'de> DeserializeSeed<'de> for Arguments<'_> {
        type Value = Vec<(String, &'de RawValue)>;
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Arguments<'_> {
        type Value = Vec<(String, &'de RawValue)>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("arguments")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut found = Vec::new();
            while let Some(key) = map.next_key::<String>()? {
                if self.0.contains(&key.as_str()) {
                    found.push((key, map.next_value::<&'de RawValue>()?));
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(found)
        }
        // Arguments that are not an object mirror nothing.
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Vec::new())
        }
    }

    let mut de = serde_json::Deserializer::from_str(params);
    serde::Deserializer::deserialize_map(&mut de, Params(wanted)).unwrap_or_default()
}

/// What an argument's header must say: a string as it is, any other value as its JSON
/// (`None` for null).
fn argument_text(raw: &RawValue) -> Option<String> {
    match serde_json::from_str::<Value>(raw.get()).ok()? {
        Value::Null => None,
        Value::String(s) => Some(s),
        other => Some(other.to_string()),
    }
}

/// The `_meta` every 2026-07-28 request carries: protocol version and client capabilities.
fn check_meta<'p>(req: &Request, request: &'p RequestMeta) -> Result<&'p str, Refusal> {
    let Some(meta) = request.meta() else {
        return Err(Refusal::invalid_meta(
            &req.id,
            "_meta is required on every 2026-07-28 request",
        ));
    };
    let Some(version) = meta
        .get(meta_keys::PROTOCOL_VERSION)
        .and_then(Value::as_str)
    else {
        return Err(Refusal::invalid_meta(
            &req.id,
            &format!("_meta.{} is required", meta_keys::PROTOCOL_VERSION),
        ));
    };
    if !meta.contains_key(meta_keys::CLIENT_CAPABILITIES) {
        return Err(Refusal::invalid_meta(
            &req.id,
            &format!("_meta.{} is required", meta_keys::CLIENT_CAPABILITIES),
        ));
    }
    Ok(version)
}

/// A standard header that must be sent and equal `body` (after sentinel decoding when
/// `encoded`).
fn expect_header(
    req: &Request,
    name: &str,
    sent: Option<&str>,
    body: &str,
    encoded: bool,
) -> Result<(), Refusal> {
    let Some(sent) = sent else {
        return Err(Refusal::header_mismatch(
            &req.id,
            format!("Header mismatch: {name} header is required"),
        ));
    };
    let value = if encoded {
        match decode_header(sent) {
            Some(v) => v,
            None => {
                return Err(Refusal::header_mismatch(
                    &req.id,
                    format!("Header mismatch: {name} header is not valid base64"),
                ));
            }
        }
    } else {
        sent.to_owned()
    };
    if value != body {
        return Err(Refusal::header_mismatch(
            &req.id,
            format!(
                "Header mismatch: {name} header value '{value}' does not match body value '{body}'"
            ),
        ));
    }
    Ok(())
}

/// The standard headers against the body: `MCP-Protocol-Version` against `_meta`,
/// `Mcp-Method` against `method`, `Mcp-Name` against `params.name`, `params.uri` or
/// `params.taskId`.
pub(crate) fn check_headers(
    headers: &HeaderMap,
    req: &Request,
    request: &RequestMeta,
) -> Result<(), Refusal> {
    static METHOD: HeaderName = HeaderName::from_static("mcp-method");
    static NAME: HeaderName = HeaderName::from_static("mcp-name");
    let get = |name: &HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    let version = check_meta(req, request)?;
    expect_header(
        req,
        "MCP-Protocol-Version",
        get(&VERSION_HEADER),
        version,
        false,
    )?;
    expect_header(req, "Mcp-Method", get(&METHOD), &req.method, false)?;
    let body_name = match req.method.as_str() {
        "tools/call" | "prompts/get" => Some(request.name()),
        "resources/read" => Some(request.uri()),
        // The tasks extension routes on the task (SEP-2663).
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some(request.task_id()),
        _ => None,
    };
    if let Some(body_name) = body_name {
        let body_name = body_name.unwrap_or_default();
        expect_header(req, "Mcp-Name", get(&NAME), body_name, true)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirrored_arguments_are_read_from_the_text_alone() {
        let params = r#"{"name":"t","_meta":{"region":"x"},"arguments":{"region":"eu","nested":{"region":"no"},
            "n":1.5,"flag":true,"none":null,"re\u0067ion2":"escaped","region":"last"}}"#;
        let found = mirrored_arguments(params, &["region", "n", "flag", "none", "region2"]);
        let text = |key: &str| {
            found
                .iter()
                .rev()
                .find(|(k, _)| k == key)
                .and_then(|(_, raw)| argument_text(raw))
        };
        assert_eq!(text("region").as_deref(), Some("last"));
        assert_eq!(text("n").as_deref(), Some("1.5"));
        assert_eq!(text("flag").as_deref(), Some("true"));
        assert_eq!(text("none"), None);
        assert_eq!(text("region2").as_deref(), Some("escaped"));
        assert!(found.iter().all(|(k, _)| k != "nested"));
        for odd in [
            r#"{"arguments":[{"region":"eu"}]}"#,
            r#"{"arguments":"region"}"#,
            r#"{"arguments":null}"#,
            r#"{"name":"t"}"#,
            "[]",
        ] {
            assert!(mirrored_arguments(odd, &["region"]).is_empty(), "{odd}");
        }
    }

    #[test]
    fn sentinel_decoding() {
        assert_eq!(decode_header("plain").as_deref(), Some("plain"));
        assert_eq!(
            decode_header("=?base64?SGVsbG8sIOS4lueVjA==?=").as_deref(),
            Some("Hello, 世界")
        );
        assert_eq!(decode_header("=?base64?!!!?="), None);
    }
}
