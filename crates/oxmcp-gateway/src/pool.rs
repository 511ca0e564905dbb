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
//! A request that ends before its upstream answered it leaves its connection in quarantine,
//! not lent to anyone until the upstream is quiet (see [`quarantine`](super::quarantine)).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use std::time::Duration;

use oxmcp_client::{Client, ConnectError, Status, Supervised, SupervisorError};
use oxmcp_jsonrpc::ErrorObject;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::{Budget, Call, Holder, Link, Upstream, all_pages, connect, settle};

/// How long an extra connection may stay idle before it is closed.
pub(super) const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

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
    /// Requests each principal ended before their answer (`max_interrupted_per_principal`).
    budget: Budget,
    /// Taken out of the gateway by a reload: a connection given back is closed.
    retired: AtomicBool,
}

/// A connection lent to one request. [`Lease::release`] returns it (answered);
/// [`Lease::interrupt`] and [`Lease::fail`] say the request ended without its answer; dropped
/// otherwise (the request was dropped), it is quarantined as when interrupted.
pub(super) struct Lease {
    client: Arc<Client>,
    lent: Option<Lent>,
}

struct Lent {
    pool: Arc<Pool>,
    holder: Arc<Holder>,
    /// An extra connection (`None`: the supervised one).
    extra: Option<Conn>,
    /// Who the request's client is (its budget pays for a quarantine it causes).
    principal: Option<String>,
    _permit: OwnedSemaphorePermit,
}

impl Pool {
    /// A pool around the supervised connection, whose handlers read `primary_holder`; each
    /// principal may end `interruptions` requests early per [`BUDGET_WINDOW`].
    pub(super) fn new(
        link: Arc<Link>,
        upstream: Upstream,
        primary: Supervised,
        primary_holder: Arc<Holder>,
        interruptions: usize,
    ) -> Arc<Pool> {
        let pool = Arc::new(Pool {
            link,
            permits: Arc::new(Semaphore::new(upstream.max_connections().max(1))),
            upstream,
            primary,
            primary_holder,
            primary_lent: AtomicBool::new(false),
            idle: Mutex::new(Vec::new()),
            budget: Budget::new(interruptions),
            retired: AtomicBool::new(false),
        });
        tokio::spawn(close_idle(Arc::downgrade(&pool)));
        pool
    }

    fn idle(&self) -> parking_lot::MutexGuard<'_, Vec<Extra>> {
        self.idle.lock()
    }

    /// From now on each principal may end `interruptions` requests early per window.
    pub(super) fn set_interruptions(&self, interruptions: usize) {
        self.budget.set_limit(interruptions);
    }

    /// Takes the upstream out of the gateway: the supervised connection is stopped (a child
    /// gets the close-TERM-KILL sequence) and the idle extra connections closed, before this
    /// returns; a connection lent now is closed when its request gives it back.
    pub(super) async fn retire(&self) {
        self.retired.store(true, Ordering::Release);
        self.primary.stop().await;
        let idle = std::mem::take(&mut *self.idle());
        futures::future::join_all(idle.into_iter().map(|e| close_now(e.conn))).await;
    }

    /// Whether a request of `principal` may be served: not while it is past its budget of
    /// requests ended early.
    ///
    /// # Errors
    /// -32000 with `data.retryAfterMs`.
    pub(super) fn admit(&self, principal: Option<&str>) -> Result<(), ErrorObject> {
        self.budget.admit(&self.link.name, principal)
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
        let principal = call.ctx.principal().map(str::to_owned);
        holder.lend(call);
        Ok(Lease {
            client,
            lent: Some(Lent {
                pool: self.clone(),
                holder,
                extra,
                principal,
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

    /// Returns the connection now: the upstream answered.
    pub(super) fn release(mut self) {
        if let Some(lent) = self.lent.take() {
            lent.give_back();
        }
    }

    /// The request ended before its answer, on its client's account (cancelled, or paused
    /// for `input_required`). `outstanding`: something it sent upstream was still unanswered
    /// (and has been cancelled): the connection is quarantined, and the principal's budget
    /// pays for it. Otherwise the upstream is not working on it: the connection is returned.
    pub(super) fn interrupt(mut self, outstanding: bool) {
        if let Some(lent) = self.lent.take() {
            if outstanding {
                lent.pool.budget.spend(lent.principal.as_deref());
                lent.quarantine(self.client.clone());
            } else {
                lent.give_back();
            }
        }
    }

    /// The request ended without an answer on no client's account (timed out, the transport
    /// failed): the connection is quarantined.
    pub(super) fn fail(mut self) {
        if let Some(lent) = self.lent.take() {
            lent.quarantine(self.client.clone());
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // Neither returned nor interrupted: the request was dropped before its answer, and
        // the upstream may still send things about it on this connection.
        if let Some(lent) = self.lent.take() {
            lent.pool.budget.spend(lent.principal.as_deref());
            lent.quarantine(self.client.clone());
        }
    }
}

impl Lent {
    fn give_back(self) {
        self.holder.clear();
        match self.extra {
            None => self.pool.primary_lent.store(false, Ordering::Release),
            Some(conn) if conn.client.is_closed() || self.pool.retired.load(Ordering::Acquire) => {
                close(conn);
            }
            Some(conn) => self.pool.idle().push(Extra {
                conn,
                idle_since: Instant::now(),
            }),
        }
        // The permit is released after this: the connection is back first.
    }

    /// Keeps the connection out of use (it stays taken, and so does its permit) until its
    /// upstream is quiet, then returns it; replaces it if the upstream is not.
    fn quarantine(self, client: Arc<Client>) {
        self.holder.quarantine();
        if client.is_closed() {
            // Gone already (the supervisor replaces the supervised one).
            return self.give_back();
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return self.recycle(&client);
        };
        rt.spawn(async move {
            if settle(&client, &self.holder).await {
                tracing::debug!(upstream = %self.pool.link.name, "a quarantined connection is quiet; lent again");
                self.give_back();
            } else {
                self.recycle(&client);
            }
        });
    }

    /// Takes the connection out of use for good: an extra one is closed, the supervised one
    /// replaced (it is no longer `Up` when this returns, so it is not lent again).
    fn recycle(self, client: &Arc<Client>) {
        self.holder.clear();
        let name = &self.pool.link.name;
        match self.extra {
            Some(conn) => {
                tracing::warn!(upstream = %name, "closed a connection: a request ended before its answer, and the upstream did not go quiet");
                close(conn);
            }
            None => {
                if self.pool.primary.recycle(client) {
                    tracing::warn!(upstream = %name, "replaced the connection: a request ended before its answer, and the upstream did not go quiet");
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
    tokio::spawn(close_now(conn));
}

/// Closes an extra connection (see [`close`]).
async fn close_now(conn: Conn) {
    match Arc::try_unwrap(conn.client) {
        Ok(client) => {
            client.close().await;
        }
        Err(shared) => {
            shared.close_transport().await;
        }
    }
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
