//! [`StreamableHttp`]: the MCP endpoint as an axum `Router` (POST, GET, DELETE).

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use std::time::{Duration, Instant};

use axum::routing::post;
use oxmcp_engine::{Connection, EngineConfig, Serve};
use oxmcp_types::ProtocolVersion;
use tokio::sync::{Semaphore, mpsc};

use oxmcp_store::{EventLog, MemoryEventLog};

use crate::server::backend::{Local, SessionBackend, Sessionless};
use crate::server::clients::{Client, ClientTable};
use crate::server::config::HttpConfig;
use crate::server::scale_out::{ScaleOut, Shared};
use crate::server::session::HttpSession;

/// Looks up a tool's `Mcp-Param-{Name}` header mirrors: `(header name, property name)`.
pub(crate) type ParamHeaders = dyn Fn(&str) -> Vec<(String, String)> + Send + Sync;

pub(crate) struct Inner {
    pub(crate) service: Arc<dyn Serve>,
    /// The engine settings of every connection ([`HttpConfig::engine`]).
    pub(crate) engine: EngineConfig,
    /// Where 2026-07-28 requests' `Mcp-Param-*` headers are checked against ([`StreamableHttp::with_param_headers`]).
    pub(crate) param_headers: std::sync::OnceLock<Arc<ParamHeaders>>,
    pub(crate) config: Arc<HttpConfig>,
    /// The event log of the local backend (unused once a store is chosen).
    log: Arc<dyn EventLog>,
    sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
    /// Sessions held and new-session buckets, per client.
    pub(crate) clients: ClientTable,
    /// Sessionless requests in flight (2026-07-28 ones, and legacy ones with
    /// `HttpConfig::stateless`; each holds a permit while it is answered).
    pub(crate) stateless: Arc<Semaphore>,
    /// `subscriptions/listen` streams open.
    pub(crate) listens: Arc<Semaphore>,
    /// The session backend, chosen once: the store-backed one of
    /// [`StreamableHttp::with_store`], else (on first use) the local one over `log`.
    backend: std::sync::OnceLock<Arc<dyn SessionBackend>>,
}

