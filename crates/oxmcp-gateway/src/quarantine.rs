//! Whom a connection to an upstream is lent to ([`Holder`]), and what becomes of it when its
//! request ends before the upstream answered it: quarantine, and a per-principal budget of
//! such requests.
//!
//! A request that ends early (its client cancelled it, or it gave way to a 2026-07-28
//! `input_required` round) may leave the upstream working on it, and nothing says when the
//! upstream is done: a cancelled request gets no answer, and what the upstream still sends
//! about it (sampling, elicitation, log lines) names no request. So its connection is not
//! lent again at once. It is *quarantined*: not lent; a sampling, elicitation or roots request
//! arriving on it is refused (a JSON-RPC error back to the upstream), its log lines still go
//! to the request that ended (its last words, to its own client). It is lent again once the
//! upstream has answered a `ping` (sent after the cancellation, so read after it) and then
//! sent nothing about any request (requests, log lines, progress) for [`QUIET`]. An
//! upstream that does not answer within [`PING_TIMEOUT`], or is not quiet within
//! [`QUARANTINE_MAX`], has its connection replaced (a stdio server restarted): that is the
//! only way a request that ends early restarts an upstream, at most once per
//! [`QUARANTINE_MAX`] per connection. A request that ends early with nothing of its own left
//! unanswered upstream (a 2026-07-28 upstream's `input_required` round is over when the
//! gateway answers it) gives its connection back at once.
//!
//! Each principal (all unauthenticated clients are one) may end a limited number of requests
//! early per upstream within [`BUDGET_WINDOW`] (`max_interrupted_per_principal`); past that its
//! requests to that upstream are refused (-32000, `data.retryAfterMs`) until the oldest one
//! leaves the window, so that one client cannot keep an upstream in quarantine for all.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use oxmcp_client::Client;
use oxmcp_jsonrpc::{ErrorCode, ErrorObject};
use parking_lot::Mutex;
use tokio::time::Instant;

use super::Call;

/// How long an upstream must say nothing about any request before its quarantined
/// connection is lent again.
pub(super) const QUIET: Duration = Duration::from_secs(2);
/// How long a quarantined connection's upstream has to answer its `ping`.
pub(super) const PING_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a connection may stay in quarantine before it is replaced.
pub(super) const QUARANTINE_MAX: Duration = Duration::from_secs(30);
/// The window of the per-principal budget of requests ended early.
pub(super) const BUDGET_WINDOW: Duration = Duration::from_secs(60);

/// Where a connection stands.
#[derive(Default)]
enum Holding {
    /// Not lent: nobody may be asked anything.
    #[default]
    Idle,
    /// Lent to this request: what arrives is its own.
    Lent(Call),
    /// In quarantine after this request ended early: its log lines still reach it, nobody
    /// may be asked anything.
    Quarantined(Call),
}

/// Whom one connection is lent to; its handlers ask, and tell it what they heard.
#[derive(Default)]
pub(super) struct Holder {
    holding: Mutex<Holding>,
    /// Messages the upstream sent on the connection that may be about a request.
    heard: AtomicU64,
}

impl Holder {
    /// Lends the connection to `call`.
    pub(super) fn lend(&self, call: Call) {
        *self.holding.lock() = Holding::Lent(call);
    }

    /// Nobody holds the connection.
    pub(super) fn clear(&self) {
        *self.holding.lock() = Holding::Idle;
    }

    /// Puts the connection in quarantine (its request ended before its answer).
    pub(super) fn quarantine(&self) {
        let mut holding = self.holding.lock();
        if let Holding::Lent(call) = std::mem::take(&mut *holding) {
            *holding = Holding::Quarantined(call);
        }
    }

    /// The request an upstream's sampling, elicitation or roots request arriving now is
    /// asked of: the one the connection is lent to.
    ///
    /// # Errors
    /// The JSON-RPC error for the upstream when the connection is not lent to anyone.
    pub(super) fn asker(&self) -> Result<Call, ErrorObject> {
        self.heard();
        match &*self.holding.lock() {
            Holding::Lent(call) => Ok(call.clone()),
            Holding::Quarantined(_) => Err(ended()),
            Holding::Idle => Err(no_request()),
        }
    }

    /// The request a log line arriving now belongs to: the one the connection is lent to, or
    /// the one whose early end put it in quarantine (none: nobody's).
    pub(super) fn speaker(&self) -> Option<Call> {
        self.heard();
        match &*self.holding.lock() {
            Holding::Lent(call) | Holding::Quarantined(call) => Some(call.clone()),
            Holding::Idle => None,
        }
    }

    /// Notes a message from the upstream that may be about a request.
    pub(super) fn heard(&self) {
        self.heard.fetch_add(1, Ordering::Relaxed);
    }

