//! `oxmcp serve`: the demo server or a gateway, over Streamable HTTP (plus the legacy HTTP+SSE
//! transport) or stdio, within the limits of [`crate::limits::Limits`]. SIGTERM or Ctrl-C
//! stops it gracefully on either transport: no new input, requests in flight get the drain
//! deadline to finish, upstream servers are shut down, then it exits. SIGHUP reloads a
//! gateway's `--config` file ([`crate::reload`]).

use std::time::Duration;

use anyhow::{Context, bail};
use oxmcp_server::Server;
use tokio_util::sync::CancellationToken;

use crate::limits::Limits;
use crate::{ResponseModeArg, demo, gateway, reload};

/// The arguments of `oxmcp serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// Serve over stdin/stdout instead of HTTP.
    #[arg(long)]
    pub(crate) stdio: bool,
    /// Be a gateway for the upstream servers in this TOML file (see `mcp.example.toml`)
    /// instead of serving the demo server; its `[limits]` table sets limits too.
    #[arg(long)]
    pub(crate) config: Option<std::path::PathBuf>,
    /// Publish the skills of this folder (SEP-2640: a subfolder with a SKILL.md each) on
    /// the demo server.
    #[arg(long, value_name = "DIR", conflicts_with = "config")]
    pub(crate) skills: Option<std::path::PathBuf>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub(crate) listen: std::net::SocketAddr,
    /// Host names accepted in `Host`/`Origin` besides the loopback names (DNS-rebinding
    /// protection); repeat for several.
    #[arg(long = "allowed-host")]
    pub(crate) allowed_hosts: Vec<String>,
    /// Also serve gRPC (the `mcp.v1.Mcp` service) on this address. It is always served on
    /// --listen as well, over HTTP/2 beside the HTTP endpoints.
    #[arg(long)]
    pub(crate) grpc_listen: Option<std::net::SocketAddr>,
    /// The TLS certificate chain (PEM) for --grpc-listen (with --grpc-tls-key).
    #[arg(long, requires_all = ["grpc_tls_key", "grpc_listen"])]
    pub(crate) grpc_tls_cert: Option<std::path::PathBuf>,
    /// The TLS private key (PEM) for --grpc-listen (with --grpc-tls-cert).
    #[arg(long, requires = "grpc_tls_cert")]
    pub(crate) grpc_tls_key: Option<std::path::PathBuf>,
    /// How POSTed requests are answered over HTTP.
    #[arg(long, value_enum, default_value_t = ResponseModeArg::Auto)]
    pub(crate) response_mode: ResponseModeArg,
    /// Serve legacy (pre-2026) HTTP clients without sessions: no Mcp-Session-Id, any
    /// instance answers any POST (no store or sticky routing needed); GET and DELETE get 405,
    /// and tools cannot ask the client for sampling, elicitation or roots.
    #[arg(long, conflicts_with = "stdio")]
    pub(crate) stateless: bool,
    #[command(flatten)]
    pub(crate) limits: Limits,
    #[command(flatten)]
    pub(crate) auth: crate::protect::AuthArgs,
    #[command(flatten)]
    pub(crate) store: crate::store::StoreArgs,
    #[command(flatten)]
    pub(crate) bridge: BridgeArgs,
    #[command(flatten)]
    pub(crate) operate: crate::operate::OperateArgs,
}

