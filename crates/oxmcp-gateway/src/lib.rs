//! An MCP gateway as a library: one MCP server in front of several upstream servers (stdio
//! commands and URLs), each supervised. Imports oxmcp-server, oxmcp-client, oxmcp-remote,
//! oxmcp-http, oxmcp-auth, oxmcp-transport, oxmcp-jsonrpc and oxmcp-types; yields a [`Server`]
//! for any transport.
//!
//! It owns the gateway's [`Config`] (the keys of `oxmcp serve --config mcp.toml`, or built in
//! code), the supervision of the upstreams, the merged lists, the forwarding and the per-request
//! connection leases. [`Gateway::builder`] starts the upstreams and builds the [`Server`]; serve
//! it on any transport (stdio, Streamable HTTP, ...) like any other, and
//! [stop](Gateway::stop) the upstreams when done. The `oxmcp` command serves it with
//! `oxmcp serve --config`; the facade re-exports it as `oxmcp::gateway` (feature `gateway`).
//!
//! ```no_run
//! use oxmcp_gateway::{Config, Gateway, Upstream};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = Config::default()
//!     .with_upstream(Upstream::command("files", ["mcp-server-files", "/srv/docs"]))
//!     .with_upstream(Upstream::url("search", "https://search.example.com/mcp"));
//! // Or read from TOML: Config::from_toml(&std::fs::read_to_string("mcp.toml")?)?
//! let gateway = Gateway::builder(config).start().await?;
//! // Tools named `files__...` and `search__...`, served over Streamable HTTP here.
//! let http = oxmcp_http::StreamableHttp::new(gateway.server().clone(), Default::default());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! oxmcp_http::serve_router(listener, http.router()).await?;
//! gateway.stop().await;
//! # Ok(())
//! # }
//! ```
//!
//! Naming: tools and prompts of upstream `NAME` appear as `NAME__TOOL` and `NAME__PROMPT`;
//! its resources and resource templates as `gateway://NAME/ORIGINAL-URI`. Calls, reads and
//! completions are routed by that prefix. Upstream names contain no `__` and do not end with
//! `_`, so the first `__` of an exposed name is where the upstream's name ends, whatever the
//! tool is called (tool names starting with `_` included): two upstreams never expose the
//! same name.
//!
//! Progress, log messages, cancellation, list changes and resource updates pass through, and
//! so do the upstream's sampling, elicitation and roots requests: a legacy client gets them as
//! server-to-client requests, a 2026-07-28 client as `input_required` rounds (the upstream
//! call runs again on the retry, with the answers). An upstream that goes down takes its items
//! out of the lists (clients get `list_changed`) until it is back.
//!
//! [`Gateway::reload`] serves a new config in place of the running one, upstream by upstream
//! (matched by name): added ones are started, removed ones stopped, changed ones restarted,
//! the others left alone, and clients keep their sessions and hear `list_changed`. It is
//! all or nothing: if an upstream it starts does not connect, it stops what it started and
//! the gateway serves on as before. Requests route through the set of upstreams in place
//! when they come (one read lock and an `Arc` clone, no lock held across an await).
//!
//! Whose traffic is whose: each client request served by an upstream holds one connection to
//! it alone while it runs (at most `max_connections` per upstream: by default 1 for a stdio
//! command, whose requests then take turns on one process, and 4 for a URL), so the
//! upstream's sampling and elicitation requests and log messages on that connection are that
//! request's, and go to its client only. Never a guess: what arrives while no request holds
//! the connection is refused (requests) or only logged by the gateway (log messages), and a
//! connection whose request ended before its answer (cancelled) is quarantined until its
//! upstream is quiet (replaced only if it does not go quiet, and each principal may end
//! `max_interrupted_per_principal` requests early per upstream a minute, 30 by default).
//! Stdio children get a small safe environment plus the upstream's `env`.
//!
//! Resource subscriptions: only to resources an upstream lists or URIs matching a template it
//! lists (anything else is refused, -32602, and never reaches it); a client session holds at
//! most `max_subscriptions` (100 by default), a principal (all unauthenticated clients are
//! one) at most `max_subscriptions_per_principal` distinct URIs per upstream (250), the
//! gateway at most 1,000 per upstream. Each URI is subscribed to upstream while at least one
//! client holds it and unsubscribed when the last one unsubscribes or its session ends, so
//! the upstream set shrinks again.

