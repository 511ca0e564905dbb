//! One connection's state (lifecycle, negotiated version, log level, subscriptions) and the
//! routing of its requests: the era and the lifecycle (`service`), the method table
//! (`dispatch`) and each family of methods in its own module.

mod dispatch;
mod fit;
mod lifecycle;
mod prompts;
mod reply;
mod resources;
mod service;
mod tasks;
mod tools;

use std::collections::HashSet;
use std::sync::Arc;

use parking_lot::Mutex;

#[cfg(feature = "metrics")]
pub(crate) use dispatch::Noting;
pub(crate) use dispatch::Tail;
pub(crate) use service::SessionService;

use oxmcp_jsonrpc::ErrorObject;
use oxmcp_types::{ClientCapabilities, Implementation, LoggingLevel, ProtocolVersion};

use crate::state::ServerState;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Nothing but `initialize` and `ping` yet.
    New,
    /// `initialize` answered; waiting for `notifications/initialized` (requests are accepted).
    Initializing,
    /// Fully up.
    Ready,
}

#[derive(Debug)]
struct State {
    phase: Phase,
    version: ProtocolVersion,
    client_info: Option<Implementation>,
    client_caps: ClientCapabilities,
    log_level: LoggingLevel,
    subscriptions: HashSet<String>,
    /// The client's roots as last read, until it says they changed.
    roots: Option<Vec<oxmcp_types::Root>>,
}

/// One client connection.
pub(crate) struct Session {
    pub(crate) server: Arc<ServerState>,
    /// Who the transport says the client is, if it verified that.
    pub(crate) principal: Option<String>,
    state: Mutex<State>,
    /// The name of this session's handler state: the transport's (Streamable HTTP's
    /// `Mcp-Session-Id`), or one made on first use; `None` for a self-contained request,
    /// which has no session.
    state_key: Option<std::sync::OnceLock<String>>,
    /// The transport's name for the session, if it has one.
    transport_session: Option<String>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("state", &*self.lock())
            .finish_non_exhaustive()
    }
}

impl Session {
    pub(crate) fn new(server: Arc<ServerState>) -> Self {
        Self {
            principal: None,
            state_key: None,
            transport_session: None,
            server,
            state: Mutex::new(State {
                phase: Phase::New,
                version: ProtocolVersion::LATEST_LEGACY,
                client_info: None,
                client_caps: ClientCapabilities::default(),
                log_level: LoggingLevel::Info,
                subscriptions: HashSet::new(),
                roots: None,
            }),
        }
    }

    pub(crate) fn with_principal(mut self, principal: Option<String>) -> Self {
        self.principal = principal;
        self
    }

    /// Gives the session a scope of handler state, named `name` by the transport or, when
    /// the transport names none, by a random name made on first use.
    pub(crate) fn with_state(mut self, name: Option<String>) -> Self {
        self.state_key = Some(std::sync::OnceLock::new());
        self.transport_session = name;
        self
    }

    /// The transport's name for the session (Streamable HTTP's `Mcp-Session-Id`), if any.
    pub(crate) fn transport_session(&self) -> Option<&str> {
        self.transport_session.as_deref()
    }

    /// The name of this session's handler state (`None`: a request without a session).
    pub(crate) fn state_name(&self) -> Option<&str> {
        let key = self.state_key.as_ref()?;
        Some(key.get_or_init(|| {
            // Unique beyond this process too: a shared store may hold it.
            self.transport_session.clone().unwrap_or_else(unique_name)
        }))
    }

