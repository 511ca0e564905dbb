//! The protobuf encoding over Streamable HTTP (`application/mcp+protobuf`, see `oxmcp-proto`):
//! a POST body may come in it, and answers go out in it when `Accept` lists it: a plain
//! answer as the protobuf bytes, and on an SSE stream (a POST's or the GET stream) each
//! message event as `event: mcp+protobuf` with the base64 of the protobuf message as its
//! `data` (SSE is text). Priming events, ids, `retry` and comments are unchanged, so
//! resumption works the same. JSON is the default; batches are JSON only.

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use futures::StreamExt;
use oxmcp_proto::SSE_EVENT;

use crate::server::refusal::Refusal;
use crate::server::replies::{accepts, header_str};

/// Whether the request's body is in the protobuf encoding.
pub(crate) fn is_protobuf(headers: &HeaderMap) -> bool {
    header_str(headers, header::CONTENT_TYPE.as_str())
        .and_then(|ct| ct.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case(oxmcp_proto::MEDIA_TYPE))
}

/// Whether the client takes answers in the protobuf encoding.
pub(crate) fn wants_protobuf(headers: &HeaderMap) -> bool {
    accepts(headers, oxmcp_proto::MEDIA_TYPE)
}

/// The JSON text of a protobuf body; 400 with a parse error (-32700) if it is not one
/// message, 413 with -32600 if it holds more elements (or deeper nesting) than a body of
/// `max_body` bytes may ([`oxmcp_proto::DecodeLimits::for_bytes`]: one per four bytes), so
/// that it costs no more to decode than the same message in JSON.
pub(crate) fn body_to_json(body: &Bytes, max_body: usize) -> Result<Bytes, Refusal> {
    let limits = oxmcp_proto::DecodeLimits::for_bytes(max_body);
    match oxmcp_proto::decode_json_text(body, &limits) {
        Ok(json) => Ok(Bytes::from(json)),
        Err(oxmcp_proto::ProtoError::TooLarge(why)) => Err(Refusal::invalid_request(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("Request body too large: {why}"),
        )),
        Err(e) => Err(Refusal::parse_error(
            StatusCode::BAD_REQUEST,
            &format!("Parse error: {e}"),
        )),
    }
}

/// An answer turned into its protobuf form: a JSON body as protobuf bytes, an SSE stream's
/// message events as [`SSE_EVENT`] events (anything else is returned as it is).
pub(crate) async fn answer_in_protobuf(resp: Response, max: usize) -> Response {
    let content_type = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if content_type.starts_with("text/event-stream") {
        return sse_in_protobuf(resp);
    }
    if !content_type.starts_with("application/json") {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, max.max(64 << 20)).await else {
        return Response::from_parts(parts, Body::empty());
    };
    let encoded = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|json| oxmcp_proto::encode(&json).ok());
    match encoded {
        Some(proto) => {
            parts.headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(oxmcp_proto::MEDIA_TYPE),
            );
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(proto))
        }
        None => Response::from_parts(parts, Body::from(bytes)),
    }
}

/// An SSE response whose message events are re-encoded as [`SSE_EVENT`] events.
pub(crate) fn sse_in_protobuf(resp: Response) -> Response {
    let (parts, body) = resp.into_parts();
    let mut pending = String::new();
    let events = body.into_data_stream().filter_map(move |chunk| {
        let out = match chunk {
            Ok(bytes) => {
                pending.push_str(&String::from_utf8_lossy(&bytes));
                let mut out = String::new();
                while let Some(end) = pending.find("\n\n") {
                    let block: String = pending.drain(..end + 2).collect();
                    out.push_str(&event_in_protobuf(&block));
                }
                (!out.is_empty()).then(|| Ok::<_, axum::Error>(Bytes::from(out)))
            }
            Err(e) => Some(Err(e)),
        };
        std::future::ready(out)
    });
    Response::from_parts(parts, Body::from_stream(events))
}

/// One SSE event (ending in its blank line), re-encoded when it carries a JSON-RPC message.
fn event_in_protobuf(block: &str) -> String {
    let mut kept = Vec::new();
    let mut data = Vec::new();
    let mut name = "message";
    for line in block.lines() {
        if let Some(d) = line.strip_prefix("data:") {
            data.push(d.strip_prefix(' ').unwrap_or(d));
        } else if let Some(e) = line.strip_prefix("event:") {
            name = e.trim();
        } else if !line.is_empty() {
            kept.push(line);
        }
    }
    let text = data.join("\n");
    if name != "message" || text.is_empty() {
        return block.to_owned();
    }
    let encoded = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|json| oxmcp_proto::encode(&json).ok());
    let Some(proto) = encoded else {
        return block.to_owned();
    };
    use base64::Engine as _;
    let mut out = String::with_capacity(proto.len() * 4 / 3 + 64);
    for line in kept {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("event: ");
    out.push_str(SSE_EVENT);
    out.push_str("\ndata: ");
    out.push_str(&base64::engine::general_purpose::STANDARD.encode(proto));
    out.push_str("\n\n");
    out
}