/// A bridge: `oxmcp serve -- CMD ARGS...` or `oxmcp serve --upstream URL`.
#[derive(Debug, clap::Args)]
pub(crate) struct BridgeArgs {
    /// Bridge a remote server (http(s)://, ws(s):// or grpc(s)://) to our transports, e.g.
    /// `oxmcp serve --stdio --upstream URL` for a stdio-only host. Its tools, prompts and
    /// resources keep their names.
    #[arg(long, value_name = "URL", conflicts_with_all = ["config", "command"])]
    pub(crate) upstream: Option<String>,
    /// Extra HTTP header for --upstream, `Name: value` (repeatable).
    #[arg(long = "upstream-header", value_name = "HEADER", requires = "upstream")]
    pub(crate) upstream_headers: Vec<String>,
    /// Read the bearer token for --upstream from this file.
    #[arg(
        long,
        value_name = "PATH",
        requires = "upstream",
        conflicts_with = "upstream_login"
    )]
    pub(crate) upstream_bearer_file: Option<std::path::PathBuf>,
    /// Use (and refresh) the tokens `oxmcp login URL` stored for --upstream.
    #[arg(long, requires = "upstream")]
    pub(crate) upstream_login: bool,
    /// Protocol era to speak with the bridged server: auto, legacy or modern.
    #[arg(long, default_value = "auto")]
    pub(crate) upstream_era: oxmcp_client::EraChoice,
    /// Bridge a stdio server: the command after `--`, served supervised over our HTTP
    /// transports, or over stdio with --stdio. It gets a safe set of this process's
    /// environment (PATH, HOME, USER, LOGNAME, SHELL, TERM, LANG, TZ, TMPDIR, LC_*), plus
    /// what --env and --pass-env give it.
    #[arg(last = true, value_name = "CMD", conflicts_with = "config")]
    pub(crate) command: Vec<String>,
    /// Give the bridged command this variable of our environment (`NAME`), or this value
    /// (`NAME=VALUE`, visible in `ps`); repeatable.
    #[arg(
        long = "env",
        value_name = "NAME[=VALUE]",
        requires = "command",
        conflicts_with_all = ["config", "upstream"],
        value_parser = parse_env
    )]
    pub(crate) env: Vec<EnvArg>,
    /// Give the bridged command this process's whole environment (secrets included), as a
    /// shell would.
    #[arg(long, requires = "command", conflicts_with_all = ["config", "upstream"])]
    pub(crate) pass_env: bool,
}

/// One `--env`: a variable's name, and its value when given.
#[derive(Debug, Clone)]
pub(crate) struct EnvArg {
    name: String,
    value: Option<String>,
}

fn parse_env(s: &str) -> Result<EnvArg, String> {
    let (name, value) = match s.split_once('=') {
        Some((n, v)) => (n, Some(v.to_owned())),
        None => (s, None),
    };
    if name.is_empty() || name.contains('\0') || value.as_deref().is_some_and(|v| v.contains('\0'))
    {
        return Err(format!("{s:?}: expected NAME or NAME=VALUE"));
    }
    Ok(EnvArg {
        name: name.to_owned(),
        value,
    })
}

/// The variables a bridged command gets on top of the safe set: all of ours with
/// `pass_all`, then those `--env` names (from `ours`) or sets.
fn bridged_env(
    pass_all: bool,
    named: &[EnvArg],
    ours: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> std::collections::BTreeMap<String, String> {
    let ours: std::collections::BTreeMap<String, String> = ours
        .into_iter()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let mut env = if pass_all {
        ours.clone()
    } else {
        std::collections::BTreeMap::new()
    };
    for e in named {
        match (&e.value, ours.get(&e.name)) {
            (Some(v), _) | (None, Some(v)) => {
                env.insert(e.name.clone(), v.clone());
            }
            (None, None) => tracing::warn!("--env {}: not set here, so not passed on", e.name),
        }
    }
    env
}

impl BridgeArgs {
    /// The gateway of the bridge these options ask for, if any.
    fn config(&self) -> anyhow::Result<Option<gateway::ServeFile>> {
        if let Some(url) = &self.upstream {
            if !crate::target::is_url(url) {
                bail!("--upstream {url:?} is not an http(s)://, ws(s):// or grpc(s):// URL");
            }
            let mut upstream = gateway::Upstream::url("upstream", url.clone());
            upstream.era = self.upstream_era;
            upstream.headers = crate::auth::parse_headers(&self.upstream_headers)?
                .into_iter()
                .collect();
            if self.upstream_bearer_file.is_some() || self.upstream_login {
                let mut auth = gateway::UpstreamAuth::default();
                auth.bearer_file = self.upstream_bearer_file.clone();
                auth.login = self.upstream_login;
                upstream.auth = Some(auth);
            }
            return Ok(Some(gateway::bridge(upstream, gateway::describe_url(url))));
        }
        if self.command.is_empty() {
            return Ok(None);
        }
        // The safe set (added by the gateway, as for any stdio upstream) and what the
        // operator names: a third-party server never gets our secrets by accident.
        let env = bridged_env(self.pass_env, &self.env, std::env::vars_os());
        let mut upstream = gateway::Upstream::command("upstream", self.command.clone());
        upstream.env = env;
        upstream.era = self.upstream_era;
        let what = gateway::describe_command(&self.command);
        Ok(Some(gateway::bridge(upstream, what)))
    }
}

/// Runs `oxmcp serve`.
pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    // First: a signal while upstreams are being connected must still end in a clean stop.
    let shutdown = oxmcp_http::shutdown_on_signal();
    let gateway_config = match args.config.as_deref() {
        Some(path) => Some(gateway::load(path)?),
        None => args.bridge.config()?,
    };
    let auth = args.auth.build(
        gateway_config.as_ref().and_then(|c| c.auth.as_ref()),
        args.listen,
    )?;
    let file_limits = gateway_config
        .as_ref()
        .map(|c| c.limits.clone())
        .unwrap_or_default();
    let limits = args.limits.clone().over(file_limits);
    limits.check()?;
    let store = shared_store(&args, gateway_config.as_ref(), &limits).await?;
    let (server_config, metrics) = server_config(&args, &limits, store.as_ref()).await?;
    let what = what_is_served(gateway_config.as_ref());
    let mut options = oxmcp_http::ServeOptions::default();
    limits.serve(&mut options);
    let (server, upstreams) = match gateway_config {
        // A signal while connecting lets the connecting finish (so what was opened is closed
        // again below), but waits no longer than the drain deadline.
        Some(file) => tokio::select! {
            started = reload::start(file, args.config.as_deref(), &limits, server_config) => started?,
            () = async {
                shutdown.cancelled().await;
                tokio::time::sleep(options.drain_deadline).await;
            } => anyhow::bail!("stopped by a signal while connecting to the upstreams"),
        },
        None => (
            demo::server_with(server_config, args.skills.as_deref())?,
            reload::Running::default(),
        ),
    };
    if args.stdio && auth.is_some() {
        bail!("--auth-* and [auth] protect the HTTP endpoint; stdio has no tokens to check");
    }
    if let Some(store) = &store {
        crate::store::share_changes(&server, store);
    }
    let served = if args.stdio {
        serve_stdio(
            &server,
            &shutdown,
            options.drain_deadline,
            limits.max_line(),
        )
        .await;
        Ok(())
    } else {
        let probes = crate::operate::Probes {
            metrics,
            draining: shutdown.clone(),
            store: store.clone(),
            upstreams: upstreams.health(),
            ready_upstreams: args.operate.ready_upstreams,
        };
        let served = Served {
            server,
            what,
            auth,
            store,
            probes,
        };
        serve_http(&args, &limits, served, shutdown, options).await
    };
    upstreams.stop().await;
    served
}

