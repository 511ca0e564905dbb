//! The state changes a shared session's client asked for (log level, subscriptions), held
//! until the engine answers: an accepted change is saved in the shared store and sent on the
//! bus before its answer reaches the client; a refused one is never shared.

use oxmcp_jsonrpc::{Answered, ErrorCode, ErrorObject, Message, OutKind, RawValue, RequestId};
use oxmcp_store::{BusEvent, StateChange, StoreError};

use super::HttpSession;
use super::by_id::ById;
use super::streams::Routed;
use crate::server::scale_out::Shared;

/// Changes waiting for their requests' answers, by request id.
pub(super) type Changes = ById<StateChange>;

impl HttpSession {
    /// Holds `change` until request `id` is answered (store-backed sessions only). Only for a
    /// request whose stream is open (its id is in flight, so no other request's answer can
    /// carry that id until it is answered).
    pub(crate) fn expect_change(&self, id: RequestId, change: StateChange) {
        self.changes.lock().insert(id, change);
    }

    /// Drops what is held for requests that ended (answered or not).
    pub(crate) fn forget_changes(&self, ended: &[RequestId]) {
        let mut changes = self.changes.lock();
        if changes.is_empty() {
            return;
        }
        for id in ended {
            changes.remove(id);
        }
    }

    /// Shares the changes whose requests `routed` answers with success, as the engine said
    /// (its kind carries each answer's error code; the line is not read). A change that
    /// cannot be shared turns its answer into an error (which asks the client to try again):
    /// only then is the line rewritten. Changes of requests it refused are dropped, and so
    /// is the change of a request that ended without an answer (cancelled).
    pub(crate) async fn share_answered(&self, shared: &Shared, routed: &mut Routed) {
        if self.changes.lock().is_empty() {
            return;
        }
        let answered = match &routed.kind {
            // A single response answers the request it is related to.
            Some(OutKind::Response { error }) => vec![Answered {
                id: routed.related.clone(),
                error: *error,
            }],
            Some(OutKind::Batch { entries }) => entries.clone(),
            Some(_) => return,
            None => {
                if let Some(id) = &routed.related {
                    self.changes.lock().remove(id);
                }
                return;
            }
        };
        let mut failed = Vec::new();
        for (i, a) in answered.into_iter().enumerate() {
            let Some(id) = a.id else { continue };
            let Some(change) = self.changes.lock().remove(&id) else {
                continue;
            };
            if a.error.is_none()
                && let Err(e) = self.share(shared, change).await
            {
                failed.push((i, Message::error(Some(id), e)));
            }
        }
        if !failed.is_empty() {
            rewrite(routed, failed);
        }
    }

    /// Saves `change` in the shared store and announces it on the bus; the refusal to send
    /// instead of the answer when the store did not take it.
    async fn share(&self, shared: &Shared, change: StateChange) -> Result<(), ErrorObject> {
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
                return Ok(());
            }
            Err(e) => e,
        };
        // The client is told to try again (this instance holds the change; the others and
        // the store do not yet). Not undone here: the same change may have been held before.
        tracing::warn!(session = %self.id, "a state change was not saved: {error}");
        Err(refusal(&error))
    }
}

/// Replaces answers of `routed` by `failed` (position in the answer, error response): the
/// one response, or entries of a batch.
fn rewrite(routed: &mut Routed, failed: Vec<(usize, Message)>) {
    match &mut routed.kind {
        Some(OutKind::Batch { entries }) => {
            let Some(line) = routed.line.as_deref() else {
                return;
            };
            let Ok(mut items) = serde_json::from_str::<Vec<Box<RawValue>>>(line) else {
                return;
            };
            for (i, m) in failed {
                if let (Some(item), Ok(raw)) = (items.get_mut(i), RawValue::from_string(m.encode()))
                {
                    *item = raw;
                    if let (Some(entry), Message::Response(r)) = (entries.get_mut(i), &m) {
                        *entry = Answered::of(r);
                    }
                }
            }
            if let Ok(line) = serde_json::to_string(&items) {
                routed.line = Some(line);
            }
        }
        kind => {
            if let Some((_, m)) = failed.into_iter().next() {
                routed.line = Some(m.encode());
                *kind = Some(OutKind::of(&m));
            }
        }
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
