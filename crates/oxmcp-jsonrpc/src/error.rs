//! JSON-RPC error objects and codes.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A JSON-RPC error code. An open set: any `i32` is representable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: ErrorCode = ErrorCode(-32700);
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(-32600);
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: ErrorCode = ErrorCode(-32601);
    /// Invalid method parameters.
    pub const INVALID_PARAMS: ErrorCode = ErrorCode(-32602);
    /// Internal JSON-RPC error.
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(-32603);
    /// Ours (implementation-defined range): too much work in flight; retry later. Sent with
    /// `data.transient: true`.
    pub const SERVER_BUSY: ErrorCode = ErrorCode(-32000);
    /// MCP (before 2026-07-28): resource not found.
    pub const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);
    /// MCP 2026-07-28: HTTP header does not match the body.
    pub const HEADER_MISMATCH: ErrorCode = ErrorCode(-32020);
    /// MCP 2026-07-28: a required client capability is missing.
    pub const MISSING_CLIENT_CAPABILITY: ErrorCode = ErrorCode(-32021);
    /// MCP 2026-07-28: unsupported protocol version.
    pub const UNSUPPORTED_PROTOCOL_VERSION: ErrorCode = ErrorCode(-32022);
    /// MCP: URL elicitation required.
    pub const URL_ELICITATION_REQUIRED: ErrorCode = ErrorCode(-32042);
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The `error` member of a JSON-RPC response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("JSON-RPC error {code}: {}", printable(.message))]
pub struct ErrorObject {
    /// Error code.
    pub code: ErrorCode,
    /// Short description.
    pub message: String,
    /// Extra information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Adds `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// -32700 with a detail string in `data`.
    pub fn parse_error(detail: impl fmt::Display) -> Self {
        Self::new(ErrorCode::PARSE_ERROR, "Parse error")
            .with_data(Value::String(detail.to_string()))
    }

    /// -32600 with a detail string in `data`.
    pub fn invalid_request(detail: impl fmt::Display) -> Self {
        Self::new(ErrorCode::INVALID_REQUEST, "Invalid Request")
            .with_data(Value::String(detail.to_string()))
    }

    /// -32601 naming the method.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
        .with_data(serde_json::json!({ "method": method }))
    }

    /// -32602 with a message.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_PARAMS, message)
    }

    /// -32603 with a message.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INTERNAL_ERROR, message)
    }

    /// MCP's `UnsupportedProtocolVersionError` (-32022): what was asked for (at most its
    /// first [`ECHO_CHARS`] characters) and the versions that are spoken.
    pub fn unsupported_version(requested: &str, supported: &[&str]) -> Self {
        Self::new(
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
        )
        .with_data(serde_json::json!({ "supported": supported, "requested": echo(requested) }))
    }
}

/// The most characters of the other side's text an error message repeats.
pub const ECHO_CHARS: usize = 64;

/// `text` whole when it has at most [`ECHO_CHARS`] characters, else its first
/// [`ECHO_CHARS`] characters followed by "…": an error never carries (or logs) megabytes of
/// what a client sent.
pub fn echo(text: &str) -> String {
    match text.char_indices().nth(ECHO_CHARS) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}

/// Text from the other side, safe to print in a log line or on a terminal: control
/// characters (C0, DEL, C1), line and paragraph separators and bidirectional formatting
/// characters are written as `\u{..}` escapes, so they can neither forge lines nor restyle
/// a terminal. Everything else is kept as is.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    fn unsafe_char(c: char) -> bool {
        c.is_control()
            || matches!(
                c,
                '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{061c}'
            )
            || ('\u{202a}'..='\u{202e}').contains(&c)
            || ('\u{2066}'..='\u{2069}').contains(&c)
    }
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod printable_tests {
    use super::*;

    #[test]
    fn control_and_direction_characters_are_escaped() {
        assert_eq!(printable("plain text, ünïcode"), "plain text, ünïcode");
        assert_eq!(
            printable("a\nb\u{1b}[31m\u{9b}\u{202e}c"),
            "a\\u{a}b\\u{1b}[31m\\u{9b}\\u{202e}c"
        );
        let e = ErrorObject::new(ErrorCode::INTERNAL_ERROR, "bad\nFAKE LOG LINE");
        assert!(!e.to_string().contains('\n'), "{e}");
    }
}