/// The settings of the server: the store's shares (its `requestState` key, tasks, handlers'
/// state), the limits, the layers of the operations flags; and the metrics, if recorded.
async fn server_config(
    args: &ServeArgs,
    limits: &Limits,
    store: Option<&std::sync::Arc<dyn oxmcp_store::Store>>,
) -> anyhow::Result<(
    oxmcp_server::ServerConfig,
    Option<oxmcp_server::layer::Metrics>,
)> {
    let mut server_config = oxmcp_server::ServerConfig::default();
    if let Some(store) = store {
        server_config.request_state_key = crate::store::request_state_key(store).await?;
        // Tasks live in the store too: any instance answers tasks/get.
        server_config.task_store = Some(oxmcp::StoreTasks::new(store.clone()));
        // And handlers' state: every instance sees a session's and a user's.
        server_config.state_store = Some(store.clone());
    }
    limits.server(&mut server_config);
    let metrics = args.operate.layers(&mut server_config, !args.stdio);
    if args.stdio {
        limits.stdio(&mut server_config);
    }
    Ok((server_config, metrics))
}

/// "the demo server", "the gateway" or "the bridge to ...".
fn what_is_served(gateway: Option<&gateway::ServeFile>) -> String {
    match gateway.map(|c| c.gateway.bridged()) {
        Some(Some(b)) => format!("the bridge to {b}"),
        Some(None) => "the gateway".to_owned(),
        None => "the demo server".to_owned(),
    }
}

/// Serves stdin/stdout until the input ends or a signal comes; on a signal, input is no longer
/// read and requests in flight get `drain` to finish.
async fn serve_stdio(
    server: &Server,
    shutdown: &CancellationToken,
    drain: Duration,
    max_line: usize,
) {
    let stop = shutdown.clone().cancelled_owned();
    let (io, writer) = oxmcp_transport::stdio_until(max_line, stop);
    let serving = server.serve(io.incoming, io.outgoing);
    tokio::pin!(serving);
    tokio::select! {
        () = &mut serving => {}
        () = async {
            shutdown.cancelled().await;
            tokio::time::sleep(drain).await;
        } => tracing::warn!("drain deadline of {drain:?} passed; exiting with requests in flight"),
    }
    // What was answered is written out before exiting.
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
}

