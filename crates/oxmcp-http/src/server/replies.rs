//! Building HTTP answers: JSON-RPC errors with their status, JSON bodies, SSE streams, and
//! reading a request body within its limits.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use oxmcp_jsonrpc::{DecodeError, ErrorCode, ErrorObject, Message, RequestId};

use crate::server::config::HttpConfig;

pub(crate) const SESSION_HEADER: &str = "mcp-session-id";
pub(crate) const VERSION_HEADER: &str = "mcp-protocol-version";

/// A JSON-RPC error answer with an HTTP status: the one way every HTTP error is written.
pub(crate) fn error_response(
    status: StatusCode,
    id: Option<RequestId>,
    e: ErrorObject,
) -> Response {
    let body = Message::error(id, e).encode();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// A JSON-RPC error with an HTTP status, from its code and message.
pub(crate) fn rpc_error(
    status: StatusCode,
    id: Option<RequestId>,
    code: ErrorCode,
    message: &str,
) -> Response {
    error_response(status, id, ErrorObject::new(code, message))
}

/// A refused HTTP request (no JSON-RPC id to answer): Invalid Request with `status`.
pub(crate) fn refuse(status: StatusCode, message: &str) -> Response {
    rpc_error(status, None, ErrorCode::INVALID_REQUEST, message)
}

/// 400 with an Invalid Request error.
pub(crate) fn bad_request(message: &str) -> Response {
    refuse(StatusCode::BAD_REQUEST, message)
}

/// 404 "Session not found".
pub(crate) fn session_not_found() -> Response {
    refuse(StatusCode::NOT_FOUND, "Session not found")
}

/// 403 from the DNS-rebinding protection.
pub(crate) fn forbidden_host() -> Response {
    refuse(
        StatusCode::FORBIDDEN,
        "Forbidden: Host or Origin not allowed",
    )
}

/// 400 with `UnsupportedProtocolVersionError` for an unknown `MCP-Protocol-Version`.
pub(crate) fn unsupported_version(id: Option<RequestId>, requested: &str) -> Response {
    let e = ErrorObject::unsupported_version(
        requested,
        &oxmcp_types::ProtocolVersion::names_newest_first(),
    );
    error_response(StatusCode::BAD_REQUEST, id, e)
}

/// 429 or 503 with `Retry-After` (whole seconds, at least 1) and a transient busy error.
pub(crate) fn retry_later(
    status: StatusCode,
    id: Option<RequestId>,
    wait: Duration,
    message: &str,
) -> Response {
    let e = ErrorObject::new(ErrorCode::SERVER_BUSY, message)
        .with_data(serde_json::json!({ "transient": true }));
    let mut r = error_response(status, id, e);
    let secs = wait.as_secs_f64().ceil().max(1.0);
    if let Ok(v) = HeaderValue::from_str(&format!("{secs:.0}")) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// Undecodable input over HTTP: 400 with the JSON-RPC error (HTTP has no error storm to fear).
pub(crate) fn decode_error_response(e: DecodeError) -> Response {
    error_response(StatusCode::BAD_REQUEST, e.id, e.error)
}

pub(crate) fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Whether `Accept` lists `mime` (or `*/*`).
pub(crate) fn accepts(headers: &HeaderMap, mime: &str) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| {
            v.split(',')
                .map(|p| p.split(';').next().unwrap_or("").trim())
                .any(|m| m == mime || m == "*/*")
        })
}

/// Reads a request body: 413 before reading when `Content-Length` is too large, 413 as soon as
/// the streamed bytes pass the limit (chunked or lying bodies), 408 when it arrives too slowly.
pub(crate) async fn read_body(
    config: &HttpConfig,
    headers: &HeaderMap,
    body: Body,
) -> Result<Bytes, Response> {
    let too_large = || {
        rpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            None,
            ErrorCode::INVALID_REQUEST,
            &format!("Request body larger than {} bytes", config.max_body),
        )
    };
    let declared = header_str(headers, header::CONTENT_LENGTH.as_str())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > config.max_body as u64) {
        return Err(too_large());
    }
    match tokio::time::timeout(
        config.body_read_timeout,
        axum::body::to_bytes(body, config.max_body),
    )
    .await
    {
        Ok(Ok(b)) => Ok(b),
        Ok(Err(e)) => {
            let limit = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            if limit {
                Err(too_large())
            } else {
                Err(bad_request("Could not read the request body"))
            }
        }
        Err(_) => Err(rpc_error(
            StatusCode::REQUEST_TIMEOUT,
            None,
            ErrorCode::INVALID_REQUEST,
            "The request body did not arrive in time",
        )),
    }
}

/// A 200 JSON answer, with the session header on the one that created the session.
pub(crate) fn json_response(body: String, session: Option<&str>) -> Response {
    let mut resp = (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response();
    if let Some(id) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        resp.headers_mut().insert(SESSION_HEADER, id);
    }
    resp
}
