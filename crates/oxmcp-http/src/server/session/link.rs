//! A session's tie to its engine connection ([`Link`]): feeding it, answering on the POST's
//! own task, and parking it while the session is idle (started again by its next message).

use std::sync::Arc;

use oxmcp_jsonrpc::Inbound;
use tokio::sync::mpsc;

use super::HttpSession;

/// How many turns of the runtime [`HttpSession::park_after_handshake`] waits for the engine
/// to handle `notifications/initialized` (it takes one or two), before it leaves the session
/// to the idle period.
const HANDSHAKE_PARK_TURNS: usize = 32;

/// A session's tie to its engine connection.
pub(crate) enum Link {
    /// An engine connection runs: its input, and its handle for answering a request on the
    /// POST's own task.
    Open {
        incoming: mpsc::Sender<Inbound>,
        direct: oxmcp_engine::DirectSlot,
    },
    /// Parked, or being parked ([`HttpSession::park`]): no engine connection runs, and the
    /// next message for the session starts one ([`HttpSession::wake`]). Counted in
    /// [`crate::stats::parked_sessions`] while it stays so.
    Parked(crate::stats::Parked),
    /// Its engine connection is being started (the session is new, or was parked).
    Starting,
    /// The session has ended.
    Closed,
}

impl HttpSession {
    /// The engine's handle for answering a request on the caller's task, when the session is
    /// open and the engine has handled everything fed to it before (a request never
    /// overtakes a message the client sent before it, such as `notifications/initialized`).
    pub(crate) fn direct(&self) -> Option<oxmcp_engine::Direct> {
        self.with_engine(|direct, caught_up| caught_up.then(|| direct.clone()))
            .flatten()
    }

    /// `f` of the running engine's handle and of whether it has handled everything fed to
    /// it, under the link's lock; `None` when no engine runs (or it is not set up yet).
    fn with_engine<T>(&self, f: impl FnOnce(&oxmcp_engine::Direct, bool) -> T) -> Option<T> {
        let link = self.link.lock();
        let Link::Open { direct, .. } = &*link else {
            return None;
        };
        let direct = direct.get()?;
        let fed = self.fed.load(std::sync::atomic::Ordering::Acquire);
        Some(f(direct, direct.handled() == fed))
    }

    /// The current engine connection's input, if one runs.
    pub(super) fn incoming(&self) -> Option<mpsc::Sender<Inbound>> {
        match &*self.link.lock() {
            Link::Open { incoming, .. } => Some(incoming.clone()),
            _ => None,
        }
    }

    /// Ties the session to a new engine connection (`incoming`, `direct`), whose requests to
    /// the client are numbered from [`HttpSession::first_request_id`].
    /// (A session closed meanwhile stays closed: dropping `incoming` ends the connection.)
    pub(crate) fn attach(&self, incoming: mpsc::Sender<Inbound>, direct: oxmcp_engine::DirectSlot) {
        let mut link = self.link.lock();
        if matches!(*link, Link::Starting) {
            self.fed.store(0, std::sync::atomic::Ordering::Release);
            *link = Link::Open { incoming, direct };
        }
    }