/// The store `--store` or the config file names, connected (`None`: everything in this
/// process). A store that cannot be reached is an error: the instance would serve clients
/// that the others cannot see.
async fn shared_store(
    args: &ServeArgs,
    file: Option<&gateway::ServeFile>,
    limits: &Limits,
) -> anyhow::Result<Option<std::sync::Arc<dyn oxmcp_store::Store>>> {
    let url = args
        .store
        .store
        .clone()
        .or_else(|| file.and_then(|f| f.store.clone()));
    let Some(url) = url else { return Ok(None) };
    if args.stdio {
        bail!("--store shares HTTP sessions between instances; stdio has none");
    }
    let instance = args
        .store
        .instance_id
        .clone()
        .or_else(|| file.and_then(|f| f.instance_id.clone()));
    let mut probe = oxmcp_http::HttpConfig::default();
    limits.http(&mut probe);
    // The store's own caps follow the server's: a subscription or an answer the server
    // takes is one the store takes.
    let mut server = oxmcp_server::ServerConfig::default();
    if let (Some(c), None) = (file, limits.max_subscriptions) {
        server.max_subscriptions = c.gateway.max_subscriptions;
    }
    limits.server(&mut server);
    let store = crate::store::connect(
        &url,
        &args.store,
        instance.as_deref(),
        &probe,
        server.max_subscriptions,
    )
    .await?;
    Ok(Some(store))
}

/// What `oxmcp serve` serves over HTTP.
struct Served {
    server: Server,
    /// What is served, for the first line on stderr.
    what: String,
    auth: Option<oxmcp_http::HttpAuth>,
    store: Option<std::sync::Arc<dyn oxmcp_store::Store>>,
    /// `/healthz`, `/readyz` and `/metrics`.
    probes: crate::operate::Probes,
}

async fn serve_http(
    args: &ServeArgs,
    limits: &Limits,
    served: Served,
    shutdown: CancellationToken,
    options: oxmcp_http::ServeOptions,
) -> anyhow::Result<()> {
    let Served {
        server,
        what,
        auth,
        store,
        probes,
    } = served;
    // SIGTERM: `/readyz` answers 503 at once; new requests are refused and the drain
    // starts after --shutdown-delay.
    let drain = drain_after(&shutdown, args.operate.shutdown_delay());
    if let Some(metrics) = &probes.metrics {
        crate::operate::sample(metrics, &server, store.as_ref(), &probes.upstreams);
    }
    let listen = args.listen;
    for listen in std::iter::once(listen).chain(args.grpc_listen) {
        refuse_open_listener(args, listen, auth.is_some())?;
    }
    let config = http_config(args, limits, auth, &drain);
    let counted = store.clone();
    let (app, grpc) = endpoints(args, server, config, store, &probes);
    let grpc_listener = grpc_listener(args).await?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let addr = listener.local_addr()?;
    let grpc_task = grpc_listener.map(|(listener, tls)| spawn_grpc(listener, tls, grpc, &drain));
    eprintln!(
        "oxmcp: serving {what} at http://{addr}/mcp (and HTTP+SSE at /sse, WebSocket at ws://{addr}/ws, gRPC at grpc://{addr})"
    );
    // After the line above, which scripts read for the address.
    let metrics_task = match args.operate.metrics_listen {
        Some(addr) => Some(crate::operate::serve_probes(addr, &probes).await?),
        None => None,
    };
    oxmcp_http::serve_router_with(listener, app, options, drain.cancelled_owned()).await?;
    if let Some(task) = metrics_task {
        task.abort();
    }
    if let Some(task) = grpc_task {
        task.await.context("the gRPC listener failed")??;
    }
    match counted {
        Some(store) => eprintln!(
            "oxmcp: stopped ({} round trips to the store)",
            store.stats().round_trips
        ),
        None => eprintln!("oxmcp: stopped"),
    }
    Ok(())
}

/// The router of every endpoint on --listen (Streamable HTTP, HTTP+SSE, WebSocket, the
/// probes and `/metrics` unless --metrics-listen, gRPC beside them over HTTP/2), and the gRPC
/// router for --grpc-listen.
fn endpoints(
    args: &ServeArgs,
    server: Server,
    config: oxmcp_http::HttpConfig,
    store: Option<std::sync::Arc<dyn oxmcp_store::Store>>,
    probes: &crate::operate::Probes,
) -> (axum::Router, axum::Router) {
    let legacy = oxmcp_http::LegacySse::new(server.clone(), config.clone());
    let ws = oxmcp_ws::WebSocket::new(
        server.clone(),
        config.clone(),
        oxmcp_ws::WsConfig::default(),
    );
    let grpc = oxmcp_grpc::Grpc::new(server.clone(), config.clone()).router();
    let tools = server.clone();
    let mut http =
        oxmcp_http::StreamableHttp::new(server, config).with_param_headers(move |name| {
            tools
                .tool(name)
                .map(|t| t.header_params())
                .unwrap_or_default()
        });
    if let Some(store) = store {
        http = http.with_store(store);
    }
    let metrics_here = args.operate.metrics_listen.is_none();
    let app = http
        .router()
        .merge(legacy.router())
        .merge(ws.router())
        .merge(probes.router(metrics_here));
    (oxmcp_grpc::split(app, grpc.clone()), grpc)
}

