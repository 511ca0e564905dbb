//! Cancelling a 2026-07-28 request: there is no session to carry `notifications/cancelled`,
//! so closing the request's POST (its SSE stream, or the connection awaiting its JSON
//! answer) is the signal. When the engine gives up on such a request (the caller dropped
//! the call, or its timeout fired) it sends `notifications/cancelled`; here that aborts the
//! request's POST instead of being POSTed itself. Legacy requests are not tracked: their
//! cancellation is POSTed to the session as usual.

use oxmcp_jsonrpc::{OutMessage, RequestId};
use tokio_util::sync::CancellationToken;

use super::State;

/// The method of a cancellation.
const CANCELLED: &str = "notifications/cancelled";

impl State {
    /// Tracks `out` if it is a 2026-07-28 request: the token aborts its POST.
    pub(super) fn track_modern(&self, out: &OutMessage) -> Option<(RequestId, CancellationToken)> {
        let id = out.request_id()?;
        let method = out.method()?;
        super::modern::headers_of(method, &out.line)?;
        let token = CancellationToken::new();
        self.modern_calls.lock().insert(id.clone(), token.clone());
        Some((id.clone(), token))
    }

    /// The request's POST has ended.
    pub(super) fn untrack_modern(&self, id: &RequestId) {
        self.modern_calls.lock().remove(id);
    }

    /// If `out` cancels a tracked 2026-07-28 request: aborts that request's POST and says
    /// so (the notification is then not sent: the closed stream is the cancellation).
    pub(super) fn abort_modern(&self, out: &OutMessage) -> bool {
        if out.method() != Some(CANCELLED) {
            return false;
        }
        let Some(id) = cancelled_id(&out.line) else {
            return false;
        };
        let Some(token) = self.modern_calls.lock().remove(&id) else {
            return false;
        };
        tracing::debug!(%id, "closing the POST of a cancelled 2026-07-28 request");
        token.cancel();
        true
    }
}

/// The `requestId` of a `notifications/cancelled` line.
fn cancelled_id(line: &str) -> Option<RequestId> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    RequestId::from_value(&v["params"]["requestId"])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cancelled_id_is_read_from_the_params() {
        let line = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"x"}}"#;
        assert_eq!(cancelled_id(line), Some(RequestId::Number(7)));
        assert_eq!(cancelled_id(r#"{"params":{}}"#), None);
        assert_eq!(cancelled_id("not json"), None);
    }
}
