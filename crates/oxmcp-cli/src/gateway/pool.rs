//! The connections to one upstream, each lent to one downstream request at a time.
//!
//! An upstream in the handshake era sends its sampling and elicitation requests and its log
//! messages on the connection, not on the request they are about (stdio, or a session's
//! stream over HTTP); a 2026-07-28 upstream's log messages over stdio do not say either. So a
//! downstream request that reaches an upstream holds a connection to it *alone* for as long as
//! it runs (a [`Lease`]): whatever arrives on that connection meanwhile is its own, exactly,
//! and never another client's.
//!
//! The supervised connection (lists, subscriptions, heartbeats) is lent first; when it is
//! taken, an idle extra connection, or a new one, up to `max_connections` in all; beyond that,
//! requests wait for one to be free (or for their client to cancel). Extra connections idle
//! for [`IDLE_TIMEOUT`] are closed. What arrives while no request holds a connection (an
//! upstream's own log lines) belongs to no client: it is only logged by the gateway.
//!
//! A request that ends before its answer (cancelled by its client, or giving way to a
//! 2026-07-28 `input_required`) leaves the upstream still working on it, and nothing says when
//! the upstream is done: a cancelled request gets no answer, and whatever it still sends
//! (sampling, elicitation, log lines) names no request. So its connection is never lent
//! again: it stays with that request for [`CANCEL_GRACE`] (its last words reach its own
//! client), then is recycled, an extra one closed, the supervised one replaced by a new
//! connection (a stdio server restarted; not counted as a crash). The next request gets a
//! fresh connection, on which nothing about the old request can arrive.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use std::time::Duration;

use oxmcp_client::{Client, ConnectError, Status, Supervised, SupervisorError};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::*;

/// How long an extra connection may stay idle before it is closed.
pub(super) const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a cancelled request keeps its connection before it is recycled.
pub(super) const CANCEL_GRACE: Duration = Duration::from_secs(1);

/// The downstream request a connection is lent to, if any; its handlers ask.
#[derive(Default)]
pub(super) struct Holder(Mutex<Option<Call>>);

impl Holder {
    fn lock(&self) -> parking_lot::MutexGuard<'_, Option<Call>> {
        self.0.lock()
    }

    /// The request holding the connection now.
    pub(super) fn current(&self) -> Option<Call> {
        self.lock().clone()
    }

    fn set(&self, call: Option<Call>) {
        *self.lock() = call;
    }
}

/// An extra connection and the holder its handlers read.
struct Extra {
    conn: Conn,
    idle_since: Instant,
}

/// One extra connection.
#[derive(Clone)]
struct Conn {
    client: Arc<Client>,
    holder: Arc<Holder>,
}

/// The connections to one upstream.
pub(super) struct Pool {
    pub(super) link: Arc<Link>,
    upstream: Upstream,
    /// The supervised connection.
    pub(super) primary: Supervised,
    primary_holder: Arc<Holder>,
    primary_lent: AtomicBool,
    /// Extra connections not lent now, the most recently returned last.
    idle: Mutex<Vec<Extra>>,
    /// One per connection that may be lent (`max_connections`).
    permits: Arc<Semaphore>,
}

/// A connection lent to one request. [`Lease::release`] returns it; dropped otherwise (the
/// request was cancelled or gave way to `input_required`), it is recycled after
/// [`CANCEL_GRACE`] (meanwhile what the upstream still sends goes to that request).
pub(super) struct Lease {
    client: Arc<Client>,
    lent: Option<Lent>,
}

struct Lent {
    pool: Arc<Pool>,
    holder: Arc<Holder>,
    /// An extra connection (`None`: the supervised one).
    extra: Option<Conn>,
    _permit: OwnedSemaphorePermit,
}

impl Pool {
    /// A pool around the supervised connection, whose handlers read `primary_holder`.
    pub(super) fn new(
        link: Arc<Link>,
        upstream: Upstream,
        primary: Supervised,
        primary_holder: Arc<Holder>,
    ) -> Arc<Pool> {
        let pool = Arc::new(Pool {
            link,
            permits: Arc::new(Semaphore::new(upstream.max_connections().max(1))),
            upstream,
            primary,
            primary_holder,
            primary_lent: AtomicBool::new(false),
            idle: Mutex::new(Vec::new()),
        });
        tokio::spawn(close_idle(Arc::downgrade(&pool)));
        pool
    }