impl Inner {
    pub(crate) fn sessions(
        &self,
    ) -> parking_lot::MutexGuard<'_, HashMap<String, Arc<HttpSession>>> {
        self.sessions.lock()
    }

    /// 503 when the endpoint holds `max_sessions` sessions already.
    pub(crate) fn session_room(&self) -> Result<(), crate::server::refusal::Refusal> {
        if self.sessions().len() >= self.config.max_sessions {
            return Err(crate::server::refusal::Refusal::retry_later(
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                None,
                Duration::from_secs(1),
                "Too many sessions",
            ));
        }
        Ok(())
    }

    /// The session backend (the local one unless a store was set before first use).
    pub(crate) fn backend(&self) -> &Arc<dyn SessionBackend> {
        self.backend
            .get_or_init(|| Arc::new(Local::new(self.log.clone())))
    }

    /// Stops serving a session here (it ended elsewhere, or the store no longer has it).
    pub(crate) fn drop_local(&self, id: &str) {
        self.remove(id);
    }

    /// Ends a session: its engine finishes what it accepted, its streams end, its stored
    /// events go, and its client's count goes down.
    pub(crate) fn remove(&self, id: &str) -> Option<Arc<HttpSession>> {
        let s = self.sessions().remove(id);
        if let Some(s) = &s {
            s.close();
            if let Some(key) = &s.client {
                self.clients.release(key);
            }
            let s = s.clone();
            tokio::spawn(async move { s.forget_stored().await });
        }
        s
    }

    /// Starts a session's engine and registers it.
    pub(crate) fn start_session(
        self: &Arc<Self>,
        id: String,
        version: ProtocolVersion,
        client: &Client,
    ) -> Arc<HttpSession> {
        let owner = client.principal().map(str::to_owned);
        self.start(id, version, client.key(), owner, 1)
    }

    /// Starts the one-request state of a legacy POST to a stateless endpoint
    /// ([`HttpConfig::stateless`]): not registered (no later request finds it), keeping
    /// nothing ([`Sessionless`]). It ends when the caller drops its last handle, or closes it.
    pub(crate) fn start_sessionless(
        self: &Arc<Self>,
        id: String,
        version: ProtocolVersion,
        owner: Option<String>,
    ) -> Arc<HttpSession> {
        self.launch(id, version, None, owner, 1, true)
    }

    /// Starts serving here a session another instance made (not counted against the
    /// client's session caps here: it is not a new session). Its requests to the client are
    /// numbered from `first_id`.
    pub(crate) fn start_replica(
        self: &Arc<Self>,
        id: String,
        version: ProtocolVersion,
        owner: Option<String>,
        first_id: i64,
    ) -> Arc<HttpSession> {
        self.start(id, version, None, owner, first_id)
    }

    /// Starts a session on the endpoint's backend, and registers it.
    fn start(
        self: &Arc<Self>,
        id: String,
        version: ProtocolVersion,
        client: Option<String>,
        owner: Option<String>,
        first_id: i64,
    ) -> Arc<HttpSession> {
        let session = self.launch(id, version, client, owner, first_id, false);
        self.sessions().insert(session.id.clone(), session.clone());
        session
    }

    /// Starts a session's engine and its routing (not registered). A `sessionless` one keeps
    /// nothing ([`Sessionless`]), and its handler state is the engine connection's own
    /// (dropped with it); any other is on the endpoint's backend, its handler state named
    /// by its id.
    fn launch(
        self: &Arc<Self>,
        id: String,
        version: ProtocolVersion,
        client: Option<String>,
        owner: Option<String>,
        first_id: i64,
        sessionless: bool,
    ) -> Arc<HttpSession> {
        let backend: Arc<dyn SessionBackend> = if sessionless {
            Arc::new(Sessionless)
        } else {
            self.backend().clone()
        };
        let session = HttpSession::new(
            id,
            version,
            backend,
            client,
            owner,
            first_id,
            Arc::downgrade(self),
        );
        self.connect(&session, sessionless);
        session
    }

    /// Starts an engine connection for `session` (new, or parked until now: its service
    /// then takes up the state it kept) and the routing of its output.
    pub(crate) fn connect(self: &Arc<Self>, session: &Arc<HttpSession>, sessionless: bool) {
        let (in_tx, in_rx) = mpsc::channel(64);
        let (out_tx, mut out_rx) = mpsc::channel(1024);
        let direct = oxmcp_engine::DirectSlot::new();
        let name = (!sessionless).then(|| session.id.clone());
        let parks = !sessionless && self.config.park_idle_after.is_some() && session.parks();
        let mut config = self.engine.clone();
        config.first_request_id = session.first_request_id();
        session.attach(in_tx, direct.clone());
        let serving = self.service.serve(Connection {
            incoming: in_rx,
            outgoing: out_tx,
            config,
            principal: session.owner.clone(),
            direct: Some(direct),
            session: name,
            parking: parks.then(|| session.park.clone()),
        });
        let (ended, id, slot) = (
            Arc::downgrade(self),
            session.id.clone(),
            session.park.clone(),
        );
        tokio::spawn(async move {
            serving.await;
            // Parked: the session waits for its next message, with no engine running.
            if slot.settle() {
                return;
            }
            // Ended by DELETE or expiry (already removed), or closed for not reading: gone.
            if let Some(inner) = ended.upgrade() {
                inner.remove(&id);
            }
        });
        let weak = Arc::downgrade(session);
        // Routing never waits on a client (slow streams are detached and resume from the
        // store), so this queue is always drained and never holds up a broadcast. A message
        // is routed in a future of its own (boxed): the task of an idle session then holds
        // only what waiting for the next message needs (768 bytes a session before, in the
        // heap profile of session_heap.rs).
        tokio::spawn(async move {
            while let Some(out) = out_rx.recv().await {
                match weak.upgrade() {
                    Some(s) => Box::pin(s.route(out)).await,
                    None => return,
                }
            }
        });
    }
}