/// Serves gRPC on --grpc-listen until `drain`; a listener that cannot serve (bad TLS
/// material, say) stops the whole server instead of leaving a dead port behind.
fn spawn_grpc(
    listener: tokio::net::TcpListener,
    tls: Option<oxmcp_grpc::TlsPem>,
    grpc: axum::Router,
    drain: &CancellationToken,
) -> tokio::task::JoinHandle<Result<(), oxmcp_grpc::ListenError>> {
    let stop = drain.clone();
    tokio::spawn(async move {
        let served =
            oxmcp_grpc::serve_grpc(listener, grpc, tls, stop.clone().cancelled_owned()).await;
        if served.is_err() {
            stop.cancel();
        }
        served
    })
}

/// A token cancelled `delay` after `signal` is.
fn drain_after(signal: &CancellationToken, delay: Duration) -> CancellationToken {
    let drain = CancellationToken::new();
    let (signal, start) = (signal.clone(), drain.clone());
    tokio::spawn(async move {
        signal.cancelled().await;
        if !delay.is_zero() {
            eprintln!("oxmcp: draining in {delay:?} (/readyz answers 503 meanwhile)");
            tokio::time::sleep(delay).await;
        }
        start.cancel();
    });
    drain
}

/// The HTTP settings of `oxmcp serve`: its allowed hosts (loopback names too, once any is
/// given), response mode, limits, authentication and shutdown.
fn http_config(
    args: &ServeArgs,
    limits: &Limits,
    auth: Option<oxmcp_http::HttpAuth>,
    shutdown: &CancellationToken,
) -> oxmcp_http::HttpConfig {
    let mut hosts = args.allowed_hosts.clone();
    if !hosts.is_empty() {
        hosts.extend(["localhost", "127.0.0.1", "[::1]"].map(String::from));
    }
    let mut config = oxmcp_http::HttpConfig::default()
        .allowed_hosts(hosts)
        .response_mode(args.response_mode.into())
        .stateless(args.stateless)
        .shutdown(shutdown.clone())
        .auth(auth.map(std::sync::Arc::new));
    limits.http(&mut config);
    config
}

/// Refuses a non-loopback listener without authentication unless --allow-unauthenticated.
fn refuse_open_listener(
    args: &ServeArgs,
    listen: std::net::SocketAddr,
    authenticated: bool,
) -> anyhow::Result<()> {
    if !listen.ip().is_loopback() && !authenticated {
        if !args.auth.allow_unauthenticated {
            bail!(
                "refusing to listen on non-loopback {listen} without authentication: protect it \
                 with --auth-issuer/--auth-audience or --auth-token-file, or pass \
                 --allow-unauthenticated"
            );
        }
        tracing::warn!(
            "listening on non-loopback address {listen} without authentication: anyone who can \
             reach it can use this server"
        );
    }
    Ok(())
}

/// The listener of --grpc-listen and its TLS material, bound now so that a busy port fails
/// the start.
async fn grpc_listener(
    args: &ServeArgs,
) -> anyhow::Result<Option<(tokio::net::TcpListener, Option<oxmcp_grpc::TlsPem>)>> {
    let Some(addr) = args.grpc_listen else {
        return Ok(None);
    };
    let tls = match (&args.grpc_tls_cert, &args.grpc_tls_key) {
        (Some(cert), Some(key)) => Some(oxmcp_grpc::TlsPem {
            cert: std::fs::read(cert).with_context(|| format!("reading {}", cert.display()))?,
            key: std::fs::read(key).with_context(|| format!("reading {}", key.display()))?,
        }),
        _ => None,
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} for gRPC"))?;
    let scheme = if tls.is_some() { "grpcs" } else { "grpc" };
    eprintln!(
        "oxmcp: serving gRPC at {scheme}://{}",
        listener.local_addr()?
    );
    Ok(Some((listener, tls)))
}