mod catalog;
mod config;
mod error;
mod forward;
mod handler;
mod link;
mod pool;
mod quarantine;
mod reload;
mod remote;
mod running;
mod subscriptions;
mod upstream;

pub use config::{Config, Upstream, UpstreamAuth};
pub use error::Error;
pub use reload::ReloadReport;

use catalog::{Catalog, all_pages, announce, track};
use handler::Handler;
use link::{Call, Event, Kind, Link, relay, relay_input, route_name, route_uri};
use pool::Pool;
use quarantine::{Budget, Holder, settle};
use remote::open;
use running::{Entry, Running, Set, Started, Upstreams, connected, follow, launch};
use subscriptions::{Subscriptions, keep_subscribed};
use upstream::{connect, connector, pass_on};

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use oxmcp_client::Supervised;
use oxmcp_server::{Server, ServerConfig};

/// Separates an upstream's name from its tool's or prompt's name in the gateway's lists.
pub(crate) const SEPARATOR: &str = "__";
/// Resources and templates of upstream `NAME` are exposed as `gateway://NAME/ORIGINAL-URI`.
pub(crate) const URI_PREFIX: &str = "gateway://";
/// Notifications from one upstream waiting to be passed on; more are dropped (and logged).
const EVENT_QUEUE: usize = 1024;
/// Pages read from an upstream per list (at its page size, plenty).
const MAX_PAGES: usize = 100;
/// Distinct resources the gateway subscribes to per upstream (clients may name any URI), all
/// on its one connection there: what our own server accepts from one session by default.
const MAX_SUBSCRIPTIONS: usize = 1_000;
/// How long the start waits for the upstreams' first connections before serving without the
/// slow ones, and how long a reload waits for those it starts (then it is refused).
const FIRST_CONNECTION: Duration = Duration::from_secs(10);

/// A gateway with its upstreams started: its [`Server`] to serve, and the supervised
/// connections to the upstreams ([stopped](Gateway::stop) when it is no longer served).
/// [`Gateway::reload`] changes its upstreams while it serves. A clone is the same gateway.
#[derive(Clone)]
pub struct Gateway {
    server: Server,
    shared: Arc<Shared>,
}

/// What the clones of a gateway share.
struct Shared {
    catalog: Arc<Catalog>,
    upstreams: Arc<Upstreams>,
    /// Taken by a reload or a stop for as long as it runs.
    running: tokio::sync::Mutex<Running>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("server", &self.server)
            .field("upstreams", &self.upstreams())
            .finish()
    }
}

/// Starts a [`Gateway`]: [`Gateway::builder`].
#[derive(Debug)]
pub struct GatewayBuilder {
    config: Config,
    server: ServerConfig,
}

impl Gateway {
    /// A gateway for `config`, served with the default [`ServerConfig`].
    pub fn builder(config: Config) -> GatewayBuilder {
        GatewayBuilder {
            config,
            server: ServerConfig::default(),
        }
    }

    /// The gateway's server (`mcp-gateway`): serve it on any transport. Its lists fill as the
    /// upstreams connect, and follow them.
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// The supervised connection to each upstream now, in the config's order (their
    /// [`status`](Supervised::status), for health checks); a reload changes them.
    pub fn upstreams(&self) -> Vec<Supervised> {
        self.shared.upstreams.now().supervised()
    }

    /// Each upstream's name and whether its connection is up now, in the config's order
    /// (after a reload, the upstreams it left).
    pub fn upstream_health(&self) -> Vec<(String, bool)> {
        self.shared
            .upstreams
            .now()
            .named()
            .into_iter()
            .map(|(name, s)| (name, matches!(s.status(), oxmcp_client::Status::Up { .. })))
            .collect()
    }

    /// The server and the upstreams' supervised connections as they are now.
    pub fn into_parts(self) -> (Server, Vec<Supervised>) {
        let upstreams = self.upstreams();
        (self.server, upstreams)
    }

    /// Stops every upstream: their stdio children end, their HTTP sessions are closed. A
    /// reload under way finishes first; none is made after.
    pub async fn stop(&self) {
        let mut running = self.shared.running.lock().await;
        running.stopped = true;
        let entries = std::mem::take(&mut running.entries);
        futures::future::join_all(entries.into_values().map(Entry::halt)).await;
        let set = self.shared.upstreams.now();
        futures::future::join_all(set.pools.values().map(|p| p.retire())).await;
    }
}

