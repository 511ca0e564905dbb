//! A 2026-07-28 request's client hanging up: the spec makes closing the POST's response (its
//! SSE stream, or the connection awaiting its JSON answer) the cancellation of that request.
//! [`CancelOnHangUp`] holds the engine's input while the answer is being made; dropped before
//! the response went out (hyper drops the handler's future or the response body when the
//! client goes away), it tells the engine the request is cancelled, which fires the
//! handler's `ctx.cancellation()` and sends no response.

use oxmcp_jsonrpc::{Inbound, Message, RequestId};
use serde_json::json;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;

/// Cancels request `id` on its engine connection when dropped, unless the response went out.
pub(crate) struct CancelOnHangUp {
    id: RequestId,
    input: Option<mpsc::Sender<Inbound>>,
    answered: bool,
}

impl CancelOnHangUp {
    /// Watches request `id`, whose engine connection reads `input` (kept open meanwhile).
    pub(crate) fn new(id: RequestId, input: mpsc::Sender<Inbound>) -> Self {
        Self {
            id,
            input: Some(input),
            answered: false,
        }
    }

    /// The response is on its way: nothing to cancel any more.
    pub(crate) fn answered(&mut self) {
        self.answered = true;
    }

    /// Fails the handler's request `id` to the client at once: 2026-07-28 has no stream that
    /// may carry it, and no session for the answer to come back on.
    pub(crate) fn unreachable(&self, id: RequestId) {
        let Some(input) = self.input.clone() else {
            return;
        };
        let error = oxmcp_jsonrpc::TransportError::Unreachable(
            "no stream to the client: 2026-07-28 servers send no requests to the client \
             (sampling, elicitation and roots are input_required rounds)"
                .to_owned(),
        );
        let failed = Inbound::failed(id, error);
        tokio::spawn(async move {
            let _ = input.send(failed).await;
        });
    }
}

impl Drop for CancelOnHangUp {
    fn drop(&mut self) {
        let Some(input) = self.input.take() else {
            return;
        };
        if self.answered {
            return;
        }
        let params = json!({
            "requestId": self.id,
            "reason": "the client closed the response stream",
        });
        let Ok(msg) = Message::notification("notifications/cancelled", &params) else {
            return;
        };
        tracing::debug!(id = %self.id, "the client hung up; cancelling its request");
        match input.try_send(Inbound::decoded(msg, None)) {
            Ok(()) | Err(TrySendError::Closed(_)) => {}
            Err(TrySendError::Full(msg)) => {
                // The engine has not read the request yet: deliver the cancellation after it.
                if let Ok(rt) = tokio::runtime::Handle::try_current() {
                    rt.spawn(async move {
                        let _ = input.send(msg).await;
                    });
                }
            }
        }
    }
}
