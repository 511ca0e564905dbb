//! Retrying failed calls: exponential backoff with full jitter, a cap, a per-attempt timeout,
//! and `Retry-After` honoured on 429 and 503.
//!
//! Retried: transport failures without an answer ([`TransportError::Io`]), timeouts, HTTP 5xx
//! and 429 ([`TransportError::Http`]), and errors the server marks transient
//! (`data.transient: true`). Never retried: -32600, -32601, -32602, and every other HTTP
//! status, authorization failures (401, 403) among them. Only safe methods are retried unless the caller says
//! otherwise: lists, reads, gets, discover, ping, completion, and tools whose annotations say
//! read-only or idempotent.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use oxmcp_engine::CallError;
use oxmcp_jsonrpc::TransportError;
use oxmcp_types::Tool;
use serde_json::Value;

/// How failed calls are retried.
#[derive(Debug, Clone, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "", generate_private = false)]
pub struct RetryPolicy {
    /// Attempts in all, the first one included (1 means no retry).
    pub max_attempts: u32,
    /// Backoff before the first retry (doubling each time, before jitter).
    pub base_delay: Duration,
    /// Longest backoff (and longest `Retry-After` honoured).
    pub max_delay: Duration,
    /// Inactivity timeout of each attempt, if it should differ from the call's own.
    pub attempt_timeout: Option<Duration>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(10),
            attempt_timeout: None,
        }
    }
}

/// Whether a call may be retried by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RetryChoice {
    /// Retry if the method is safe (see the module docs).
    #[default]
    IfSafe,
    /// Retry whatever the method (the caller knows repeating it is harmless).
    Always,
    /// Never retry.
    Never,
}

fn random_u64() -> u64 {
    // A fresh SipHash key per call is random enough for jitter, without another dependency.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0x9e37_79b9_7f4a_7c15);
    h.finish()
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// The backoff before retry number `retry` (0 for the first retry): uniformly random in
    /// `[0, min(max_delay, base_delay * 2^retry)]` ("full jitter").
    pub fn backoff(&self, retry: u32) -> Duration {
        let ceiling = self
            .base_delay
            .saturating_mul(1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX))
            .min(self.max_delay);
        let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        if nanos == 0 {
            return Duration::ZERO;
        }
        Duration::from_nanos(random_u64() % (nanos + 1))
    }

    /// Whether `error` may be retried, and the server's `Retry-After` if it gave one.
    pub fn retryable(&self, error: &CallError) -> Option<Option<Duration>> {
        match error {
            CallError::Timeout(_) | CallError::Closed => Some(None),
            CallError::Transport(t) => match t {
                TransportError::Http {
                    status: 429 | 500..=599,
                    retry_after,
                    ..
                } => Some(retry_after.map(|d| d.min(self.max_delay))),
                // 401 and 403 (authorization) and every other status: asking again changes
                // nothing.
                TransportError::Http { .. } => None,
                // No answer at all (refused, reset, a stream that broke): worth another try.
                TransportError::Io(_) => Some(None),
                _ => None,
            },
            CallError::Rpc(e) => {
                if matches!(e.code.0, -32602..=-32600) {
                    return None;
                }
                let transient = e.data.as_ref().and_then(|d| d.get("transient"));
                (transient == Some(&Value::Bool(true))).then_some(None)
            }
            _ => None,
        }
    }
}

/// Methods that may be repeated without effect.
pub(crate) fn safe_method(method: &str) -> bool {
    matches!(
        method,
        "ping"
            | "server/discover"
            | "tools/list"
            | "prompts/list"
            | "prompts/get"
            | "resources/list"
            | "resources/templates/list"
            | "resources/read"
            | "completion/complete"
    )
}

/// Whether a tool says calling it again is harmless.
pub(crate) fn safe_tool(tool: &Tool) -> bool {
    tool.annotations
        .as_ref()
        .is_some_and(|a| a.read_only_hint == Some(true) || a.idempotent_hint == Some(true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxmcp_jsonrpc::{ErrorCode, ErrorObject};
    use serde_json::json;

    #[test]
    fn backoff_is_capped_full_jitter() {
        let p = RetryPolicy::default()
            .base_delay(Duration::from_millis(100))
            .max_delay(Duration::from_secs(1));
        for retry in 0..40 {
            let ceiling =
                Duration::from_millis(100 * (1u64 << retry.min(20))).min(Duration::from_secs(1));
            for _ in 0..50 {
                assert!(p.backoff(retry) <= ceiling, "retry {retry}");
            }
        }
        // Jitter: not always the same value.
        let values: std::collections::HashSet<_> = (0..50).map(|_| p.backoff(3)).collect();
        assert!(values.len() > 10);
    }

    fn http(status: u16, retry_after_secs: Option<u64>) -> CallError {
        CallError::Transport(TransportError::Http {
            status,
            retry_after: retry_after_secs.map(Duration::from_secs),
            location: None,
            message: format!("HTTP {status}"),
            body: String::new(),
        })
    }

    fn rpc(code: i32, data: Value) -> CallError {
        CallError::Rpc(ErrorObject::new(ErrorCode(code), "x").with_data(data))
    }

    #[test]
    fn what_is_retried() {
        let p = RetryPolicy::default();
        assert_eq!(p.retryable(&CallError::Closed), Some(None));
        assert_eq!(
            p.retryable(&CallError::Timeout(Duration::from_secs(1))),
            Some(None)
        );
        assert_eq!(
            p.retryable(&http(503, Some(2))),
            Some(Some(Duration::from_secs(2)))
        );
        assert_eq!(
            p.retryable(&http(429, Some(99))),
            Some(Some(Duration::from_secs(10))),
            "capped"
        );
        assert_eq!(p.retryable(&http(502, None)), Some(None));
        assert_eq!(
            p.retryable(&CallError::Transport(TransportError::Io("reset".into()))),
            Some(None)
        );
        assert_eq!(
            p.retryable(&CallError::Transport(TransportError::Invalid(
                "huge".into()
            ))),
            None
        );
        assert_eq!(
            p.retryable(&rpc(-32000, json!({"transient": true}))),
            Some(None)
        );
        for never in [
            rpc(-32600, json!({"transient": true})),
            rpc(-32601, json!(null)),
            rpc(-32602, json!(null)),
        ] {
            assert_eq!(p.retryable(&never), None);
        }
        assert_eq!(p.retryable(&http(401, None)), None, "auth");
        assert_eq!(p.retryable(&http(403, Some(1))), None, "auth");
        assert_eq!(p.retryable(&http(400, None)), None);
        assert_eq!(
            p.retryable(&rpc(-32603, Value::Null)),
            None,
            "an ordinary server error"
        );
        assert_eq!(p.retryable(&CallError::Protocol("x".into())), None);
    }

    #[test]
    fn safe_methods_and_tools() {
        assert!(safe_method("resources/read") && safe_method("ping"));
        assert!(!safe_method("tools/call") && !safe_method("initialize"));
        let mut t = Tool::default().with_name("t".into());
        assert!(!safe_tool(&t));
        t.annotations =
            Some(oxmcp_types::ToolAnnotations::default().with_idempotent_hint(Some(true)));
        assert!(safe_tool(&t));
    }
}