impl GatewayBuilder {
    /// The settings of the gateway's server (limits, page size, cache, tasks, ...); its
    /// `max_subscriptions` is the config's [`Config::max_subscriptions`].
    #[must_use]
    pub fn server_config(mut self, server: ServerConfig) -> Self {
        self.server = server;
        self
    }

    /// [Checks](Config::check) the config, starts the upstreams and builds the server. It
    /// returns once every upstream has connected (or failed) once, so that the first lists
    /// are complete, or after 10 s, serving without the slow ones until they come.
    ///
    /// # Errors
    /// [`Error::Config`] for a config that fails [`Config::check`]; [`Error::Server`] if the
    /// server cannot be built.
    pub async fn start(self) -> Result<Gateway, Error> {
        self.config.check()?;
        let mut server_config = self.server;
        server_config.max_subscriptions = self.config.max_subscriptions;
        start(self.config, server_config).await
    }
}

/// The gateway server with its upstreams started (their items arrive as they connect).
async fn start(config: Config, server_config: ServerConfig) -> Result<Gateway, Error> {
    let catalog = Arc::new(Catalog::default());
    let upstreams = Arc::new(Upstreams::default());
    let handler = Handler {
        catalog: catalog.clone(),
        upstreams: upstreams.clone(),
    };
    let server = build_server(&config, handler, server_config, &catalog, &upstreams)?;
    let started: Vec<Started> = config
        .upstream
        .iter()
        .map(|u| launch(u.clone(), &config, None))
        .collect();
    let mut set = Set::default();
    for s in &started {
        set.insert(&s.pool);
    }
    upstreams.replace(set);
    let mut entries = BTreeMap::new();
    let mut ready = Vec::new();
    for s in started {
        let (entry, ready_rx) = follow(&server, &catalog, s);
        entries.insert(entry.upstream.name.clone(), entry);
        ready.push(ready_rx);
    }
    // Serve once every upstream has connected (or failed) once, so the first lists are
    // complete; a slow upstream delays the start by at most 10 s.
    let all = futures::future::join_all(ready);
    if tokio::time::timeout(FIRST_CONNECTION, all).await.is_err() {
        tracing::warn!("some upstreams are still connecting; serving without them for now");
    }
    let running = Running {
        config,
        entries,
        stopped: false,
    };
    let shared = Shared {
        catalog,
        upstreams,
        running: tokio::sync::Mutex::new(running),
    };
    Ok(Gateway {
        server,
        shared: Arc::new(shared),
    })
}

/// The gateway's server: `handler` answering, subscriptions only to what an upstream lists.
fn build_server(
    config: &Config,
    handler: Handler,
    server_config: ServerConfig,
    catalog: &Arc<Catalog>,
    upstreams: &Arc<Upstreams>,
) -> Result<Server, oxmcp_server::BuildError> {
    let (listed, hold, release) = (catalog.clone(), upstreams.clone(), upstreams.clone());
    Server::builder("mcp-gateway", env!("CARGO_PKG_VERSION"))
        .instructions(match &config.bridge {
            Some(what) => format!("A bridge to {what}: its tools, prompts and resources as they are."),
            None => format!(
                "A gateway: tools and prompts of each upstream server appear as UPSTREAM{SEPARATOR}NAME, \
                 its resources as {URI_PREFIX}UPSTREAM/URI."
            ),
        })
        .handler(handler)
        .config(server_config)
        // Only what an upstream lists; held upstream while some client holds it (counted per
        // holder and per principal).
        .on_subscribe(move |principal, uri| {
            let owner = listed.snapshot().owner(uri).map(str::to_owned);
            match (route_uri(&hold.now().links, uri), owner) {
                (Some((link, original)), Some(owner)) if owner == link.name => {
                    link.subscriptions.hold(&link.name, principal, original)
                }
                _ => Err(not_listed(uri)),
            }
        })
        .on_unsubscribe(move |principal, uri| {
            if let Some((link, original)) = route_uri(&release.now().links, uri) {
                link.subscriptions.release(principal, original);
            }
        })
        .build()
}

/// -32602 for a subscription to a URI no upstream lists (nor matches a template it lists).
fn not_listed(uri: &str) -> oxmcp_jsonrpc::ErrorObject {
    let uri = oxmcp_jsonrpc::echo(uri);
    oxmcp_jsonrpc::ErrorObject::invalid_params(format!(
        "Invalid params: no upstream lists {uri} (nor a template it matches)"
    ))
    .with_data(serde_json::json!({ "uri": uri }))
}
