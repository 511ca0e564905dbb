//! The inspector's client: connected through the CLI's usual path with every message of the
//! transport recorded on the way ([`tap`]), its server-to-client requests put to the person at
//! the page, and its notifications shown there.

use std::collections::BTreeSet;
use std::sync::Arc;

use oxmcp_client::{ClientHandlers, ServerEvent};
use oxmcp_jsonrpc::{ErrorObject, Inbound, Outbound};
use oxmcp_transport::Channels;
use oxmcp_types::{CreateMessageResult, ElicitResult, ListRootsResult, ListenFilter, LoggingLevel};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::hub::Hub;
use crate::auth::Auth;
use crate::target::{self, Target};

/// Messages waiting between the transport and the client, each way.
const TAP_DEPTH: usize = 256;

/// What a connection needs besides the hub: where to and how.
pub(crate) struct Reach {
    pub(crate) target: Target,
    pub(crate) auth: Auth,
}

/// Connects (again), replacing the client the pages use; the error is shown on the pages too.
pub(crate) async fn connect(hub: &Arc<Hub>, reach: &Reach, listening: &Listening) {
    let generation = hub.new_generation();
    hub.emit(&json!({"ev": "connecting", "target": hub.target}));
    let handlers = handlers(hub);
    let tapped = {
        let hub = hub.clone();
        move |channels| tap(channels, hub, generation)
    };
    match target::connect_via(&reach.target, &reach.auth, handlers, tapped).await {
        Ok(conn) => {
            let modern = conn.client.is_modern();
            // An inspector shows every log message: a 2026-07-28 server sends none to a
            // request that does not ask for a level.
            let mut level = Value::Null;
            if conn.client.server_capabilities().logging.is_some()
                && conn.client.set_log_level(LoggingLevel::Debug).await.is_ok()
            {
                level = json!("debug");
            }
            hub.set_client(Ok(conn.client)).await;
            listening.restart(hub).await;
            hub.emit(&json!({"ev": "connected", "modern": modern, "logLevel": level}));
        }
        Err(e) => fail(hub, format!("{e:#}")).await,
    }
}

async fn fail(hub: &Arc<Hub>, why: String) {
    tracing::warn!("inspector: {why}");
    hub.set_client(Err(why.clone())).await;
    hub.emit(&json!({"ev": "disconnected", "error": why}));
}

/// Passes the transport's channels through, recording each message on the hub. The end of
/// the input is shown as a disconnection while this is the current connection (`generation`).
fn tap(channels: Channels, hub: Arc<Hub>, generation: u64) -> Channels {
    let Channels {
        mut incoming,
        outgoing,
    } = channels;
    let (in_tx, in_rx) = mpsc::channel::<Inbound>(TAP_DEPTH);
    let (out_tx, mut out_rx) = mpsc::channel::<Outbound>(TAP_DEPTH);
    let seen = hub.clone();
    tokio::spawn(async move {
        while let Some(m) = incoming.recv().await {
            match &m {
                Inbound::Frame(bytes) => seen.record("in", &String::from_utf8_lossy(bytes)),
                Inbound::Message(decoded) => seen.record("in", &decoded.message.encode()),
                Inbound::Failed(failure) => seen.emit(&json!({
                    "ev": "transport_error", "id": failure.id.to_value(),
                    "error": failure.error.to_string(),
                })),
            }
            if in_tx.send(m).await.is_err() {
                break;
            }
        }
        if seen.is_current(generation) {
            seen.emit(
                &json!({"ev": "disconnected", "error": "the connection to the server ended"}),
            );
        }
    });
    tokio::spawn(async move {
        while let Some(m) = out_rx.recv().await {
            if let Some(line) = m.line() {
                hub.record("out", line);
            }
            if outgoing.send(m).await.is_err() {
                break;
            }
        }
    });
    Channels {
        incoming: in_rx,
        outgoing: out_tx,
    }
}

/// Sampling, elicitation (form and URL) and roots, each answered at the page; notifications
/// shown there.
fn handlers(hub: &Arc<Hub>) -> ClientHandlers {
    let (sampler, eliciter, rooter, watcher) = (hub.clone(), hub.clone(), hub.clone(), hub.clone());
    ClientHandlers::new()
        .sampling(move |params| ask::<_, CreateMessageResult>(sampler.clone(), "sampling", params))
        .elicitation(move |params| ask::<_, ElicitResult>(eliciter.clone(), "elicitation", params))
        .url_elicitation()
        .roots(move || {
            let roots = rooter.roots();
            async move { Ok(ListRootsResult::default().with_roots(roots)) }
        })
        .on_event(move |e| watcher.emit(&event(&e)))
}

