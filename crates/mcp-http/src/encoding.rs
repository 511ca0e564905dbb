//! The protobuf encoding over Streamable HTTP (`application/mcp+protobuf`, see `mcp-proto`):
//! a POST body may come in it, and a plain (non-SSE) answer goes out in it when `Accept`
//! lists it. SSE events stay JSON text. JSON is the default; batches are JSON only.

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use mcp_jsonrpc::ErrorCode;

use crate::respond::{accepts, header_str, rpc_error};

/// Whether the request's body is in the protobuf encoding.
pub(crate) fn is_protobuf(headers: &HeaderMap) -> bool {
    header_str(headers, header::CONTENT_TYPE.as_str())
        .and_then(|ct| ct.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case(mcp_proto::MEDIA_TYPE))
}

/// Whether the client takes answers in the protobuf encoding.
pub(crate) fn wants_protobuf(headers: &HeaderMap) -> bool {
    accepts(headers, mcp_proto::MEDIA_TYPE)
}

/// The JSON text of a protobuf body; 400 with a parse error (-32700) if it is not one
/// message.
pub(crate) fn body_to_json(body: &Bytes) -> Result<Bytes, Response> {
    match mcp_proto::decode(body) {
        Ok(json) => Ok(Bytes::from(json.to_string())),
        Err(e) => Err(rpc_error(
            StatusCode::BAD_REQUEST,
            None,
            ErrorCode::PARSE_ERROR,
            &format!("Parse error: {e}"),
        )),
    }
}

/// A JSON answer turned into its protobuf form (anything else is returned as it is).
pub(crate) async fn answer_in_protobuf(resp: Response, max: usize) -> Response {
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !is_json {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, max.max(64 << 20)).await else {
        return Response::from_parts(parts, Body::empty());
    };
    let encoded = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|json| mcp_proto::encode(&json).ok());
    match encoded {
        Some(proto) => {
            parts.headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(mcp_proto::MEDIA_TYPE),
            );
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(proto))
        }
        None => Response::from_parts(parts, Body::from(bytes)),
    }
}
