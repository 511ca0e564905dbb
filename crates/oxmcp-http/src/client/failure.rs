//! What a failed exchange becomes: a [`TransportError`] for the request it carried (the HTTP
//! status and what the answer said), read before and after the answer's body.

use futures::StreamExt;
use oxmcp_jsonrpc::{ErrorObject, Message, TransportError};

use super::codec::{Answer, protobuf_answer};

/// A request that got no HTTP answer at all, and why (the causes, one after the other). The
/// server is named by scheme, host and port only: this goes to logs and on to clients, and a
/// URL's path and query may hold a secret.
pub(super) fn no_answer(e: reqwest::Error) -> TransportError {
    let to = e
        .url()
        .map(|u| format!(" to {}", u.origin().ascii_serialization()))
        .unwrap_or_default();
    let e = e.without_url();
    let mut why = e.to_string();
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        why = format!("{why}: {c}");
        cause = c.source();
    }
    TransportError::Io(format!("HTTP request{to} failed: {why}"))
}

/// What an HTTP answer's status and headers say about a failure, taken before its body is
/// read.
pub(super) struct Failure {
    pub(super) status: reqwest::StatusCode,
    retry_after: Option<std::time::Duration>,
    /// A redirect that was not followed: the message and the `Location`.
    redirect: Option<(String, Option<String>)>,
}

impl Failure {
    pub(super) fn of(resp: &reqwest::Response) -> Self {
        let (status, headers) = (resp.status(), resp.headers());
        Self {
            status,
            retry_after: retry_after(headers),
            redirect: crate::origin::redirect_message(status, headers).map(|m| {
                let location = headers
                    .get(reqwest::header::LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                (m, location)
            }),
        }
    }

    /// The failure of an answer without a JSON-RPC body: its status, `Retry-After`, the
    /// `Location` of a redirect not followed, and the start of the body.
    pub(super) fn error(&self, body: &str) -> TransportError {
        let body: String = body.chars().take(2000).collect();
        let (message, location) = match &self.redirect {
            Some((message, location)) => (message.clone(), location.clone()),
            None => (format!("HTTP {}", self.status), None),
        };
        TransportError::Http {
            status: self.status.as_u16(),
            retry_after: self.retry_after,
            location,
            message,
            body,
        }
    }
}

/// The JSON-RPC error a failed answer's body carries, if it is one.
pub(super) fn rpc_error_of(body: &str) -> Option<ErrorObject> {
    match Message::decode(body.as_bytes()) {
        Ok(Message::Response(oxmcp_jsonrpc::Response {
            outcome: Err(e), ..
        })) => Some(e),
        _ => None,
    }
}

/// `Retry-After` (the delay-seconds form).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<std::time::Duration> {
    let secs: u64 = headers
        .get("retry-after")?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(std::time::Duration::from_secs(secs))
}

/// The body of an answer, at most `max` bytes of UTF-8 (a body in the protobuf encoding is
/// turned into its JSON text).
pub(super) async fn read_limited(
    resp: reqwest::Response,
    max: usize,
) -> Result<String, TransportError> {
    let (body, protobuf) = read_bytes(resp, max).await?;
    if protobuf {
        return oxmcp_proto::decode_json_text(&body, &oxmcp_proto::DecodeLimits::default())
            .map_err(|e| TransportError::Invalid(format!("an answer in protobuf: {e}")));
    }
    utf8(body)
}

/// The body of a successful answer, as [`read_limited`] reads it, for the engine: a plain
/// result in protobuf comes decoded ([`Answer::Decoded`]), anything else as its JSON text.
pub(super) async fn read_success(
    resp: reqwest::Response,
    max: usize,
) -> Result<Answer, TransportError> {
    let (body, protobuf) = read_bytes(resp, max).await?;
    if protobuf {
        return protobuf_answer(&body)
            .map_err(|e| TransportError::Invalid(format!("an answer in protobuf: {e}")));
    }
    utf8(body).map(Answer::Text)
}

/// A JSON body's text.
fn utf8(body: Vec<u8>) -> Result<String, TransportError> {
    String::from_utf8(body).map_err(|_| TransportError::Invalid("response is not UTF-8".to_owned()))
}

/// The bytes of an answer's body, at most `max`, and whether they are in the protobuf
/// encoding.
async fn read_bytes(
    resp: reqwest::Response,
    max: usize,
) -> Result<(Vec<u8>, bool), TransportError> {
    let protobuf = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with(oxmcp_proto::MEDIA_TYPE));
    // A body declared past `max` is refused unread. The declared length is room taken once
    // (a 1 MiB answer grew its buffer eight times, copying each time), up to
    // `RESERVED_AT_MOST` however large `max` is set, and only if the allocator has it: the
    // server chose that number.
    const RESERVED_AT_MOST: usize = 8 * 1024 * 1024;
    let declared = resp
        .content_length()
        .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
    if declared > max {
        return Err(TransportError::Invalid(format!(
            "response larger than {max} bytes"
        )));
    }
    let mut body = Vec::new();
    if body
        .try_reserve_exact(declared.min(RESERVED_AT_MOST))
        .is_err()
    {
        tracing::debug!("no room for a body of {declared} bytes up front: it grows as it comes");
    }
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            TransportError::Io(format!("reading the response failed: {}", e.without_url()))
        })?;
        if body.len() + chunk.len() > max {
            return Err(TransportError::Invalid(format!(
                "response larger than {max} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, protobuf))
}

/// Whether an answer is an SSE stream.
pub(super) fn is_sse(resp: &reqwest::Response) -> bool {
    resp.headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}