/// The server's request `kind` put to the person at the page; their answer read as `R`.
async fn ask<P: serde::Serialize, R: serde::de::DeserializeOwned>(
    hub: Arc<Hub>,
    kind: &'static str,
    params: P,
) -> Result<R, ErrorObject> {
    let params = serde_json::to_value(params).map_err(|e| ErrorObject::internal(e.to_string()))?;
    let answer = hub.ask(kind, params).await?;
    serde_json::from_value(answer).map_err(|e| {
        ErrorObject::invalid_params(format!("the page's answer is no {kind} result: {e}"))
    })
}

/// The page's view of a notification from the server.
fn event(e: &ServerEvent) -> Value {
    match e {
        ServerEvent::Log(p) => json!({"ev": "log", "params": p}),
        ServerEvent::ResourceUpdated(uri) => json!({"ev": "updated", "uri": uri}),
        ServerEvent::ToolsChanged => json!({"ev": "changed", "what": "tools"}),
        ServerEvent::PromptsChanged => json!({"ev": "changed", "what": "prompts"}),
        ServerEvent::ResourcesChanged => json!({"ev": "changed", "what": "resources"}),
        ServerEvent::ElicitationComplete(id) => {
            json!({"ev": "elicitation_complete", "id": id})
        }
        ServerEvent::Other { method, params } => {
            json!({"ev": "notification", "method": method, "params": params})
        }
        _ => json!({"ev": "notification", "method": "unknown"}),
    }
}

/// The resources the page subscribed to, and, with a 2026-07-28 server, the one
/// `subscriptions/listen` request that carries them and the list changes.
#[derive(Default)]
pub(crate) struct Listening {
    uris: Mutex<BTreeSet<String>>,
    task: Mutex<Option<tokio::task::AbortHandle>>,
    /// One change at a time: two at once would each start a listener and leave one behind.
    changing: tokio::sync::Mutex<()>,
}

impl Listening {
    /// Subscribes to (`on`) or unsubscribes from `uri`.
    pub(crate) async fn set(&self, hub: &Arc<Hub>, uri: &str, on: bool) -> Result<(), String> {
        let _one = self.changing.lock().await;
        let client = hub.client().await.ok_or("not connected")?;
        if !client.is_modern() {
            let done = if on {
                client.subscribe(uri).await
            } else {
                client.unsubscribe(uri).await
            };
            done.map_err(|e| e.to_string())?;
        }
        {
            let mut uris = self.uris.lock();
            if on {
                uris.insert(uri.to_owned());
            } else {
                uris.remove(uri);
            }
        }
        if client.is_modern() {
            self.start(hub).await;
        }
        Ok(())
    }

    /// With a 2026-07-28 server, (re)starts listening for list changes and the subscribed
    /// resources; with a legacy one, subscribes again after a reconnection.
    pub(crate) async fn restart(&self, hub: &Arc<Hub>) {
        let _one = self.changing.lock().await;
        self.start(hub).await;
    }

    /// [`Self::restart`], the change already held.
    async fn start(&self, hub: &Arc<Hub>) {
        if let Some(old) = self.task.lock().take() {
            old.abort();
        }
        let Some(client) = hub.client().await else {
            return;
        };
        let uris: Vec<String> = self.uris.lock().iter().cloned().collect();
        if !client.is_modern() {
            for uri in &uris {
                let _ = client.subscribe(uri).await;
            }
            return;
        }
        let caps = client.server_capabilities();
        let filter = ListenFilter::default()
            .with_tools_list_changed(caps.tools.as_ref().map(|_| true))
            .with_prompts_list_changed(caps.prompts.as_ref().map(|_| true))
            .with_resources_list_changed(caps.resources.as_ref().map(|_| true))
            .with_resource_subscriptions((!uris.is_empty()).then_some(uris));
        let mut subscription = match client.listen(filter) {
            Ok(s) => s,
            Err(e) => {
                hub.emit(&json!({"ev": "notice", "text": format!("cannot listen: {e}")}));
                return;
            }
        };
        let hub = hub.clone();
        let task = tokio::spawn(async move {
            while let Some(e) = subscription.next().await {
                hub.emit(&event(&e));
            }
        });
        *self.task.lock() = Some(task.abort_handle());
    }
}

/// The browser flow of `oxmcp login`, shown on the inspector's page: the authorization URL
/// (http or https, checked by the OAuth client) goes to the pages, which offer it as a link;
/// the redirect comes back to the loopback listener.
#[derive(Debug)]
pub(crate) struct PageAgent {
    pub(crate) browser: oxmcp_auth::client::Loopback,
    pub(crate) hub: Arc<Hub>,
}

impl oxmcp_auth::client::UserAgent for PageAgent {
    fn redirect_uri(&self) -> String {
        self.browser.redirect_uri()
    }

    fn authorize<'a>(
        &'a self,
        url: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<String, oxmcp_auth::AuthError>> {
        self.hub.emit(&json!({"ev": "authorize", "url": url}));
        self.browser.authorize(url)
    }
}
