//! Revision 2026-07-28 over Streamable HTTP: no session, every POST a self-describing request.
//!
//! The standard headers are checked against the body (`MCP-Protocol-Version` against
//! `_meta`, `Mcp-Method` against `method`, `Mcp-Name` against `params.name`/`params.uri`;
//! 400 with `HeaderMismatch` -32020 otherwise). Each request is served on its own
//! short-lived engine connection (`Serve::serve_request`), so any instance can answer any
//! request. The answer is JSON when the response is all there is, otherwise an SSE stream
//! carrying the request's notifications (progress, log messages) before it. There are no event ids: 2026-07-28 has no resumption.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use oxmcp_jsonrpc::{Inbound, Message, OutMessage, Outbound, RawValue, Request};
use oxmcp_types::{ProtocolVersion, RequestMeta, meta_keys};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, mpsc};

use crate::server::config::ResponseMode;
use crate::server::endpoint::Inner;
use crate::server::hangup::CancelOnHangUp;
use crate::server::protobuf::Encoding;
use crate::server::refusal::{Refusal, answer_status};
use crate::server::sse_stream::{KEEP_ALIVE, sse_body, sse_message};

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

/// Whether a request is a 2026-07-28 one: by its version header, or by the
/// `io.modelcontextprotocol/protocolVersion` member of its `params._meta` (the key elsewhere,
/// say inside a tool argument, does not count).
pub(crate) fn is_modern(headers: &HeaderMap, body: &[u8]) -> bool {
    let header_modern = headers.get_all("mcp-protocol-version").iter().any(|v| {
        v.to_str()
            .ok()
            .and_then(ProtocolVersion::parse)
            .is_some_and(|v| !v.is_legacy())
    });
    header_modern || (memfind(body, meta_keys::PROTOCOL_VERSION.as_bytes()) && meta_version(body))
}

fn memfind(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Whether the body is one message whose `params._meta` carries the protocol version.
fn meta_version(body: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Msg<'a> {
        #[serde(borrow)]
        params: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(rename = "_meta", borrow)]
        meta: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct Meta {
        #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
        version: Option<serde::de::IgnoredAny>,
    }
    let Ok(Msg {
        params: Some(params),
    }) = serde_json::from_slice(body)
    else {
        return false;
    };
    let Ok(Params { meta: Some(meta) }) = serde_json::from_str(params.get()) else {
        return false;
    };
    matches!(
        serde_json::from_str::<Meta>(meta.get()),
        Ok(Meta { version: Some(_) })
    )
}

/// Header-safe: printable ASCII, space and tab only.
fn header_safe(v: &str) -> bool {
    v.bytes().all(|b| b == b'\t' || (0x20..=0x7e).contains(&b))
}

/// `Mcp-Param-{Name}` headers of a tool call, checked against the arguments they mirror
/// (read from the params only for a tool that has such headers).
fn check_param_headers(
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
fn check_headers(headers: &HeaderMap, req: &Request, request: &RequestMeta) -> Result<(), Refusal> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let version = check_meta(req, request)?;
    expect_header(
        req,
        "MCP-Protocol-Version",
        get("mcp-protocol-version"),
        version,
        false,
    )?;
    expect_header(req, "Mcp-Method", get("mcp-method"), &req.method, false)?;
    let body_name = match req.method.as_str() {
        "tools/call" | "prompts/get" => Some(request.name()),
        "resources/read" => Some(request.uri()),
        // The tasks extension routes on the task (SEP-2663).
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some(request.task_id()),
        _ => None,
    };
    if let Some(body_name) = body_name {
        let body_name = body_name.unwrap_or_default();
        expect_header(req, "Mcp-Name", get("mcp-name"), body_name, true)?;
    }
    Ok(())
}

/// The HTTP status of an answer, from its error code ([`answer_status`]).
fn status_for(answer: &OutMessage) -> StatusCode {
    answer_status(answer.error_code())
}