    /// The session's handler state was used and the session is over: tell the backend. A
    /// state named here (a connection's: stdio, WebSocket, gRPC) cannot be served by another
    /// instance, so it is deleted now from a shared store too.
    pub(crate) fn end_state(&self) {
        let Some(name) = self.state_key.as_ref().and_then(|k| k.get()) else {
            return;
        };
        let store = self.server.features.state.store.clone();
        store.session_ended(name);
        if self.transport_session.is_none()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let scope = oxmcp_store::state::StateScope::Session(name.clone());
            runtime.spawn(async move {
                if let Err(e) = store.clear(&scope).await {
                    tracing::debug!("a closed connection's state is left to expire: {e}");
                }
            });
        }
    }

    fn lock(&self) -> parking_lot::MutexGuard<'_, State> {
        self.state.lock()
    }

    pub(crate) fn version(&self) -> ProtocolVersion {
        self.lock().version
    }

    pub(crate) fn client_info(&self) -> Option<Implementation> {
        self.lock().client_info.clone()
    }

    pub(crate) fn client_capabilities(&self) -> ClientCapabilities {
        self.lock().client_caps.clone()
    }

    pub(crate) fn logging_on(&self) -> bool {
        self.server.about.logging
    }

    pub(crate) fn log_enabled(&self, level: LoggingLevel) -> bool {
        self.server.about.logging && level >= self.lock().log_level
    }

    pub(crate) fn is_ready(&self) -> bool {
        self.lock().phase != Phase::New
    }

    /// The roots as last read, if they have not changed since.
    pub(crate) fn cached_roots(&self) -> Option<Vec<oxmcp_types::Root>> {
        self.lock().roots.clone()
    }

    /// Keeps `roots` as the session's current roots.
    pub(crate) fn cache_roots(&self, roots: Vec<oxmcp_types::Root>) {
        self.lock().roots = Some(roots);
    }

    pub(crate) fn is_subscribed(&self, uri: &str) -> bool {
        self.lock().subscriptions.contains(uri)
    }

    /// `resources/subscribe`: holds `uri` unless the session is at its limit or the
    /// `on_subscribe` hook refuses (a URI held already is not held twice).
    fn subscribe(&self, uri: String) -> Result<(), ErrorObject> {
        let mut st = self.lock();
        if st.subscriptions.contains(&uri) {
            return Ok(());
        }
        let limit = self.server.about.config.max_subscriptions;
        if st.subscriptions.len() >= limit {
            return Err(too_many_subscriptions(limit));
        }
        if let Some(hook) = &self.server.hooks.on_subscribe {
            hook(self.principal.as_deref(), &uri)?;
        }
        st.subscriptions.insert(uri);
        Ok(())
    }

    /// `resources/unsubscribe`.
    fn unsubscribe(&self, uri: &str) {
        let mut st = self.lock();
        if st.subscriptions.remove(uri)
            && let Some(hook) = &self.server.hooks.on_unsubscribe
        {
            hook(self.principal.as_deref(), uri);
        }
    }

    /// Drops every subscription the session holds, telling `on_unsubscribe` of each.
    pub(crate) fn release_subscriptions(&self) {
        let held = std::mem::take(&mut self.lock().subscriptions);
        if let Some(hook) = &self.server.hooks.on_unsubscribe {
            for uri in &held {
                hook(self.principal.as_deref(), uri);
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Normally released when the connection ends already; this covers a dropped serve.
        self.release_subscriptions();
    }
}

/// A name no other session has, here or at another instance: 128 random bits (or, should the
/// OS have no randomness to give, the process, the time and a counter).
fn unique_name() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_ok() {
        return bytes.iter().map(|b| format!("{b:02x}")).collect();
    }
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{t}-{n}", std::process::id())
}