    /// Where the next engine connection numbers its requests to the client from.
    pub(crate) fn first_request_id(&self) -> i64 {
        self.next_request.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Parks the session's engine connection, if the session and its engine are quiet: no
    /// stream open or kept for resumption (nothing could reach the client meanwhile), no
    /// request of either side in flight, everything fed handled, and a service that offers
    /// parking. The engine ends, the service keeps the session's state, and the next message
    /// starts a connection again ([`HttpSession::wake`]). True if parking began.
    pub(crate) fn park(&self, idle_for: std::time::Duration) -> bool {
        // The streams' lock is held throughout: a POST registers its stream under it before
        // it feeds the engine, so no request slips in between the check and the parking.
        let streams = self.lock();
        // (A finished stream is replayed from the log alone: it does not keep the engine.)
        let open = streams.by_token.values().any(|s| !s.finished);
        if open || streams.standalone.is_some() || !streams.busy.is_empty() {
            return false;
        }
        if self.last_seen.lock().elapsed() < idle_for {
            // Used since the reaper looked.
            return false;
        }
        let mut link = self.link.lock();
        let Link::Open { direct, .. } = &*link else {
            return false;
        };
        let Some(direct) = direct.get() else {
            return false;
        };
        let fed = self.fed.load(std::sync::atomic::Ordering::Acquire);
        if direct.handled() != fed || !direct.quiet() || !self.park.begin(direct.peer_handles()) {
            return false;
        }
        self.next_request.store(
            direct.next_request_id(),
            std::sync::atomic::Ordering::Release,
        );
        // Dropping the input ends the engine connection (the service keeps the state).
        *link = Link::Parked(crate::stats::Parked::new());
        true
    }

    /// Parks the session once its engine has handled what was fed to it, if it is quiet
    /// then (see [`HttpSession::park`]): called when its client has sent
    /// `notifications/initialized`. A client that connects and waits then holds no engine
    /// while it waits, and the engines of sessions opened one after the other reuse the same
    /// memory instead of each keeping theirs until `HttpConfig::park_idle_after`. The next
    /// message starts the engine again, as for any parked session; a session that is busy by
    /// then (a request, a GET stream) is not parked, and waits for the idle period as before.
    pub(crate) fn park_after_handshake(self: &Arc<Self>) {
        if !self.parks() {
            return;
        }
        let session = Arc::downgrade(self);
        tokio::spawn(async move {
            for _ in 0..HANDSHAKE_PARK_TURNS {
                tokio::task::yield_now().await;
                let Some(session) = session.upgrade() else {
                    return;
                };
                match session.with_engine(|_, caught_up| caught_up) {
                    Some(true) => {
                        if session.park(std::time::Duration::ZERO) {
                            tracing::trace!(session = %session.id, "parked after its handshake");
                        }
                        return;
                    }
                    Some(false) => {}
                    None => return,
                }
            }
        });
    }

    /// Whether the session's backend lets it be parked (one held in this process only).
    pub(crate) fn parks(&self) -> bool {
        self.backend.parks()
    }

    /// Whether no engine connection runs for the session because it is parked.
    pub(crate) fn is_parked(&self) -> bool {
        matches!(*self.link.lock(), Link::Parked(_))
    }

    /// Makes sure an engine connection runs for the session: one that was parked is started
    /// again, with the state its service kept (once the parked one has ended). False: the
    /// session has ended.
    pub(crate) async fn wake(self: &Arc<Self>) -> bool {
        enum Next {
            Start(Arc<crate::server::endpoint::Inner>),
            Yield,
            Wait,
        }
        loop {
            let next = {
                let mut link = self.link.lock();
                match &*link {
                    Link::Open { .. } => return true,
                    Link::Closed => return false,
                    Link::Parked(_) if self.park.is_parked() => {
                        let Some(inner) = self.endpoint.upgrade() else {
                            return false;
                        };
                        // This caller starts the connection; any other waits for it.
                        *link = Link::Starting;
                        Next::Start(inner)
                    }
                    // Another caller is starting it, on its task without a pause.
                    Link::Starting => Next::Yield,
                    // Still ending: wait until it is parked (or, should it have ended, gone).
                    Link::Parked(_) => Next::Wait,
                }
            };
            match next {
                Next::Start(inner) => {
                    // Woken: it is in use again (the reaper neither expires nor parks it for
                    // another idle period).
                    self.touch();
                    inner.connect(self, false);
                }
                Next::Yield => tokio::task::yield_now().await,
                Next::Wait => {
                    // Settled: over, or parked. Another caller may have started the next
                    // connection meanwhile; the link says so on the next turn.
                    if !self.park.wait().await {
                        return false;
                    }
                    tokio::task::yield_now().await;
                }
            }
        }
    }
}
