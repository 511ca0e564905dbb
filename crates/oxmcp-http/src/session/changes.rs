//! The state changes a shared session's client asked for (log level, subscriptions), held
//! until the engine answers: an accepted change is saved in the shared store and sent on the
//! bus before its answer reaches the client; a refused one is never shared.

use std::collections::HashMap;

use oxmcp_jsonrpc::{ErrorCode, ErrorObject, RequestId};
use oxmcp_store::{BusEvent, StateChange, StoreError};
use serde_json::Value;

use super::Session;

/// Changes waiting for their requests' answers, by request id.
#[derive(Default)]
pub(super) struct Changes(HashMap<RequestId, StateChange>);

impl Session {
    /// Holds `change` until request `id` is answered (shared sessions only). Only for a
    /// request whose stream is open (its id is in flight, so no other request's answer can
    /// carry that id until it is answered).
    pub(crate) fn expect_change(&self, id: RequestId, change: StateChange) {
        self.changes.lock().0.insert(id, change);
    }

    /// Drops what is held for requests that ended (answered or not).
    pub(super) fn forget_changes(&self, ended: &[RequestId]) {
        let mut changes = self.changes.lock();
        if changes.0.is_empty() {
            return;
        }
        for id in ended {
            changes.0.remove(id);
        }
    }

    /// Shares the changes whose requests `line` answers with success; a change that cannot
    /// be shared turns its answer into an error (which asks the client to try again). Changes of requests it refused are
    /// dropped. `related`: the request the line ends (`None` with no line: it was cancelled).
    pub(super) async fn share_answered(
        &self,
        line: &mut Option<String>,
        related: Option<&RequestId>,
    ) {
        if self.changes.lock().0.is_empty() {
            return;
        }
        let Some(text) = line.as_deref() else {
            if let Some(id) = related {
                self.changes.lock().0.remove(id);
            }
            return;
        };
        let Ok(mut answer) = serde_json::from_str::<Value>(text) else {
            return;
        };
        let mut changed = false;
        match &mut answer {
            Value::Array(items) => {
                for item in items {
                    changed |= self.share_one(item).await;
                }
            }
            item => changed = self.share_one(item).await,
        }
        if changed {
            *line = Some(answer.to_string());
        }
    }

    /// Shares the change answered by `answer` (one response), if any. True when the answer
    /// was replaced by an error (the change could not be shared).
    async fn share_one(&self, answer: &mut Value) -> bool {
        let Some(id) = answer.get("id").and_then(RequestId::from_value) else {
            return false;
        };
        let Some(change) = self.changes.lock().0.remove(&id) else {
            return false;
        };
        if answer.get("result").is_none() {
            return false;
        }
        let Some(shared) = self.shared() else {
            return false;
        };
        let saved = shared
            .op(shared.store.update_session(&self.id, &change))
            .await;
        let error = match saved {
            Ok(()) => {
                let event = BusEvent::State {
                    session: self.id.clone(),
                    from: shared.instance().to_owned(),
                    change,
                };
                if let Err(e) = shared.publish(event).await {
                    // Saved: instances that restore the session later hold it; those holding
                    // it now do not hear of it.
                    tracing::warn!(session = %self.id, "a state change was saved but not announced: {e}");
                }
                return false;
            }
            Err(e) => e,
        };
        // The client is told to try again (this instance holds the change; the others and
        // the store do not yet). Not undone here: the same change may have been held before.
        tracing::warn!(session = %self.id, "a state change was not saved: {error}");
        let failed = oxmcp_jsonrpc::Message::error(Some(id), refusal(&error));
        *answer = serde_json::from_str(&failed.encode()).unwrap_or(Value::Null);
        true
    }
}

/// The answer to a change the store did not take: a refusal by its limits (-32602), or a
/// transient failure (busy, retry).
fn refusal(e: &StoreError) -> ErrorObject {
    if e.is_transient() {
        ErrorObject::new(
            ErrorCode::SERVER_BUSY,
            format!(
                "the change could not be shared with the other server instances ({e}); try again"
            ),
        )
    } else {
        ErrorObject::invalid_params(e.to_string())
    }
}
