//! Where a session's events are kept for resumption: the endpoint's [`EventStore`] (one
//! instance), or the shared [`oxmcp_store::Store`] (several instances).

use std::sync::Arc;

use oxmcp_store::{AppendEvent, StreamInfo};

use crate::event_store::EventStore;
use crate::server::scale_out::Shared;

/// One event read back from the log.
pub(crate) struct Logged {
    pub(crate) seq: u64,
    pub(crate) data: String,
}

/// A session's event log.
#[derive(Clone)]
pub(crate) enum Events {
    /// In this instance only.
    Local(Arc<dyn EventStore>),
    /// In the store every instance shares.
    Shared(Arc<Shared>),
}

impl Events {
    /// The shared store, if the endpoint has one.
    pub(crate) fn shared(&self) -> Option<&Arc<Shared>> {
        match self {
            Self::Shared(s) => Some(s),
            Self::Local(_) => None,
        }
    }

    /// Stores one event (an empty `data` marks the end of a cancelled request's stream, and
    /// is only kept in the shared log, where another instance may be tailing the stream).
    pub(crate) async fn append(
        &self,
        session: &str,
        token: &str,
        seq: u64,
        data: &str,
        last: bool,
        info: Option<&StreamInfo>,
    ) {
        match self {
            Self::Local(store) => {
                if !data.is_empty() {
                    store.append(session, token, seq, data).await;
                }
            }
            Self::Shared(shared) => {
                let event = AppendEvent {
                    session,
                    stream: token,
                    seq,
                    data,
                    last,
                    info,
                };
                if let Err(e) = shared.op(shared.store.append(event)).await {
                    tracing::warn!(
                        session,
                        stream = token,
                        "event not stored for resumption: {e}"
                    );
                }
            }
        }
    }

    /// The stream's events with `after < seq < before`, oldest first (messages only).
    pub(crate) async fn replay(
        &self,
        session: &str,
        token: &str,
        after: u64,
        before: u64,
    ) -> Vec<Logged> {
        match self {
            Self::Local(store) => store
                .replay(session, token, after, before)
                .await
                .into_iter()
                .map(|(seq, data)| Logged { seq, data })
                .collect(),
            Self::Shared(shared) => {
                match shared.op(shared.store.replay(session, token, after)).await {
                    Ok(events) => events
                        .into_iter()
                        .filter(|e| e.seq < before && !e.data.is_empty())
                        .map(|e| Logged {
                            seq: e.seq,
                            data: e.data,
                        })
                        .collect(),
                    Err(e) => {
                        tracing::warn!(session, stream = token, "stored events not read: {e}");
                        Vec::new()
                    }
                }
            }
        }
    }

    /// Drops one stream's events.
    pub(crate) async fn forget_stream(&self, session: &str, token: &str) {
        match self {
            Self::Local(store) => store.forget_stream(session, token).await,
            Self::Shared(shared) => {
                if let Err(e) = shared.op(shared.store.forget_stream(session, token)).await {
                    tracing::debug!(
                        session,
                        stream = token,
                        "stream not dropped (it expires): {e}"
                    );
                }
            }
        }
    }

    /// Drops what this instance keeps of a session (the shared record is dropped by DELETE,
    /// or expires).
    pub(crate) async fn forget_session(&self, session: &str) {
        if let Self::Local(store) = self {
            store.forget_session(session).await;
        }
    }
}
