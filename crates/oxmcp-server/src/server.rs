//! [`Server`]: serving what was built on any number of connections, and telling them of
//! changes.

use std::sync::{Arc, Weak};

use oxmcp_engine::{EngineConfig, Peer};
use oxmcp_types::methods::{
    LoggingMessage, Notification as _, PromptListChanged, ResourceListChanged, ResourceUpdated,
    ToolListChanged,
};
use oxmcp_types::{JsonObject, Prompt, ServerCapabilities, Tool};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::builder::{BuildError, ServerBuilder};
use crate::config::ServerConfig;
use crate::handler::{PromptFn, ToolFn};
use crate::registry::{Declared, Edit};
use crate::session::{Session, SessionService};
use crate::state::{Change, ServerState};

/// A built server: serve it on any number of connections. Cheap to clone.
#[derive(Clone)]
pub struct Server {
    pub(crate) state: Arc<ServerState>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("info", &self.state.about.info)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Starts a builder.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder::new(name, version)
    }

    /// The capabilities this server declares.
    pub fn capabilities(&self) -> ServerCapabilities {
        self.state.capabilities()
    }

    /// The settings.
    pub fn config(&self) -> &ServerConfig {
        &self.state.about.config
    }

    /// What its tasks are doing (`None`: this server runs no tasks).
    pub fn task_counts(&self) -> Option<crate::tasks::TaskCounts> {
        self.state.features.tasks.as_ref().map(|t| t.counts())
    }

    /// Serves one connection given its channels (an in-memory duplex, stdio) with the
    /// server's message-loop settings and nobody verified; returns when the input ends and
    /// every accepted request has been answered. Transports host a server through
    /// [`oxmcp_engine::Serve`] instead, which also carries their settings and the
    /// [`oxmcp_engine::Connection::principal`] they verified.
    pub async fn serve(
        &self,
        incoming: mpsc::Receiver<oxmcp_jsonrpc::Inbound>,
        outgoing: mpsc::Sender<oxmcp_jsonrpc::Outbound>,
    ) {
        let connection = oxmcp_engine::Connection {
            incoming,
            outgoing,
            config: self.state.about.config.engine.clone(),
            principal: None,
            direct: None,
            parking: None,
            session: None,
        };
        self.run(connection, true).await;
    }

    /// Serves `connection` with its message-loop settings (HTTP sessions answer "busy"
    /// instead of applying backpressure), for a sender the transport may have verified
    /// (`principal`, e.g. the issuer-qualified subject of a bearer token,
    /// [`oxmcp_engine::Identity::principal`]; `None`: nobody verified): handlers see it
    /// ([`crate::Ctx::principal`]), and the `requestState` of a multi round-trip request is
    /// bound to it, so that nobody else can continue the request.
    ///
    /// A `listed` connection is one of the server's live sessions while it lasts (broadcasts
    /// reach it, [`Server::session_count`] counts it). One that carries a single
    /// self-contained request ([`oxmcp_engine::Serve::serve_request`]) is not: a 2026-07-28
    /// request gets no broadcast (list changes reach it through `subscriptions/listen`, log
    /// messages only from its own handler), so it takes no lock shared by every request.
    ///
    /// The connection is set up here, when called (a future dropped before it ends drops its
    /// session, whose subscriptions are released then); the future holds only what its end
    /// needs beside the engine's loop, which keeps an idle session small.
    fn run(
        &self,
        connection: oxmcp_engine::Connection,
        listed: bool,
    ) -> impl Future<Output = ()> + Send + 'static {
        let oxmcp_engine::Connection {
            incoming,
            outgoing,
            config: engine,
            principal,
            direct,
            session: name,
            parking,
        } = connection;
        let peer = Peer::with_config(outgoing, &engine);
        // A session the transport parks (HTTP, while idle) keeps its state between
        // connections: the next one takes up what the parked one kept.
        let parking = parking.filter(|_| listed && name.is_some());
        let resumed = parking
            .as_ref()
            // (It keeps one handle on the peer beyond the engine's: in its list of sessions.)
            .and_then(|slot| slot.offer(1))
            .and_then(|state| state.downcast::<ParkedSession>().ok())
            .and_then(|mut parked| parked.0.take());
        let session = resumed.unwrap_or_else(|| {
            let mut session = Session::new(self.state.clone()).with_principal(principal);
            if listed {
                session = session.with_state(name);
            }
            Arc::new(session)
        });
        let weak = Arc::downgrade(&session);
        if listed {
            let mut sessions = self.lock_sessions();
            sessions.retain(|(s, p)| s.strong_count() > 0 && !p.is_closed());
            sessions.push((weak.clone(), peer.clone()));
        }
        let service = Arc::new(SessionService(session.clone()));
        let server = self.clone();
        // `map`, not an `async` block: one that awaits the loop holds it twice (the local and
        // the awaited copy), 880 bytes a session in the heap profile of session_heap.rs.
        let engine = oxmcp_engine::run_with(peer, incoming, service, engine, direct);
        futures::FutureExt::map(engine, move |()| {
            let parked = ParkedSession(Some(session));
            match parking.filter(|slot| slot.parking()) {
                // Parked: the session lives on, its subscriptions and handler state too.
                Some(slot) => drop(slot.keep(Box::new(parked))),
                // The connection is over: so are its subscriptions (`on_unsubscribe` hears
                // of each), and its handler state where it lives in this process only.
                None => drop(parked),
            }
            if listed {
                // Forget the connection so its outgoing queue closes and the transport can
                // finish.
                server
                    .lock_sessions()
                    .retain(|(s, _)| !s.ptr_eq(&weak) && s.strong_count() > 0);
            }
        })
    }

    fn lock_sessions(&self) -> parking_lot::MutexGuard<'_, Vec<(Weak<Session>, Peer)>> {
        self.state.live.sessions.lock()
    }

    fn live_sessions(&self) -> Vec<(Arc<Session>, Peer)> {
        self.lock_sessions()
            .iter()
            .filter_map(|(s, p)| {
                s.upgrade()
                    .filter(|_| !p.is_closed())
                    .map(|s| (s, p.clone()))
            })
            .collect()
    }

    /// Number of connections being served: legacy sessions and connection transports (a
    /// 2026-07-28 request served on its own, [`oxmcp_engine::Serve::serve_request`], is not
    /// one). A session whose transport parked its connection while idle
    /// ([`oxmcp_engine::ParkSlot`]) is not counted until the transport starts one again
    /// (its next request, or a GET stream).
    pub fn session_count(&self) -> usize {
        self.live_sessions().len()
    }

    /// Tells this instance's clients of `change`: `subscriptions/listen` streams that want
    /// it, and legacy sessions (all of them for a list change, the subscribed ones for a
    /// resource update).
    fn deliver_change(&self, change: &Change) {
        // No listener is fine: nobody has subscribed.
        let _ = self.state.live.changes.send(change.clone());
        let (method, uri) = match change {
            Change::Tools => (ToolListChanged::METHOD, None),
            Change::Prompts => (PromptListChanged::METHOD, None),
            Change::Resources => (ResourceListChanged::METHOD, None),
            Change::ResourceUpdated(uri) => (ResourceUpdated::METHOD, Some(uri.as_str())),
        };
        for (session, peer) in self.live_sessions() {
            match uri {
                None if session.is_ready() => deliver(&peer, method, &serde_json::json!({})),
                Some(uri) if session.is_subscribed(uri) => {
                    deliver(&peer, method, &serde_json::json!({ "uri": uri }));
                }
                _ => {}
            }
        }
    }

    /// A change made here: this instance's clients hear of it, and so does the
    /// [`Server::on_change`] hook.
    fn announce(&self, change: Change) {
        if let Some(hook) = self.state.hooks.on_change.get() {
            hook(&change);
        }
        self.deliver_change(&change);
    }

    /// Calls `hook` with every change made on this instance (a tool added, a resource
    /// updated...), so that the other instances of a scaled-out server can be told
    /// ([`Server::apply_change`]). Set once; later calls change nothing.
    pub fn on_change(&self, hook: impl Fn(&Change) + Send + Sync + 'static) {
        let _ = self.state.hooks.on_change.set(Arc::new(hook));
    }

    /// Tells this instance's clients of a change made on another instance (the
    /// [`Server::on_change`] hook is not called again).
    pub fn apply_change(&self, change: &Change) {
        self.deliver_change(change);
    }

    /// Tells every client that a list changed, without waiting (see `deliver`).
    fn broadcast(&self, method: &str) {
        match method {
            ToolListChanged::METHOD => self.announce(Change::Tools),
            PromptListChanged::METHOD => self.announce(Change::Prompts),
            ResourceListChanged::METHOD => self.announce(Change::Resources),
            _ => {}
        }
    }

    /// Changes what is registered in one step, then tells every client once per kind that
    /// changed (`notifications/*/list_changed`), however many items `f` added or removed.
    ///
    /// Never waits for a client: the notifications are queued on each connection (a client
    /// that stopped reading is disconnected by its stall timeout; nobody waits for it).
    ///
    /// A server built with a [`crate::ServerHandler`] answers from the handler, not from a
    /// registry: what is added here is never listed (a warning is logged). Its handler
    /// changes its own lists and calls [`Server::notify_tool_list_changed`] and its siblings.
    pub fn edit<R>(&self, f: impl FnOnce(&mut Edit<'_>) -> R) -> R {
        if !self.state.catalogue.answers {
            tracing::warn!(
                "Server::edit on a server built with a handler: its lists are the handler's, the edit is not seen"
            );
        }
        let (out, changed) = {
            let mut reg = self.state.catalogue.write();
            let mut edit = Edit {
                reg: &mut reg,
                changed: Declared::default(),
            };
            let out = f(&mut edit);
            (out, edit.changed)
        };
        if changed.tools {
            self.broadcast(ToolListChanged::METHOD);
        }
        if changed.prompts {
            self.broadcast(PromptListChanged::METHOD);
        }
        if changed.resources {
            self.broadcast(ResourceListChanged::METHOD);
        }
        out
    }

    /// Adds or replaces a tool at run time and tells every client (`list_changed`), without
    /// waiting for any ([`Server::edit`]).
    ///
    /// # Errors
    /// If its schema is unusable.
    pub fn add_tool(&self, tool: Tool, handler: ToolFn) -> Result<(), BuildError> {
        self.edit(|e| e.add_tool(tool, handler))
    }

    /// Removes a tool and tells every client, without waiting for any. Returns whether it
    /// existed.
    pub fn remove_tool(&self, name: &str) -> bool {
        self.edit(|e| e.remove_tool(name))
    }

    /// Adds or replaces a prompt at run time and tells every client (`list_changed`), without
    /// waiting for any.
    pub fn add_prompt(&self, prompt: Prompt, handler: PromptFn) {
        self.edit(|e| e.add_prompt(prompt, handler));
    }

    /// Removes a prompt and tells every client, without waiting for any. Returns whether it
    /// existed.
    pub fn remove_prompt(&self, name: &str) -> bool {
        self.edit(|e| e.remove_prompt(name))
    }

    /// Tells every client that the tool list changed (`notifications/tools/list_changed`,
    /// and 2026-07-28 `subscriptions/listen` streams): what a server built with a
    /// [`crate::ServerHandler`] calls when the tools it computes change.
    ///
    /// Never waits for a client: the notification is queued on each connection (a client
    /// that stopped reading is disconnected by its stall timeout; nobody waits for it).
    pub fn notify_tool_list_changed(&self) {
        self.broadcast(ToolListChanged::METHOD);
    }

    /// Tells every client that the prompt list changed, without waiting for any (see
    /// [`Server::notify_tool_list_changed`]).
    pub fn notify_prompt_list_changed(&self) {
        self.broadcast(PromptListChanged::METHOD);
    }

    /// Tells every client that the resource list changed, without waiting for any (see
    /// [`Server::notify_tool_list_changed`]).
    pub fn notify_resource_list_changed(&self) {
        self.broadcast(ResourceListChanged::METHOD);
    }

    /// Sends a log message to every legacy session whose level lets it through (2026-07-28
    /// requests get log messages only from their own handlers, through [`crate::Ctx::log`]).
    ///
    /// Never waits for a client: the message is queued on each connection (a client that
    /// stopped reading is disconnected by its stall timeout; nobody waits for it).
    pub fn log(&self, level: oxmcp_types::LoggingLevel, logger: Option<&str>, data: Value) {
        let params = oxmcp_types::LoggingMessageParams {
            level,
            logger: logger.map(str::to_owned),
            data,
            meta: None,
            extra: JsonObject::new(),
        };
        for (session, peer) in self.live_sessions() {
            if session.is_ready() && session.log_enabled(level) {
                deliver(&peer, LoggingMessage::METHOD, &params);
            }
        }
    }

    /// Tells the clients subscribed to `uri` that it changed, without waiting for any (see
    /// [`Server::notify_tool_list_changed`]).
    pub fn notify_resource_updated(&self, uri: &str) {
        self.announce(Change::ResourceUpdated(uri.to_owned()));
    }

    /// The definition of the registered tool `name`; for a server built with a handler, what
    /// its [`crate::ServerHandler::peek_tool`] says (transports read it, without a request,
    /// to check a 2026-07-28 call's `Mcp-Param-*` headers).
    pub fn tool(&self, name: &str) -> Option<Tool> {
        crate::ServerHandler::peek_tool(self, name)
    }

    /// Registered tool names, in `tools/list` order (none for a server built with a
    /// handler: its lists depend on the request).
    pub fn tool_names(&self) -> Vec<String> {
        self.state.catalogue.read().tools.keys().cloned().collect()
    }
}