/// A Streamable HTTP endpoint hosting one service (an `oxmcp_server::Server`, a gateway, any
/// [`Serve`]). Cheap to clone.
#[derive(Clone)]
pub struct StreamableHttp {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for StreamableHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamableHttp")
            .field("path", &self.inner.config.path)
            .finish_non_exhaustive()
    }
}

impl StreamableHttp {
    /// An endpoint for `service`, keeping SSE events in memory within the configured caps
    /// (a [`MemoryEventLog`]).
    ///
    /// 2026-07-28 `Mcp-Param-{Name}` headers are checked against the tool arguments they
    /// mirror once [`StreamableHttp::with_param_headers`] says which tools have them.
    pub fn new(service: impl Serve, config: HttpConfig) -> Self {
        let log = Arc::new(
            MemoryEventLog::new(config.event_log_limit)
                .with_byte_limits(config.event_log_session_bytes, config.event_log_total_bytes),
        );
        Self::with_event_log(service, config, log)
    }

    /// An endpoint keeping SSE events in `log` (for resumption on this instance) instead of
    /// in memory. Sessions and their streams still live in this instance only; with
    /// [`StreamableHttp::with_store`] the store's own log is used instead.
    pub fn with_event_log(service: impl Serve, config: HttpConfig, log: Arc<dyn EventLog>) -> Self {
        Self {
            inner: Arc::new(Inner {
                engine: config.engine(service.engine_config()),
                service: Arc::new(service),
                param_headers: std::sync::OnceLock::new(),
                log,
                sessions: Mutex::new(HashMap::new()),
                clients: ClientTable::default(),
                stateless: Arc::new(Semaphore::new(config.max_stateless_requests.max(1))),
                listens: Arc::new(Semaphore::new(config.max_listen_streams.max(1))),
                backend: std::sync::OnceLock::new(),
                config: Arc::new(config),
            }),
        }
    }

    /// Says which tools mirror arguments into `Mcp-Param-{Name}` headers (for an
    /// `oxmcp_server::Server`: `move |name| server.tool(name).map(|t| t.header_params())
    /// .unwrap_or_default()`), so that 2026-07-28 requests whose headers disagree with
    /// their arguments are refused (400, -32020). Set once; later calls change nothing.
    pub fn with_param_headers(
        self,
        lookup: impl Fn(&str) -> Vec<(String, String)> + Send + Sync + 'static,
    ) -> Self {
        let _ = self.inner.param_headers.set(Arc::new(lookup));
        self
    }

    /// Serves sessions together with the other instances that share `store`: any instance
    /// takes any request of any session, a client resumes a stream on any instance, and the
    /// answer to a request to the client reaches the instance waiting for it. Sessions are
    /// kept in the store from then on (set it before serving; later calls, and calls once
    /// the endpoint has served, change nothing).
    pub fn with_store(self, store: Arc<dyn oxmcp_store::Store>) -> Self {
        let c = store.config();
        let shared = Shared::new(store.clone(), c.max_waiting, c.op_timeout);
        let _ = self.inner.backend.set(Arc::new(ScaleOut::new(shared)));
        self
    }

    /// The settings.
    pub fn config(&self) -> &HttpConfig {
        &self.inner.config
    }

    /// Open sessions.
    pub fn session_count(&self) -> usize {
        self.inner.sessions().len()
    }

    /// Open sessions whose engine connection is parked for now
    /// ([`HttpConfig::park_idle_after`]).
    pub fn parked_count(&self) -> usize {
        self.all_sessions().iter().filter(|s| s.is_parked()).count()
    }

    /// SSE streams with a client attached, over all sessions.
    pub fn stream_count(&self) -> usize {
        self.all_sessions()
            .iter()
            .map(|s| s.attached_streams())
            .sum()
    }