    fn idle(&self) -> parking_lot::MutexGuard<'_, Vec<Extra>> {
        self.idle.lock()
    }

    /// Lends a connection to `call`, waiting for one to be free if all are lent.
    ///
    /// # Errors
    /// The supervisor's, when the upstream is down (as for a supervised call), or
    /// [`SupervisorError::Down`] when an extra connection cannot be made.
    pub(super) async fn lease(self: &Arc<Self>, call: Call) -> Result<Lease, SupervisorError> {
        // Down, restarting or in a crash loop: say so rather than queue.
        self.primary.client().await?;
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| SupervisorError::Stopped)?;
        // The supervised connection may have been recycled while we waited: wait for the new
        // one rather than open another (a second process of a stdio server).
        self.primary.client().await?;
        // No await from taking the supervised connection to handing out the lease: a request
        // dropped meanwhile cannot keep it taken.
        let (client, holder, extra) = match self.take_primary() {
            Some(client) => (client, self.primary_holder.clone(), None),
            None => {
                let conn = self.extra().await?;
                (conn.client.clone(), conn.holder.clone(), Some(conn))
            }
        };
        holder.set(Some(call));
        Ok(Lease {
            client,
            lent: Some(Lent {
                pool: self.clone(),
                holder,
                extra,
                _permit: permit,
            }),
        })
    }

    /// The supervised connection, if it is up and not lent.
    fn take_primary(&self) -> Option<Arc<Client>> {
        let Status::Up { client, .. } = self.primary.status() else {
            return None;
        };
        if client.is_closed() || self.primary_lent.swap(true, Ordering::AcqRel) {
            return None;
        }
        Some(client)
    }

    /// An idle extra connection that still works, or a new one.
    async fn extra(&self) -> Result<Conn, SupervisorError> {
        loop {
            let Some(extra) = self.idle().pop() else {
                break;
            };
            if !extra.conn.client.is_closed() {
                return Ok(extra.conn);
            }
            close(extra.conn);
        }
        let holder = Arc::new(Holder::default());
        let client = connect(
            self.upstream.clone(),
            self.link.clone(),
            holder.clone(),
            false,
        )
        .await
        .map_err(|e: ConnectError| {
            SupervisorError::Down(format!("connecting another connection failed: {e}"))
        })?;
        let client = Arc::new(client);
        tracing::debug!(upstream = %self.link.name, "opened another connection");
        warm_up(&client, &self.link).await;
        Ok(Conn { client, holder })
    }
}

impl Lease {
    /// The connection.
    pub(super) fn client(&self) -> Arc<Client> {
        self.client.clone()
    }

    /// Returns the connection now: the request is over.
    pub(super) fn release(mut self) {
        if let Some(lent) = self.lent.take() {
            lent.give_back();
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let Some(lent) = self.lent.take() else {
            return;
        };
        // Not released: the request was dropped before its answer (cancelled), and the
        // upstream may still send things about it on this connection.
        let client = self.client.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(async move {
                    tokio::time::sleep(CANCEL_GRACE).await;
                    lent.recycle(client);
                });
            }
            Err(_) => lent.recycle(client),
        }
    }
}

impl Lent {
    fn give_back(self) {
        self.holder.set(None);
        match self.extra {
            None => self.pool.primary_lent.store(false, Ordering::Release),
            Some(conn) if conn.client.is_closed() => close(conn),
            Some(conn) => self.pool.idle().push(Extra {
                conn,
                idle_since: Instant::now(),
            }),
        }
        // The permit is released after this: the connection is back first.
    }

    /// Takes the connection out of use (a request ended before its answer): an extra one is
    /// closed, the supervised one replaced (it is no longer `Up` when this returns, so it is
    /// not lent again).
    fn recycle(self, client: Arc<Client>) {
        self.holder.set(None);
        match self.extra {
            Some(conn) => close(conn),
            None => {
                if self.pool.primary.recycle(&client) {
                    tracing::debug!(upstream = %self.pool.link.name, "recycled the connection of a cancelled request");
                }
                self.pool.primary_lent.store(false, Ordering::Release);
            }
        }
        // The permit is released after this.
    }
}

/// What an extra connection needs before it serves a request: all log messages asked for
/// (clients filter by their own level), and the tool list read once (a 2026-07-28 HTTP
/// client learns from it which arguments go in headers).
async fn warm_up(client: &Client, link: &Link) {
    let caps = client.server_capabilities();
    if caps.logging.is_some()
        && let Err(e) = client.set_log_level(oxmcp_types::LoggingLevel::Debug).await
    {
        tracing::debug!(upstream = %link.name, "logging/setLevel: {e}");
    }
    if caps.tools.is_some() {
        let pages = all_pages(|c| async move {
            client
                .list_tools_page(c)
                .await
                .map(|p| (p.tools, p.next_cursor))
        })
        .await;
        if let Err(e) = pages {
            tracing::debug!(upstream = %link.name, "tools/list: {e}");
        }
    }
}

/// Closes an extra connection in the background (a child server: stdin, SIGTERM, SIGKILL; an
/// HTTP session: DELETE).
fn close(conn: Conn) {
    tokio::spawn(async move {
        match Arc::try_unwrap(conn.client) {
            Ok(client) => {
                client.close().await;
            }
            Err(shared) => {
                shared.close_transport().await;
            }
        }
    });
}

/// Closes extra connections idle for longer than [`IDLE_TIMEOUT`], until the pool is gone.
async fn close_idle(pool: Weak<Pool>) {
    loop {
        tokio::time::sleep(IDLE_TIMEOUT / 4).await;
        let Some(pool) = pool.upgrade() else {
            return;
        };
        let stale: Vec<Extra> = {
            let mut idle = pool.idle();
            let (stale, keep) = std::mem::take(&mut *idle)
                .into_iter()
                .partition(|e| e.idle_since.elapsed() >= IDLE_TIMEOUT || e.conn.client.is_closed());
            *idle = keep;
            stale
        };
        if !stale.is_empty() {
            tracing::debug!(upstream = %pool.link.name, closed = stale.len(), "closed idle connections");
        }
        for e in stale {
            close(e.conn);
        }
    }
}
