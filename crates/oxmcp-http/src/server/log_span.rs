//! The span a POST is answered in, for logs (`mcp.post`, at debug level): the session it
//! names, the id and method of its one request, and the principal, so that what is logged
//! while answering it says whose request it was. Made only when debug logging is on; else
//! the span is disabled and costs one check. Never a token, a header value other than the
//! session id, or an argument. Text from the client is cut at 200 characters and its control,
//! line-separator and direction characters are escaped, in either log format.

use axum::http::HeaderMap;
use oxmcp_jsonrpc::{Message, RequestId};
use tracing::field::Empty;

use crate::server::admission::plausible_session_id;
use crate::server::replies::{SESSION_HEADER, header_str};

/// The span of a POST of `messages` with `headers` from `principal`, with a debug event
/// opening it.
pub(crate) fn post(
    headers: &HeaderMap,
    messages: &[Message],
    principal: Option<&str>,
) -> tracing::Span {
    let span = tracing::debug_span!(
        "mcp.post",
        session = Empty,
        request = Empty,
        method = Empty,
        principal = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    if let Some(id) = header_str(headers, &SESSION_HEADER).filter(|id| plausible_session_id(id)) {
        span.record("session", id);
    }
    if let [Message::Request(r)] = messages {
        match &r.id {
            RequestId::Number(n) => span.record("request", n),
            RequestId::String(s) => span.record("request", &*safe(s)),
        };
        span.record("method", &*safe(&r.method));
    }
    if let Some(p) = principal {
        span.record("principal", &*safe(p));
    }
    span.in_scope(|| tracing::debug!(messages = messages.len(), "POST received"));
    span
}

/// Client text for a field: at most 200 characters, unsafe characters escaped.
fn safe(text: &str) -> std::borrow::Cow<'_, str> {
    oxmcp_jsonrpc::printable(super::loggable(text))
}