    /// Streams the sessions keep (attached, waiting for an answer, or finished and kept for a
    /// late resumption), over all sessions.
    pub fn tracked_streams(&self) -> usize {
        self.all_sessions()
            .iter()
            .map(|s| s.tracked_streams())
            .sum()
    }

    /// Sessionless requests being answered now (2026-07-28 ones, and with
    /// [`HttpConfig::stateless`] legacy ones too).
    pub fn stateless_in_flight(&self) -> usize {
        self.inner.config.max_stateless_requests.max(1) - self.inner.stateless.available_permits()
    }

    fn all_sessions(&self) -> Vec<Arc<HttpSession>> {
        self.inner.sessions().values().cloned().collect()
    }

    /// The axum router serving the endpoint at `config.path`. Must be called inside a tokio
    /// runtime (it starts the session reaper).
    pub fn router(&self) -> axum::Router {
        tokio::spawn(reap(Arc::downgrade(&self.inner)));
        self.inner.backend().start(&self.inner);
        let weak = Arc::downgrade(&self.inner);
        let shutdown = self.inner.config.shutdown.clone();
        tokio::spawn(async move {
            shutdown.cancelled().await;
            // Standalone streams would never end by themselves; POST streams end with their
            // last response, so in-flight requests are still answered.
            if let Some(inner) = weak.upgrade() {
                let sessions: Vec<Arc<HttpSession>> = inner.sessions().values().cloned().collect();
                for s in sessions {
                    s.end_standalone();
                }
            }
        });
        let endpoint = axum::Router::new()
            .route(
                &self.inner.config.path,
                post(crate::server::post::handle_post)
                    .get(crate::server::get::handle_get)
                    .delete(crate::server::get::handle_delete),
            )
            .with_state(self.inner.clone());
        match &self.inner.config.auth {
            Some(auth) => {
                endpoint.merge(crate::auth::metadata_router(auth, &self.inner.config.path))
            }
            None => endpoint,
        }
    }

    /// Serves on `listener` until the future is dropped (TCP_NODELAY on every connection).
    ///
    /// # Errors
    /// I/O errors of the listener.
    pub async fn serve(&self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        crate::serve_router(listener, self.router()).await
    }
}

/// Closes sessions idle for the idle timeout, and sessions whose handshake did not finish
/// within the initialize timeout.
async fn reap(inner: Weak<Inner>) {
    let (idle, init, park) = match inner.upgrade() {
        Some(i) => (
            i.config.session_idle_timeout,
            i.config.session_init_timeout,
            i.config.park_idle_after,
        ),
        None => return,
    };
    let shortest = idle.min(init).min(park.unwrap_or(Duration::MAX));
    let period = (shortest / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
    loop {
        tokio::time::sleep(period).await;
        let Some(inner) = inner.upgrade() else { return };
        let now = Instant::now();
        let expired: Vec<String> = inner
            .sessions()
            .iter()
            .filter(|(_, s)| {
                let stalled = !s.is_initialized() && now.duration_since(s.created) >= init;
                stalled
                    || s.idle_since()
                        .is_some_and(|t| now.duration_since(t) >= idle)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            tracing::debug!(session = %id, "session expired");
            inner.remove(&id);
        }
        if let Some(after) = park {
            park_idle(&inner, now, after);
        }
        inner.clients.prune_idle(&inner.config);
    }
}

/// Parks the engine connections of sessions idle for `after` (see [`HttpSession::park`]).
fn park_idle(inner: &Inner, now: Instant, after: Duration) {
    let idle: Vec<Arc<HttpSession>> = inner
        .sessions()
        .values()
        .filter(|s| {
            s.is_initialized()
                && s.parks()
                && !s.is_parked()
                && s.idle_since()
                    .is_some_and(|t| now.duration_since(t) >= after)
        })
        .cloned()
        .collect();
    for session in idle {
        if session.park(after) {
            tracing::trace!(session = %session.id, "idle session parked");
        }
    }
}
