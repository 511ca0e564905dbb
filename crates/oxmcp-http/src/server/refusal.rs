//! [`Refusal`]: every HTTP refusal the server side makes (Streamable HTTP, legacy HTTP+SSE,
//! the bearer check, and the WebSocket upgrade and gRPC calls admitted through
//! `crate::front`), with its status, its body (a JSON-RPC error, an OAuth error, or text),
//! and its extra headers (`Retry-After`, `WWW-Authenticate`), built here and turned into a
//! response here; and the HTTP status of a 2026-07-28 answer by its error code.

use std::time::Duration;

use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use oxmcp_jsonrpc::{DecodeError, ErrorCode, ErrorObject, Message, RequestId};

use crate::server::protobuf::RefusedMessage;

/// A refused request: its status, body and extra headers. Built by a constructor named for
/// the reason; it becomes a response with [`IntoResponse`] (or `Response::from`), and the
/// gRPC server reads it ([`Refusal::status`], [`Refusal::error_code`], [`Refusal::header`])
/// to make its `tonic::Status`.
#[derive(Debug, Clone)]
#[must_use]
pub struct Refusal {
    status: StatusCode,
    body: Body,
    headers: Vec<(HeaderName, HeaderValue)>,
}

/// What a refusal's body says.
#[derive(Debug, Clone)]
enum Body {
    /// A JSON-RPC error answer (`application/json`).
    Rpc {
        id: Option<RequestId>,
        error: ErrorObject,
    },
    /// An OAuth error (RFC 6750 §3): `{"error", "error_description"}` (`application/json`).
    OAuth { error: String, description: String },
    /// Plain text (`text/plain`).
    Text(String),
    /// Nothing.
    Empty,
}

impl Refusal {
    fn rpc(status: StatusCode, id: Option<RequestId>, error: ErrorObject) -> Self {
        Self {
            status,
            body: Body::Rpc { id, error },
            headers: Vec::new(),
        }
    }

    /// `status` with an Invalid Request error (-32600) saying `message`, for a request
    /// refused before any JSON-RPC id is known.
    pub fn invalid_request(status: StatusCode, message: &str) -> Self {
        Self::rpc(
            status,
            None,
            ErrorObject::new(ErrorCode::INVALID_REQUEST, message),
        )
    }

    /// 400 with an Invalid Request error saying `message`.
    pub fn bad_request(message: &str) -> Self {
        Self::invalid_request(StatusCode::BAD_REQUEST, message)
    }

    /// 400: a session's request without `Mcp-Session-Id`.
    pub fn missing_session_id() -> Self {
        Self::bad_request("Bad Request: Mcp-Session-Id header is required")
    }

    /// 400: an `Mcp-Session-Id` that cannot be one of ours.
    pub fn malformed_session_id() -> Self {
        Self::bad_request("Bad Request: malformed Mcp-Session-Id")
    }

    /// 404: the session named does not exist (or ended, or is another principal's).
    pub fn unknown_session() -> Self {
        Self::invalid_request(StatusCode::NOT_FOUND, "Session not found")
    }

    /// 403 from the DNS-rebinding protection.
    pub fn forbidden_host() -> Self {
        Self::invalid_request(
            StatusCode::FORBIDDEN,
            "Forbidden: Host or Origin not allowed",
        )
    }

    /// 400 with `UnsupportedProtocolVersionError` for an unknown `MCP-Protocol-Version`.
    pub fn unsupported_version(id: Option<RequestId>, requested: &str) -> Self {
        let e = ErrorObject::unsupported_version(
            requested,
            &oxmcp_types::ProtocolVersion::names_newest_first(),
        );
        Self::rpc(StatusCode::BAD_REQUEST, id, e)
    }

    /// 429 or 503 with a transient busy error (-32000) and `Retry-After` (whole seconds, at
    /// least 1).
    pub fn retry_later(
        status: StatusCode,
        id: Option<RequestId>,
        wait: Duration,
        message: &str,
    ) -> Self {
        let e = ErrorObject::new(ErrorCode::SERVER_BUSY, message)
            .with_data(serde_json::json!({ "transient": true }));
        Self::rpc(status, id, e).retry_after(wait)
    }

    /// 503 once shutdown has begun.
    pub fn shutting_down() -> Self {
        Self::retry_later(
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            Duration::from_secs(1),
            "Server is shutting down",
        )
    }

    /// 413: a body over `limit` bytes.
    pub fn body_too_large(limit: usize) -> Self {
        Self::invalid_request(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("Request body larger than {limit} bytes"),
        )
    }

    /// 408: a body that did not arrive in time.
    pub fn body_too_slow() -> Self {
        Self::invalid_request(
            StatusCode::REQUEST_TIMEOUT,
            "The request body did not arrive in time",
        )
    }

    /// 400 with the JSON-RPC error of undecodable input (HTTP has no error storm to fear).
    pub fn undecodable(e: DecodeError) -> Self {
        Self::rpc(StatusCode::BAD_REQUEST, e.id, e.error)
    }

