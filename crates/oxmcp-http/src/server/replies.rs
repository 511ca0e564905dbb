//! Building HTTP answers (message bodies), reading headers, and reading a request body within
//! its limits. Refusals are [`Refusal`]s.

use axum::body::{Body, Bytes};
use axum::http::header::AsHeaderName;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::Response;

use oxmcp_jsonrpc::Message;

use crate::server::config::HttpConfig;
use crate::server::protobuf::Encoding;
use crate::server::refusal::Refusal;

// Header names parsed once, not at each look-up (statics: a `HeaderName` holds `Bytes`).
pub(crate) static SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
pub(crate) static VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
pub(crate) static LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// The value of `name` in `headers`, if it is there and visible ASCII.
pub(crate) fn header_str(headers: &HeaderMap, name: impl AsHeaderName) -> Option<&str> {
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
) -> Result<Bytes, Refusal> {
    let too_large = || Refusal::body_too_large(config.max_body);
    let declared =
        header_str(headers, header::CONTENT_LENGTH).and_then(|v| v.trim().parse::<u64>().ok());
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
                Err(Refusal::bad_request("Could not read the request body"))
            }
        }
        Err(_) => Err(Refusal::body_too_slow()),
    }
}

/// A 200 answer holding message `line` in the client's `encoding`, with the session header
/// on the one that created the session.
pub(crate) fn answer_response(line: String, session: Option<&str>, encoding: Encoding) -> Response {
    let mut resp = encoding.answer(StatusCode::OK, line);
    if let Some(id) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        resp.headers_mut().insert(SESSION_HEADER.clone(), id);
    }
    resp
}

/// The engine's batch answer (a JSON array, never empty; a single answer is made one) with
/// `extra` answers appended, without reading it again: they go before its closing bracket.
pub(crate) fn merge_batch(answer: &str, extra: &[Message]) -> String {
    let answer = answer.trim();
    let mut all = String::with_capacity(answer.len() + 64 * extra.len() + 2);
    match answer.strip_suffix(']') {
        Some(open) if answer.starts_with('[') => all.push_str(open),
        _ => {
            all.push('[');
            all.push_str(answer);
        }
    }
    for m in extra {
        all.push(',');
        all.push_str(&m.encode());
    }
    all.push(']');
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxmcp_jsonrpc::RequestId;

    #[test]
    fn extra_batch_answers_join_the_engines_array() {
        let extra = [Message::error(
            Some(RequestId::Number(2)),
            oxmcp_jsonrpc::ErrorObject::invalid_request("dup"),
        )];
        let merged = merge_batch(r#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#, &extra);
        let all: Vec<serde_json::Value> = serde_json::from_str(&merged).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0]["id"], 1);
        assert_eq!(all[1]["id"], 2);
        assert_eq!(all[1]["error"]["code"], -32600);
        let single = merge_batch(
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"m"}}"#,
            &extra,
        );
        let all: Vec<serde_json::Value> = serde_json::from_str(&single).unwrap();
        assert_eq!(all.len(), 2);
    }
}
