//! What comes back to a peer: responses and transport failures routed to their waiting
//! callers, progress to the request that asked for it, and the end of the connection.

use std::sync::atomic::Ordering;

use oxmcp_jsonrpc::{RequestId, TransportError};
use oxmcp_types::{ProgressParams, ProgressToken};

use super::{Outcome, Peer};
use crate::error::CallError;

impl Peer {
    /// Routes an incoming response to its waiting caller. Unknown ids are logged and ignored.
    pub(crate) fn complete(&self, id: Option<RequestId>, outcome: Outcome) {
        let key = match id {
            Some(RequestId::Number(n)) => n,
            other => {
                tracing::warn!(id = ?other, "response for an id we never sent; ignored");
                return;
            }
        };
        match self.take_pending(key) {
            Some(p) => {
                let _ = p.tx.send(outcome);
            }
            None => {
                tracing::warn!(
                    id = key,
                    "response for an unknown or finished request; ignored"
                );
            }
        }
    }

    /// Fails our request `id` with the transport's error (see [`oxmcp_jsonrpc::Inbound::Failed`]).
    pub(crate) fn fail(&self, id: RequestId, error: TransportError) {
        self.complete(Some(id), Err(CallError::Transport(error)));
    }

    /// Routes `notifications/progress` to the request that asked for it.
    pub(crate) fn progress(&self, params: ProgressParams) {
        let ProgressToken::Number(key) = params.progress_token else {
            tracing::debug!("progress for a token we never issued; ignored");
            self.inner
                .unmatched_progress
                .fetch_add(1, Ordering::Relaxed);
            return;
        };
        let (cb, touched) = {
            let pending = self.lock_pending();
            match pending.get(&key) {
                Some(p) => (p.on_progress.clone(), p.touched.clone()),
                None => {
                    tracing::debug!(token = key, "progress for an unknown token; ignored");
                    self.inner
                        .unmatched_progress
                        .fetch_add(1, Ordering::Relaxed);
                    return;
                }
            }
        };
        if let Some(touched) = touched {
            touched.notify_one();
        }
        if let Some(cb) = cb {
            cb(params);
        }
    }

    /// Marks the connection closed and fails every waiting caller with [`CallError::Closed`].
    pub(crate) fn close(&self) {
        self.inner.closed.store(true, Ordering::Release);
        self.lock_pending().clear();
    }
}