/// -32602 for one subscription too many.
pub(crate) fn too_many_subscriptions(limit: usize) -> ErrorObject {
    ErrorObject::invalid_params(format!("Too many subscriptions: at most {limit} at once"))
        .with_data(serde_json::json!({ "limit": limit }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::{Arc, Mutex};

    use serde_json::{Value, json};
    use tokio::sync::mpsc;

    use crate::{Server, ServerConfig};

    /// Serves `lines` on one connection that then ends; returns the answers by id.
    async fn serve(server: &Server, lines: &[Value]) -> Vec<Value> {
        let (in_tx, in_rx) = mpsc::channel(64);
        let (out_tx, mut out_rx) = mpsc::channel(64);
        for l in lines {
            in_tx.send(l.to_string().into_bytes().into()).await.unwrap();
        }
        drop(in_tx);
        server.serve(in_rx, out_tx).await;
        let mut out = Vec::new();
        while let Ok(o) = out_rx.try_recv() {
            if let Some(line) = o.line() {
                out.push(serde_json::from_str(line).unwrap());
            }
        }
        out
    }

    fn req(id: i64, method: &str, params: Value) -> Value {
        json!({"jsonrpc":"2.0","id":id,"method":method,"params":params})
    }

    #[tokio::test]
    async fn subscribe_hooks_pair_up_and_the_end_of_a_connection_releases() {
        let log = Arc::new(Mutex::new(Vec::<String>::new()));
        let (sub, unsub) = (log.clone(), log.clone());
        let server = Server::builder("t", "0")
            .declare_resources()
            .config(ServerConfig::default().max_subscriptions(2))
            .on_subscribe(move |_, uri| {
                if uri == "x://refused" {
                    return Err(oxmcp_jsonrpc::ErrorObject::invalid_params("no"));
                }
                sub.lock().unwrap().push(format!("+{uri}"));
                Ok(())
            })
            .on_unsubscribe(move |_, uri| unsub.lock().unwrap().push(format!("-{uri}")))
            .build()
            .unwrap();
        let uri = |u: &str| json!({ "uri": u });
        let out = serve(
            &server,
            &[
                req(0, "initialize", json!({"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}})),
                json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
                req(1, "resources/subscribe", uri("x://a")),
                req(2, "resources/subscribe", uri("x://a")),
                req(3, "resources/subscribe", uri("x://refused")),
                req(4, "resources/subscribe", uri("x://b")),
                req(5, "resources/subscribe", uri("x://c")),
                req(6, "resources/unsubscribe", uri("x://a")),
                req(7, "resources/unsubscribe", uri("x://refused")),
                req(8, "resources/subscribe", uri("x://c")),
            ],
        )
        .await;
        let answer = |id: i64| out.iter().find(|m| m["id"] == id).unwrap().clone();
        assert_eq!(answer(2)["result"], json!({}));
        assert_eq!(answer(3)["error"]["code"], -32602);
        assert_eq!(answer(5)["error"]["code"], -32602, "over the limit of 2");
        assert_eq!(answer(5)["error"]["data"]["limit"], 2);
        assert_eq!(answer(8)["result"], json!({}));
        // Held twice, refused, over the limit and not held: no hook; the rest once each, and
        // what was held when the connection ended is released.
        // Held twice, refused, over the limit or not held: no hook; the rest once each (in
        // order: requests are routed as they come), then what was held when the connection
        // ended is released.
        let mut log = log.lock().unwrap().clone();
        let mut end = log.split_off(4);
        assert_eq!(log, ["+x://a", "+x://b", "-x://a", "+x://c"]);
        end.sort();
        assert_eq!(end, ["-x://b", "-x://c"]);
    }

    /// Served by the server alone (stdio, say), a 2026-07-28 request's params are read once
    /// for its era, context and multi round-trip state, and a legacy one's not at all.
    #[tokio::test(flavor = "current_thread")]
    async fn a_modern_request_is_read_once_and_a_legacy_one_not_at_all() {
        use oxmcp_types::request_meta::parses_on_this_thread;
        #[derive(serde::Deserialize, schemars::JsonSchema)]
        struct NoArgs {}
        let server = Server::builder("t", "0")
            .tool(
                "meta",
                "echoes a _meta member",
                |ctx: crate::Ctx, _a: NoArgs| async move {
                    Ok::<_, String>(ctx.meta().map(|m| m["x"].to_string()).unwrap_or_default())
                },
            )
            .build()
            .unwrap();
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "x": 7
        });
        let call = json!({"_meta": meta, "name": "meta", "arguments": {}});
        let before = parses_on_this_thread();
        let out = serve(&server, &[req(1, "tools/call", call)]).await;
        assert_eq!(out[0]["result"]["content"][0]["text"], "7", "{out:?}");
        assert_eq!(parses_on_this_thread() - before, 1);

        let legacy = json!({"_meta": {"x": 8}, "name": "meta", "arguments": {}});
        let before = parses_on_this_thread();
        let out = serve(
            &server,
            &[
                req(0, "initialize", json!({"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}})),
                req(1, "tools/call", legacy),
            ],
        )
        .await;
        let answer = out.iter().find(|m| m["id"] == 1).unwrap();
        assert_eq!(answer["result"]["content"][0]["text"], "8", "{answer}");
        assert_eq!(parses_on_this_thread() - before, 0);
    }
}
