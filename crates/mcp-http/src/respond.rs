//! Building HTTP answers: JSON-RPC errors with their status, JSON bodies, SSE streams, and
//! reading a request body within its limits.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use mcp_jsonrpc::{DecodeError, ErrorCode, ErrorObject, Message, RequestId};
use tokio::sync::mpsc;

use crate::config::HttpConfig;
use crate::session::Event;

pub(crate) const SESSION_HEADER: &str = "mcp-session-id";
pub(crate) const VERSION_HEADER: &str = "mcp-protocol-version";

/// A JSON-RPC error with an HTTP status.
pub(crate) fn rpc_error(
    status: StatusCode,
    id: Option<RequestId>,
    code: ErrorCode,
    message: &str,
) -> Response {
    let body = Message::error(id, ErrorObject::new(code, message)).encode();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// 400 with an Invalid Request error.
pub(crate) fn bad_request(message: &str) -> Response {
    rpc_error(
        StatusCode::BAD_REQUEST,
        None,
        ErrorCode::INVALID_REQUEST,
        message,
    )
}

/// 404 "Session not found".
pub(crate) fn session_not_found() -> Response {
    rpc_error(
        StatusCode::NOT_FOUND,
        None,
        ErrorCode::INVALID_REQUEST,
        "Session not found",
    )
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
    let body = Message::error(id, e).encode();
    let mut r = (status, [(header::CONTENT_TYPE, "application/json")], body).into_response();
    let secs = wait.as_secs_f64().ceil().max(1.0);
    if let Ok(v) = HeaderValue::from_str(&format!("{secs:.0}")) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// Undecodable input over HTTP: 400 with the JSON-RPC error (HTTP has no error storm to fear).
pub(crate) fn decode_error_response(e: DecodeError) -> Response {
    let body = Message::error(e.id, e.error).encode();
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
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

/// One SSE event carrying a message, with its id.
pub(crate) fn sse_event(e: &Event) -> String {
    let mut s = format!("id: {}\nevent: message\n", e.id);
    for line in e.data.lines() {
        s.push_str("data: ");
        s.push_str(line);
        s.push('\n');
    }
    s.push('\n');
    s
}

/// The priming event of a stream (an id and `retry`, no data).
pub(crate) fn priming(token: &str, retry: Duration) -> String {
    format!("id: {token}-0\nretry: {}\ndata: \n\n", retry.as_millis())
}

/// An SSE response: `first` chunks, then the live events of `rx` until the last one, with
/// keep-alive comments while nothing happens.
pub(crate) fn sse_response(
    first: Vec<String>,
    rx: Option<mpsc::Receiver<Event>>,
    keep_alive: Duration,
    session: Option<&str>,
) -> Response {
    let state = (VecDeque::from(first), rx, false);
    let stream = futures::stream::unfold(state, move |(mut queue, mut rx, done)| async move {
        if let Some(chunk) = queue.pop_front() {
            return Some((Ok::<_, Infallible>(Bytes::from(chunk)), (queue, rx, done)));
        }
        if done {
            return None;
        }
        let live = rx.as_mut()?;
        match tokio::time::timeout(keep_alive, live.recv()).await {
            // The request ended without a response (cancelled): the stream just ends.
            Ok(Some(e)) if e.is_end_marker() => None,
            Ok(Some(e)) => {
                let last = e.last;
                Some((Ok(Bytes::from(sse_event(&e))), (queue, rx, last)))
            }
            Ok(None) => None,
            Err(_) => Some((
                Ok(Bytes::from_static(b": keep-alive\n\n")),
                (queue, rx, false),
            )),
        }
    });
    let mut resp = Response::new(Body::from_stream(stream));
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Some(id) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        h.insert(SESSION_HEADER, id);
    }
    resp
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

/// The error code of an encoded answer, if it is a JSON-RPC error response (decided by
/// decoding it, not by its text; a result, which may be large, is not decoded at all).
pub(crate) fn error_code(line: &str) -> Option<i32> {
    if !line.contains(r#""error""#) {
        return None;
    }
    match Message::decode_str(line) {
        Ok(Message::Response(mcp_jsonrpc::Response {
            outcome: Err(e), ..
        })) => Some(e.code.0),
        _ => None,
    }
}
