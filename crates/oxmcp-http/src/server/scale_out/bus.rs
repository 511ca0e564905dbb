//! The tasks an endpoint with a shared store runs: its heartbeat, and the reader of the bus.

use std::sync::{Arc, Weak};

use oxmcp_jsonrpc::{Inbound, RequestId};
use oxmcp_store::BusEvent;
use tokio::sync::broadcast::error::RecvError;

use super::Shared;
use crate::server::endpoint::Inner;

/// Starts the heartbeat and the bus reader; both end with the endpoint.
pub(crate) fn start(inner: &Arc<Inner>, shared: &Arc<Shared>) {
    let every = shared.store.config().heartbeat;
    let beat = Arc::downgrade(shared);
    tokio::spawn(async move {
        let mut failing = false;
        loop {
            let Some(shared) = beat.upgrade() else { return };
            match shared.op(shared.store.heartbeat()).await {
                Ok(()) if failing => {
                    tracing::info!(
                        instance = shared.instance(),
                        "session store reachable again"
                    );
                    failing = false;
                }
                Ok(()) => {}
                Err(e) if !failing => {
                    tracing::warn!(instance = shared.instance(), "heartbeat failed: {e}");
                    failing = true;
                }
                Err(_) => {}
            }
            drop(shared);
            tokio::time::sleep(every).await;
        }
    });
    let bus = shared.store.bus();
    tokio::spawn(read(Arc::downgrade(inner), shared.clone(), bus));
    tokio::spawn(keep_open_sessions(Arc::downgrade(inner), shared.clone()));
}

/// A session whose client keeps a stream open but sends nothing is in use: its record must
/// not expire in the store. Such sessions are touched a few times per expiry period.
async fn keep_open_sessions(inner: Weak<Inner>, shared: Arc<Shared>) {
    let every = (shared.store.config().session_ttl / 4).max(std::time::Duration::from_millis(250));
    loop {
        tokio::time::sleep(every).await;
        let Some(strong) = inner.upgrade() else {
            return;
        };
        let open: Vec<String> = strong
            .sessions()
            .values()
            .filter(|s| s.idle_since().is_none())
            .map(|s| s.id.clone())
            .collect();
        drop(strong);
        for id in open {
            if let Err(e) = shared.op(shared.store.touch_session(&id)).await {
                tracing::debug!(session = %id, "open session not kept alive in the store: {e}");
            }
        }
    }
}

async fn read(
    inner: Weak<Inner>,
    shared: Arc<Shared>,
    mut bus: tokio::sync::broadcast::Receiver<BusEvent>,
) {
    let me = shared.instance().to_owned();
    let mut own = 0u64;
    loop {
        let event = match bus.recv().await {
            Ok(e) => e,
            Err(RecvError::Lagged(n)) => {
                tracing::warn!(
                    missed = n,
                    "the bus reader fell behind; {n} events were missed"
                );
                // A session's end may be among them: every session asks the store again.
                if let Some(inner) = inner.upgrade() {
                    for s in inner.sessions().values() {
                        s.store_lease.store(0, std::sync::atomic::Ordering::Release);
                    }
                }
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        let Some(inner) = inner.upgrade() else { return };
        match event {
            BusEvent::SessionEnded { session } => {
                inner.drop_local(&session);
            }
            BusEvent::Deliver {
                session,
                to,
                from,
                message,
            } => {
                if from == me || to.as_ref().is_some_and(|t| *t != me) {
                    continue;
                }
                let local = inner.sessions().get(&session).cloned();
                if let Some(s) = local {
                    s.feed(Inbound::Frame(message.into_bytes())).await;
                }
            }
            BusEvent::State {
                session,
                from,
                change,
            } => {
                if from == me {
                    continue;
                }
                let local = inner.sessions().get(&session).cloned();
                if let Some(s) = local {
                    own += 1;
                    let (method, params) = change.as_request();
                    let id = RequestId::String(format!("oxmcp-store-state-{own}"));
                    s.feed_own(id, method, params).await;
                }
            }
            BusEvent::Bell { session, stream } => shared.rang(&session, &stream),
            // Read by the server's own listeners (changes, task signals).
            BusEvent::Change { .. } | BusEvent::Task { .. } => {}
        }
    }
}