/// A session whose connection was parked ([`oxmcp_engine::ParkSlot`]): dropped while
/// parked (the session expired, or was deleted), it ends as a connection that ends does.
struct ParkedSession(Option<Arc<Session>>);

impl Drop for ParkedSession {
    fn drop(&mut self) {
        if let Some(session) = self.0.take() {
            session.release_subscriptions();
            session.end_state();
        }
    }
}

/// Sends one connection its copy of a server-wide notification without waiting: a client
/// whose queue stays full (it stopped reading) is disconnected by its stall timeout, and
/// nobody else ever waits for it.
fn deliver<P: serde::Serialize + ?Sized>(peer: &Peer, method: &str, params: &P) {
    match peer.notify_queued(method, params) {
        Ok(()) | Err(oxmcp_engine::CallError::Closed) => {}
        // Debug: a stuck client must not multiply the server's own log lines.
        Err(e) => tracing::debug!("a client missed {method}: {e}"),
    }
}

/// How transports host a server: each connection is served with the settings and the
/// principal the transport gives it.
impl oxmcp_engine::Serve for Server {
    fn engine_config(&self) -> EngineConfig {
        self.state.about.config.engine.clone()
    }

    fn serve(
        &self,
        connection: oxmcp_engine::Connection,
    ) -> futures::future::BoxFuture<'static, ()> {
        Box::pin(self.run(connection, true))
    }

    fn serve_request(
        &self,
        connection: oxmcp_engine::Connection,
    ) -> futures::future::BoxFuture<'static, ()> {
        Box::pin(self.run(connection, false))
    }
}
