//! The protobuf encoding over Streamable HTTP (`application/mcp+protobuf`, see `oxmcp-proto`):
//! a POST body may come in it, and answers go out in it when `Accept` lists it: a plain
//! answer as the protobuf bytes, and on an SSE stream (a POST's or the GET stream) each
//! message event as `event: mcp+protobuf` with the base64 of the protobuf message as its
//! `data` (SSE is text). Priming events, ids, `retry` and comments are unchanged, so
//! resumption works the same. JSON is the default; a request body in protobuf is one
//! message (a batch is JSON only). Each answer is written in its [`Encoding`] where it is
//! written.

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use oxmcp_proto::SSE_EVENT;

use crate::server::refusal::Refusal;
use crate::server::replies::{accepts, header_str};

/// Whether the request's body is in the protobuf encoding.
pub(crate) fn is_protobuf(headers: &HeaderMap) -> bool {
    header_str(headers, header::CONTENT_TYPE)
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

/// The encoding a client takes its answers in, from the `Accept` of its request: each message
/// is written in it where it is written (a body, an SSE event), from the engine's JSON text
/// in one pass ([`oxmcp_proto::encode_json_text`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// JSON, the default.
    #[default]
    Json,
    /// `application/mcp+protobuf`.
    Protobuf,
}

impl Encoding {
    /// The encoding the request's `Accept` asks for.
    pub(crate) fn of(headers: &HeaderMap) -> Self {
        if wants_protobuf(headers) {
            Self::Protobuf
        } else {
            Self::Json
        }
    }

    /// Message `line` in the protobuf form, if that is what the client takes (a message the
    /// form cannot carry, which JSON-RPC never sends, goes as JSON).
    fn proto(self, line: &str) -> Option<Vec<u8>> {
        match self {
            Self::Json => None,
            Self::Protobuf => oxmcp_proto::encode_json_text(line).ok(),
        }
    }

    /// A plain answer holding message `line` (a message or a batch), with `status`.
    pub(crate) fn answer(self, status: StatusCode, line: String) -> Response {
        let (content_type, body) = match self.proto(&line) {
            Some(proto) => (oxmcp_proto::MEDIA_TYPE, Body::from(proto)),
            None => ("application/json", Body::from(line)),
        };
        let mut resp = Response::new(body);
        *resp.status_mut() = status;
        resp.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        resp
    }

    /// The SSE event carrying message `line`, with event id `id` if it has one: a `message`
    /// event with the JSON as its data, or an [`SSE_EVENT`] event with the base64 of the
    /// protobuf message.
    pub(crate) fn event(self, id: Option<&str>, line: &str) -> String {
        let mut out = String::with_capacity(line.len() + 48);
        if let Some(id) = id {
            out.push_str("id: ");
            out.push_str(id);
            out.push('\n');
        }
        match self.proto(line) {
            Some(proto) => {
                use base64::Engine as _;
                out.push_str("event: ");
                out.push_str(SSE_EVENT);
                out.push_str("\ndata: ");
                base64::engine::general_purpose::STANDARD.encode_string(proto, &mut out);
                out.push('\n');
            }
            None => {
                out.push_str("event: message\n");
                for data in line.lines() {
                    out.push_str("data: ");
                    out.push_str(data);
                    out.push('\n');
                }
            }
        }
        out.push('\n');
        out
    }

    /// A refusal's answer in this encoding: its JSON-RPC error in the protobuf form when
    /// that is what the client takes (a refusal made before the request's encoding was
    /// known, read from what the refusal put in the response's extensions, not from its
    /// body). Any other response is returned as it is.
    pub(crate) fn refusal(self, mut resp: Response) -> Response {
        if self == Self::Json {
            return resp;
        }
        let Some(refused) = resp.extensions_mut().remove::<RefusedMessage>() else {
            return resp;
        };
        let Some(proto) = std::str::from_utf8(&refused.0)
            .ok()
            .and_then(|line| self.proto(line))
        else {
            return resp;
        };
        let (mut parts, _) = resp.into_parts();
        parts.headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(oxmcp_proto::MEDIA_TYPE),
        );
        parts.headers.remove(header::CONTENT_LENGTH);
        Response::from_parts(parts, Body::from(proto))
    }
}

/// The JSON-RPC error message a [`Refusal`] answered with, kept in the response's extensions
/// so that it can be written in the client's encoding.
#[derive(Debug, Clone)]
pub(crate) struct RefusedMessage(pub(crate) Bytes);
