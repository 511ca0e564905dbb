//! Serving sessions from several instances through a shared [`Store`]: any instance takes any
//! request of any session, and what must cross instances goes through the store. This is the
//! store-backed [`crate::server::backend::SessionBackend`], [`ScaleOut`].
//!
//! - A session is saved when its `initialize` succeeds. An instance that gets a request for a
//!   session it does not hold restores it: it starts the session's engine and replays the
//!   client's `initialize`, `notifications/initialized`, log level and subscriptions (their
//!   answers go nowhere), then serves the request.
//! - A DELETE on any instance ends the session everywhere: the other instances drop it when
//!   the bus brings [`BusEvent::SessionEnded`]. Between bus events an instance serving a
//!   session asks the store whether it still exists once per lease
//!   ([`oxmcp_store::StoreConfig::session_lease`]), not on every request, and after its bus
//!   broke ([`Store::bus_breaks`]) on the next request; each of these asks renews the record's
//!   expiry.
//! - Log level and subscription changes are saved and sent on the bus: every instance holding
//!   the session makes them too.
//! - Requests to the client are numbered from a block of ids per instance; the instance
//!   saves which of them it waits for, and the client's answer, on whatever instance it
//!   arrives, goes to it over the bus. Cancellations go to every instance.
//! - SSE events go to the shared log before they are sent, so a client resumes a stream on
//!   any instance: the instance replays the log and then follows it (a doorbell on the bus
//!   when the writer adds an event, and a poll). If the writer died, the stream's requests
//!   are answered with an error instead of never.

mod backend;
mod bus;
mod incoming;
mod restore;
mod tail;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use oxmcp_store::{BusEvent, Store, StoreError, StoreResult};
use parking_lot::Mutex;
use tokio::sync::{Notify, Semaphore};

pub(crate) use backend::ScaleOut;
pub(crate) use tail::Elsewhere;

/// The endpoint's handle on the shared store.
pub(crate) struct Shared {
    pub(crate) store: Arc<dyn Store>,
    /// Prefix of this process's stream tokens (unique per process, so two instances, or one
    /// restarted, never name two streams alike).
    pub(crate) tag: String,
    waiting: Semaphore,
    max_waiting: usize,
    timeout: Duration,
    /// Restorations under way, one lock per session (two requests of one session must not
    /// start two engines for it; other sessions are restored meanwhile).
    restoring: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Streams of other instances that clients resumed here, woken by their doorbells.
    bells: Mutex<HashMap<(String, String), Arc<Notify>>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("instance", &self.store.instance())
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// A handle on `store`: `max_waiting` operations may wait at once, each at most
    /// `timeout`.
    pub(crate) fn new(store: Arc<dyn Store>, max_waiting: usize, timeout: Duration) -> Self {
        let tag = crate::server::session::random_hex(4)
            .unwrap_or_else(|| format!("{:08x}", std::process::id()));
        Self {
            store,
            tag: format!("{tag}s"),
            waiting: Semaphore::new(max_waiting.max(1)),
            max_waiting: max_waiting.max(1),
            timeout,
            restoring: Mutex::new(HashMap::new()),
            bells: Mutex::new(HashMap::new()),
        }
    }

    /// The restoration lock of session `id` (dropped from the table once nobody holds it).
    pub(crate) fn restore_lock(&self, id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut table = self.restoring.lock();
        table.retain(|_, l| Arc::strong_count(l) > 1);
        table.entry(id.to_owned()).or_default().clone()
    }

    /// This instance's id.
    pub(crate) fn instance(&self) -> &str {
        self.store.instance()
    }

    /// Runs one store operation within the limits: refused at once as busy when too many
    /// wait already, and failed when it takes longer than the timeout.
    pub(crate) async fn op<T>(
        &self,
        f: impl std::future::Future<Output = StoreResult<T>>,
    ) -> StoreResult<T> {
        let Ok(_permit) = self.waiting.try_acquire() else {
            return Err(StoreError::Busy(self.max_waiting));
        };
        match tokio::time::timeout(self.timeout, f).await {
            Ok(r) => r,
            Err(_) => Err(StoreError::Timeout(self.timeout)),
        }
    }

    /// Puts an event on the bus (failures are logged: the bus is best effort where a poll
    /// backs it up, and callers that need it check the result of [`Shared::op`] instead).
    pub(crate) async fn publish(&self, event: BusEvent) -> StoreResult<()> {
        self.op(self.store.publish(&event)).await
    }

    /// Rings a stream's doorbell: it has a new event.
    pub(crate) async fn ring(&self, session: &str, stream: &str) {
        let bell = BusEvent::Bell {
            session: session.to_owned(),
            stream: stream.to_owned(),
        };
        if let Err(e) = self.publish(bell).await {
            tracing::debug!(session, stream, "doorbell not rung (the tailer polls): {e}");
        }
    }

    /// The doorbell of a stream tailed here (made on first use).
    fn bell(&self, session: &str, stream: &str) -> Arc<Notify> {
        self.bells
            .lock()
            .entry((session.to_owned(), stream.to_owned()))
            .or_default()
            .clone()
    }

    /// Stops listening for a stream's doorbell.
    fn unbell(&self, session: &str, stream: &str) {
        self.bells
            .lock()
            .remove(&(session.to_owned(), stream.to_owned()));
    }

    /// Wakes whoever tails `stream` here.
    fn rang(&self, session: &str, stream: &str) {
        let key = (session.to_owned(), stream.to_owned());
        if let Some(n) = self.bells.lock().get(&key) {
            n.notify_one();
        }
    }
}

/// The answer to a request that needed the store when the store failed: 503, a transient
/// busy error (-32000) and `Retry-After`; or, when the store refused it by its limits, 400
/// with -32600 (the same request is refused again).
pub(crate) fn store_failed(e: &StoreError) -> crate::server::refusal::Refusal {
    if !e.is_transient() {
        tracing::debug!("{e}");
        return crate::server::refusal::Refusal::bad_request(&e.to_string());
    }
    tracing::warn!("{e}");
    crate::server::refusal::Refusal::retry_later(
        StatusCode::SERVICE_UNAVAILABLE,
        None,
        Duration::from_secs(1),
        &e.to_string(),
    )
}