/// The permits a modern request holds while it is answered: 503 when the endpoint already
/// answers its most (or, for `subscriptions/listen`, has its most streams open).
fn admit(inner: &Inner, req: &Request) -> Result<Vec<OwnedSemaphorePermit>, Refusal> {
    let busy = |what: &str| {
        Refusal::retry_later(
            StatusCode::SERVICE_UNAVAILABLE,
            Some(req.id.clone()),
            Duration::from_secs(1),
            what,
        )
    };
    let mut permits = Vec::with_capacity(2);
    match inner.stateless.clone().try_acquire_owned() {
        Ok(p) => permits.push(p),
        Err(_) => {
            return Err(busy(
                "Server busy: too many requests in flight; retry later",
            ));
        }
    }
    if req.method == "subscriptions/listen" {
        match inner.listens.clone().try_acquire_owned() {
            Ok(p) => permits.push(p),
            Err(_) => {
                return Err(busy(
                    "Server busy: too many open subscriptions; retry later",
                ));
            }
        }
    }
    Ok(permits)
}

/// Answers one modern POST.
pub(crate) async fn handle(
    inner: &Arc<Inner>,
    headers: &HeaderMap,
    message: Message,
    principal: Option<String>,
    context: oxmcp_jsonrpc::TransportContext,
    encoding: Encoding,
) -> Response {
    let req = match message {
        Message::Request(r) => r,
        // No session, so nothing to route a notification or response to.
        _ => return StatusCode::ACCEPTED.into_response(),
    };
    let request = match check(inner, headers, &req) {
        Ok(request) => request,
        Err(r) => return r.into_response(),
    };
    let context = hand_on(context, request);
    let permits = match admit(inner, &req) {
        Ok(p) => p,
        Err(r) => return r.into_response(),
    };
    let (in_tx, in_rx) = mpsc::channel(1);
    let (out_tx, mut out_rx) = mpsc::channel::<Outbound>(64);
    let serving = inner.service.serve_request(oxmcp_engine::Connection {
        incoming: in_rx,
        outgoing: out_tx,
        config: inner.engine.clone(),
        principal,
    });
    // The permits live as long as the engine: a handler cancelled because its client hung
    // up may still be finishing, and counts against the caps until it has.
    tokio::spawn(async move {
        let _permits = permits;
        serving.await;
    });
    let id = req.id.clone();
    // Already decoded here: the engine takes the message as it is.
    let input = Inbound::Message(Box::new(Message::Request(req)), Some(context));
    if in_tx.send(input).await.is_err() {
        return Refusal::internal(id, "the server is gone").into_response();
    }
    // The engine's input stays open while the answer is being sent: dropping it (when the
    // answer is complete, or the client went away) ends the connection and any subscription.
    // A client that goes away before the response cancels the request.
    let watch = CancelOnHangUp::new(id.clone(), in_tx);
    let Some(first) = next_message(&mut out_rx, &watch).await else {
        return Refusal::internal(id, "no response").into_response();
    };
    // An error answer is always JSON, so its HTTP status can say what went wrong.
    let failed = status_for(&first) != StatusCode::OK;
    let json = failed
        || match inner.config.response_mode {
            ResponseMode::Json => true,
            ResponseMode::Sse => false,
            ResponseMode::Auto => first.is_response(),
        };
    if json {
        json_answer(first, out_rx, watch, encoding).await
    } else {
        stream_answer(first, out_rx, watch, inner.config.keep_alive, encoding)
    }
}

/// Everything a modern request is checked for before it runs: known versions in the
/// headers, the standard headers against the body, `Mcp-Param-*` against the arguments.
/// Returns the request's [`RequestMeta`], read once here.
fn check(inner: &Inner, headers: &HeaderMap, req: &Request) -> Result<Arc<RequestMeta>, Refusal> {
    for v in headers.get_all("mcp-protocol-version") {
        let v = v.to_str().unwrap_or("");
        if ProtocolVersion::parse(v).is_none() {
            return Err(Refusal::unsupported_version(Some(req.id.clone()), v));
        }
    }
    let request = RequestMeta::parse(req.params.as_deref());
    check_headers(headers, req, &request)?;
    let lookup = inner.param_headers.get().map(|f| &**f);
    check_param_headers(lookup, headers, req, &request)?;
    Ok(Arc::new(request))
}