    fn heard_so_far(&self) -> u64 {
        self.heard.load(Ordering::Relaxed)
    }
}

/// The answer to an upstream's request that arrives while no downstream request holds its
/// connection: there is nobody it may be asked of.
pub(super) fn no_request() -> ErrorObject {
    ErrorObject::internal("no client request is in progress to ask")
}

/// The answer to an upstream's request that arrives on a quarantined connection: the request
/// it may be about has ended.
fn ended() -> ErrorObject {
    ErrorObject::internal(
        "the client request this may be about has ended (cancelled); nobody may be asked",
    )
}

/// Whether a quarantined connection may be lent again: its upstream answered a `ping` within
/// [`PING_TIMEOUT`], then sent nothing about any request for [`QUIET`], all within
/// [`QUARANTINE_MAX`].
pub(super) async fn settle(client: &Client, holder: &Holder) -> bool {
    let heard = || holder.heard_so_far() + client.peer().unmatched_progress();
    let settled = async {
        match tokio::time::timeout(PING_TIMEOUT, client.ping()).await {
            Ok(Ok(())) => {}
            _ => return false,
        }
        loop {
            let before = heard();
            tokio::time::sleep(QUIET).await;
            if client.is_closed() {
                return false;
            }
            if heard() == before {
                return true;
            }
        }
    };
    tokio::time::timeout(QUARANTINE_MAX, settled)
        .await
        .unwrap_or(false)
}

/// Requests each principal ended early on one upstream, within [`BUDGET_WINDOW`].
pub(super) struct Budget {
    /// Requests per window (a reload may change it).
    limit: AtomicUsize,
    spent: Mutex<HashMap<Option<String>, VecDeque<Instant>>>,
}

impl Budget {
    /// Each principal may end `limit` requests early per window.
    pub(super) fn new(limit: usize) -> Self {
        Self {
            limit: AtomicUsize::new(limit.max(1)),
            spent: Mutex::default(),
        }
    }

    /// From now on each principal may end `limit` requests early per window.
    pub(super) fn set_limit(&self, limit: usize) {
        self.limit.store(limit.max(1), Ordering::Relaxed);
    }

    /// Whether `principal` may send another request to `upstream`.
    ///
    /// # Errors
    /// -32000 with `data.retryAfterMs` when it has ended its share early in the window.
    pub(super) fn admit(&self, upstream: &str, principal: Option<&str>) -> Result<(), ErrorObject> {
        let now = Instant::now();
        let limit = self.limit.load(Ordering::Relaxed);
        let mut spent = self.spent.lock();
        let key = principal.map(str::to_owned);
        let Some(times) = spent.get_mut(&key) else {
            return Ok(());
        };
        forget_old(times, now);
        if times.len() < limit {
            if times.is_empty() {
                spent.remove(&key);
            }
            return Ok(());
        }
        let wait = times.front().map_or(Duration::ZERO, |t| {
            (*t + BUDGET_WINDOW).saturating_duration_since(now)
        });
        Err(over_budget(upstream, principal, limit, wait))
    }

    /// Counts one request of `principal` ended early.
    pub(super) fn spend(&self, principal: Option<&str>) {
        let now = Instant::now();
        let limit = self.limit.load(Ordering::Relaxed);
        let mut spent = self.spent.lock();
        // Principals seen once and not since are forgotten now and then.
        if spent.len() >= 1024 {
            spent.retain(|_, times| {
                forget_old(times, now);
                !times.is_empty()
            });
        }
        let times = spent.entry(principal.map(str::to_owned)).or_default();
        forget_old(times, now);
        times.push_back(now);
        while times.len() > limit {
            times.pop_front();
        }
    }
}

fn forget_old(times: &mut VecDeque<Instant>, now: Instant) {
    while times
        .front()
        .is_some_and(|t| now.duration_since(*t) >= BUDGET_WINDOW)
    {
        times.pop_front();
    }
}

/// -32000 for a principal that ended its share of requests early.
fn over_budget(
    upstream: &str,
    principal: Option<&str>,
    limit: usize,
    wait: Duration,
) -> ErrorObject {
    let who = principal.map_or("unauthenticated clients".to_owned(), |p| {
        format!("{:?}", oxmcp_jsonrpc::echo(p))
    });
    let ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1);
    let secs = ms.div_ceil(1000);
    ErrorObject::new(
        ErrorCode::SERVER_BUSY,
        format!(
            "Too many interrupted requests: {who} ended {limit} requests to upstream {upstream} \
             before it answered (cancelled, or paused for input) within {}s; retry in {secs}s",
            BUDGET_WINDOW.as_secs()
        ),
    )
    .with_data(serde_json::json!({ "transient": true, "retryAfterMs": ms }))
}