    /// `status` with a parse error (-32700) saying `message`.
    pub fn parse_error(status: StatusCode, message: &str) -> Self {
        Self::rpc(
            status,
            None,
            ErrorObject::new(ErrorCode::PARSE_ERROR, message),
        )
    }

    /// 400 with an Invalid Params error about request `id`'s `_meta`.
    pub fn invalid_meta(id: &RequestId, what: &str) -> Self {
        let e = ErrorObject::invalid_params(format!("Invalid params: {what}"));
        Self::rpc(StatusCode::BAD_REQUEST, Some(id.clone()), e)
    }

    /// 400 with `HeaderMismatch` (-32020): a standard header disagrees with request `id`.
    pub fn header_mismatch(id: &RequestId, message: String) -> Self {
        let e = ErrorObject::new(ErrorCode::HEADER_MISMATCH, message);
        Self::rpc(StatusCode::BAD_REQUEST, Some(id.clone()), e)
    }

    /// 500 with an internal error for request `id`: the server could not answer it.
    pub fn internal(id: RequestId, message: &str) -> Self {
        Self::rpc(
            StatusCode::INTERNAL_SERVER_ERROR,
            Some(id),
            ErrorObject::internal(message),
        )
    }

    /// An OAuth error (RFC 6750 §3) with `status`: `{error, error_description}`, and the
    /// `challenge` as `WWW-Authenticate` if given.
    pub fn oauth(
        status: StatusCode,
        challenge: Option<&str>,
        error: &str,
        description: &str,
    ) -> Self {
        let refusal = Self {
            status,
            body: Body::OAuth {
                error: error.to_owned(),
                description: description.to_owned(),
            },
            headers: Vec::new(),
        };
        match challenge.and_then(|c| HeaderValue::from_str(c).ok()) {
            Some(v) => refusal.with_header(header::WWW_AUTHENTICATE, v),
            None => refusal,
        }
    }

    /// 503: the bearer token could not be checked now.
    pub fn token_unavailable() -> Self {
        Self::oauth(
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            "temporarily_unavailable",
            "the token could not be checked now; retry later",
        )
    }

    /// `status` with `text` as a plain-text body (the WebSocket upgrade's refusals).
    pub fn text(status: StatusCode, text: impl Into<String>) -> Self {
        Self {
            status,
            body: Body::Text(text.into()),
            headers: Vec::new(),
        }
    }

    /// 405 without a body: the method has no meaning here (GET in 2026-07-28).
    pub fn method_not_allowed() -> Self {
        Self {
            status: StatusCode::METHOD_NOT_ALLOWED,
            body: Body::Empty,
            headers: Vec::new(),
        }
    }

    /// This refusal with `Retry-After`: `wait` in whole seconds, at least 1.
    pub fn retry_after(self, wait: Duration) -> Self {
        let secs = wait.as_secs_f64().ceil().max(1.0);
        match HeaderValue::from_str(&format!("{secs:.0}")) {
            Ok(v) => self.with_header(header::RETRY_AFTER, v),
            Err(_) => self,
        }
    }

    fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }

    /// Its HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The JSON-RPC error code its body carries, if it carries one.
    pub fn error_code(&self) -> Option<ErrorCode> {
        match &self.body {
            Body::Rpc { error, .. } => Some(error.code),
            _ => None,
        }
    }

    /// What it says: the JSON-RPC error's message, the OAuth error's description, the text.
    pub fn message(&self) -> &str {
        match &self.body {
            Body::Rpc { error, .. } => &error.message,
            Body::OAuth { description, .. } => description,
            Body::Text(text) => text,
            Body::Empty => "",
        }
    }

    /// The value of its extra header `name` (`www-authenticate`, `retry-after`), if it has it.
    pub fn header(&self, name: &HeaderName) -> Option<&HeaderValue> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        crate::stats::refused(self.status.as_u16());
        let json = [(header::CONTENT_TYPE, "application/json")];
        let mut response = match self.body {
            Body::Rpc { id, error } => {
                let line = axum::body::Bytes::from(Message::error(id, error).encode());
                let mut response = (self.status, json, line.clone()).into_response();
                // For a client that takes protobuf (`Encoding::refusal`).
                response.extensions_mut().insert(RefusedMessage(line));
                response
            }
            Body::OAuth { error, description } => {
                let body = serde_json::json!({ "error": error, "error_description": description });
                (self.status, json, body.to_string()).into_response()
            }
            Body::Text(text) => (self.status, text).into_response(),
            Body::Empty => self.status.into_response(),
        };
        for (name, value) in self.headers {
            response.headers_mut().insert(name, value);
        }
        response
    }
}

impl From<Refusal> for Response {
    fn from(refusal: Refusal) -> Response {
        refusal.into_response()
    }
}

/// The HTTP status of a 2026-07-28 answer whose error is `code` (`None`: a result): 404 for
/// an unknown method, 400 for a request the headers or the version make malformed, 200 for
/// the rest (a failed request is still answered).
pub(crate) fn answer_status(code: Option<ErrorCode>) -> StatusCode {
    match code {
        Some(ErrorCode::METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
        Some(
            ErrorCode::HEADER_MISMATCH
            | ErrorCode::MISSING_CLIENT_CAPABILITY
            | ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
        ) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}