/// The transport context with the request's [`RequestMeta`] added to its extensions, so the
/// service reads it from there instead of parsing the params again.
fn hand_on(
    context: oxmcp_jsonrpc::TransportContext,
    request: Arc<RequestMeta>,
) -> oxmcp_jsonrpc::TransportContext {
    match context.downcast::<http::Extensions>() {
        Ok(extensions) => {
            // Not shared yet (moved here from the HTTP request): taken, not copied.
            let mut extensions = Arc::unwrap_or_clone(extensions);
            extensions.insert(request);
            Arc::new(extensions)
        }
        Err(other) => other,
    }
}

/// A JSON answer: the response (notifications that came before it are dropped), with the
/// HTTP status its error code calls for. The engine's input (held by `watch`) closes after it.
async fn json_answer(
    first: OutMessage,
    mut rx: mpsc::Receiver<Outbound>,
    mut watch: CancelOnHangUp,
    encoding: Encoding,
) -> Response {
    let mut last = first;
    while !last.is_response() {
        match next_message(&mut rx, &watch).await {
            Some(m) => last = m,
            None => break,
        }
    }
    watch.answered();
    encoding.answer(status_for(&last), last.line)
}

/// An SSE answer: the first message, then the rest as the handler sends them. (A client that
/// stops reading is disconnected by the engine's stall timeout; one that closes the stream
/// before the response cancels the request, through `watch`.)
fn stream_answer(
    first: OutMessage,
    rx: mpsc::Receiver<Outbound>,
    watch: CancelOnHangUp,
    keep_alive: Duration,
    encoding: Encoding,
) -> Response {
    let state = (Some(first), rx, false, watch);
    let stream =
        futures::stream::unfold(state, move |(pending, mut rx, done, mut held)| async move {
            if done {
                return None;
            }
            let next = match pending {
                Some(m) => Some(m),
                None => {
                    match tokio::time::timeout(keep_alive, next_message(&mut rx, &held)).await {
                        Ok(m) => m,
                        Err(_) => {
                            return Some((
                                Ok::<_, Infallible>(Bytes::from_static(KEEP_ALIVE)),
                                (None, rx, false, held),
                            ));
                        }
                    }
                }
            };
            let m = next?;
            let done = m.is_response();
            if done {
                held.answered();
            }
            Some((Ok(sse_message(&m.line, encoding)), (None, rx, done, held)))
        });
    sse_body(stream, None)
}

/// The next message to send (stream signals mean nothing without resumption). A request to
/// the client is not sent but failed at once: 2026-07-28 servers send none (sampling,
/// elicitation and roots are `input_required` rounds), and no answer could come back.
async fn next_message(
    rx: &mut mpsc::Receiver<Outbound>,
    watch: &CancelOnHangUp,
) -> Option<OutMessage> {
    loop {
        if let Outbound::Message(m) = rx.recv().await? {
            match m.request_id() {
                Some(id) => watch.unreachable(id.clone()),
                None => return Some(*m),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxmcp_jsonrpc::{ErrorCode, OutKind};

    #[test]
    fn only_the_meta_member_makes_a_request_modern() {
        let none = HeaderMap::new();
        let modern = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        assert!(is_modern(&none, modern));
        let mention = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"io.modelcontextprotocol/protocolVersion"}}}"#;
        assert!(!is_modern(&none, mention));
        let nested = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"_meta":{"io.modelcontextprotocol/protocolVersion":"x"}}}}"#;
        assert!(!is_modern(&none, nested));
    }

    #[test]
    fn statuses_come_from_the_engines_error_code() {
        let answer = |kind| OutMessage {
            // The line is not read: a result that mentions an error code stays a 200.
            line: r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"m"}}"#.into(),
            related: None,
            kind,
        };
        let error = |code| OutKind::Response { error: Some(code) };
        assert_eq!(
            status_for(&answer(error(ErrorCode::METHOD_NOT_FOUND))),
            StatusCode::NOT_FOUND
        );
        for code in [
            ErrorCode::HEADER_MISMATCH,
            ErrorCode::MISSING_CLIENT_CAPABILITY,
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
        ] {
            assert_eq!(status_for(&answer(error(code))), StatusCode::BAD_REQUEST);
        }
        assert_eq!(
            status_for(&answer(error(ErrorCode::INVALID_PARAMS))),
            StatusCode::OK
        );
        assert_eq!(
            status_for(&answer(OutKind::Response { error: None })),
            StatusCode::OK
        );
    }

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
