//! `mcp serve --config mcp.toml`: one MCP server in front of several upstream servers (stdio
//! commands and URLs), each supervised. Tools of upstream `NAME` appear as `NAME__TOOL`;
//! calls, progress and cancellation pass through. An upstream that goes down takes its tools
//! out of the list (clients get `list_changed`) until it is back.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use mcp_client::{
    Client, ClientConfig, ClientHandlers, EraChoice, Heartbeat, RequestOptions, ServerEvent,
    Status, Supervised, SupervisorConfig,
};
use mcp_jsonrpc::ErrorObject;
use mcp_server::{Ctx, Server, ToolFn};
use mcp_types::JsonObject;
use serde::Deserialize;
use tokio::sync::mpsc;

/// Separates an upstream's name from its tool's name in the gateway's tool list.
pub(crate) const SEPARATOR: &str = "__";

/// The configuration file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Config {
    /// Interval of the heartbeat `ping` to each upstream, in milliseconds (default 5000); two
    /// missed in a row mark it down and start a reconnection (or restart).
    #[serde(default = "default_heartbeat_ms")]
    pub(crate) heartbeat_ms: u64,
    /// The upstream servers (`[[upstream]]` tables).
    #[serde(default)]
    pub(crate) upstream: Vec<Upstream>,
}

fn default_heartbeat_ms() -> u64 {
    5000
}

/// One upstream server.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Upstream {
    /// Prefix of its tools: letters, digits, `-` and `_`, without `__`.
    pub(crate) name: String,
    /// A stdio server: program and arguments (fixed here; nothing else is ever spawned).
    #[serde(default)]
    pub(crate) command: Vec<String>,
    /// A Streamable HTTP (or legacy HTTP+SSE) server.
    pub(crate) url: Option<String>,
    /// Extra HTTP headers for `url`.
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
    /// Only these tools (all when empty).
    #[serde(default)]
    pub(crate) allow_tools: Vec<String>,
    /// Never these tools.
    #[serde(default)]
    pub(crate) deny_tools: Vec<String>,
}

impl Upstream {
    fn allows(&self, tool: &str) -> bool {
        (self.allow_tools.is_empty() || self.allow_tools.iter().any(|t| t == tool))
            && !self.deny_tools.iter().any(|t| t == tool)
    }
}

/// Reads and checks a configuration file.
pub(crate) fn load(path: &std::path::Path) -> anyhow::Result<Config> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let config: Config =
        toml::from_str(&text).with_context(|| format!("invalid config {}", path.display()))?;
    let mut seen = std::collections::HashSet::new();
    for u in &config.upstream {
        let ok_chars = u
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if u.name.is_empty() || !ok_chars || u.name.contains(SEPARATOR) {
            bail!(
                "upstream name {:?}: use letters, digits, - and _ (not {SEPARATOR})",
                u.name
            );
        }
        if !seen.insert(u.name.clone()) {
            bail!("upstream name {:?} is used twice", u.name);
        }
        match (u.command.is_empty(), &u.url) {
            (false, None) | (true, Some(_)) => {}
            _ => bail!(
                "upstream {:?}: give exactly one of `command` and `url`",
                u.name
            ),
        }
    }
    Ok(config)
}

/// The gateway server with its upstreams started (their tools arrive as they connect).
pub(crate) async fn start(config: Config) -> anyhow::Result<(Server, Vec<Supervised>)> {
    let server = Server::builder("mcp-gateway", env!("CARGO_PKG_VERSION"))
        .instructions(format!(
            "A gateway: the tools of each upstream server appear as UPSTREAM{SEPARATOR}TOOL."
        ))
        .declare_tools()
        .build()?;
    let mut supervised = Vec::new();
    let mut ready = Vec::new();
    let beat = Duration::from_millis(config.heartbeat_ms.max(10));
    for upstream in config.upstream {
        let (changed_tx, changed_rx) = mpsc::channel::<()>(1);
        let sup = Supervised::start(
            connector(upstream.clone(), changed_tx),
            SupervisorConfig {
                heartbeat: Some(Heartbeat {
                    interval: beat,
                    timeout: beat.min(Duration::from_secs(5)),
                    misses: 2,
                }),
                ..SupervisorConfig::default()
            },
        );
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        ready.push(ready_rx);
        tokio::spawn(mirror(
            server.clone(),
            upstream,
            sup.clone(),
            changed_rx,
            ready_tx,
        ));
        supervised.push(sup);
    }
    // Serve once every upstream has connected (or failed) once, so the first tools/list
    // is complete; a slow upstream delays the start by at most 10 s.
    let all = futures::future::join_all(ready);
    if tokio::time::timeout(Duration::from_secs(10), all)
        .await
        .is_err()
    {
        tracing::warn!("some upstreams are still connecting; serving without them for now");
    }
    Ok((server, supervised))
}

fn connector(upstream: Upstream, changed: mpsc::Sender<()>) -> mcp_client::supervisor::Connector {
    Arc::new(move || {
        let upstream = upstream.clone();
        let changed = changed.clone();
        Box::pin(async move {
            let handlers = ClientHandlers::new().on_event(move |e| {
                if matches!(e, ServerEvent::ToolsChanged) {
                    let _ = changed.try_send(());
                }
            });
            let config = ClientConfig {
                era: EraChoice::Auto,
                ..ClientConfig::default()
            };
            match &upstream.url {
                Some(url) => {
                    let t = mcp_http::client::connect(
                        url,
                        mcp_http::HttpClientConfig {
                            headers: upstream.headers.clone().into_iter().collect(),
                            ..Default::default()
                        },
                    )
                    .map_err(|e| {
                        mcp_client::ConnectError::Initialize(mcp_client::CallError::Protocol(
                            e.to_string(),
                        ))
                    })?;
                    Client::connect(t.incoming, t.outgoing, handlers, config).await
                }
                None => {
                    let (program, args) = upstream
                        .command
                        .split_first()
                        .map(|(p, a)| (p.clone(), a.to_vec()))
                        .unwrap_or_default();
                    Client::spawn(&program, &args, handlers, config).await
                }
            }
        })
    })
}

/// Keeps the gateway's copy of an upstream's tools in step with the upstream.
async fn mirror(
    server: Server,
    upstream: Upstream,
    sup: Supervised,
    mut changed: mpsc::Receiver<()>,
    ready: tokio::sync::oneshot::Sender<()>,
) {
    let mut status = sup.watch();
    let mut ours: Vec<String> = Vec::new();
    let mut ready = Some(ready);
    loop {
        let current = status.borrow_and_update().clone();
        // The first connection attempt is over once the status is anything but "connecting".
        let settled = !matches!(&current, Status::Restarting { attempt: 0, .. });
        match current {
            Status::Up { client, .. } => match client.list_tools().await {
                Ok(tools) => {
                    let mut next = Vec::new();
                    for tool in tools.into_iter().filter(|t| upstream.allows(&t.name)) {
                        let name = format!("{}{SEPARATOR}{}", upstream.name, tool.name);
                        let handler = forward(sup.clone(), tool.name.clone());
                        let exposed = mcp_types::Tool {
                            name: name.clone(),
                            ..tool
                        };
                        match server.add_tool(exposed, handler).await {
                            Ok(()) => next.push(name),
                            Err(e) => tracing::warn!("skipping upstream tool {name}: {e}"),
                        }
                    }
                    for gone in ours.iter().filter(|n| !next.contains(n)) {
                        server.remove_tool(gone).await;
                    }
                    tracing::info!(upstream = %upstream.name, tools = next.len(), "upstream up");
                    ours = next;
                }
                Err(e) => tracing::warn!(upstream = %upstream.name, "listing tools failed: {e}"),
            },
            Status::Stopped => return,
            Status::Restarting { attempt: 0, .. } => {}
            other => {
                if !ours.is_empty() {
                    tracing::warn!(upstream = %upstream.name, "upstream down: {other:?}");
                }
                for name in ours.drain(..) {
                    server.remove_tool(&name).await;
                }
            }
        }
        if settled {
            if let Some(r) = ready.take() {
                let _ = r.send(());
            }
        }
        tokio::select! {
            r = status.changed() => if r.is_err() { return },
            Some(()) = changed.recv() => {}
        }
    }
}

/// A gateway tool: calls `tool` on the upstream, passing progress back and cancellation on.
fn forward(sup: Supervised, tool: String) -> ToolFn {
    Arc::new(move |ctx: Ctx, args: JsonObject| {
        let sup = sup.clone();
        let tool = tool.clone();
        Box::pin(async move {
            let progress_ctx = ctx.clone();
            let options = RequestOptions::default().on_progress(move |p| {
                let ctx = progress_ctx.clone();
                tokio::spawn(async move {
                    ctx.progress(p.progress, p.total, p.message).await;
                });
            });
            let call = sup
                .call(|client| async move { client.call_tool_with(&tool, args, &options).await });
            // The caller's cancellation drops the upstream call, which cancels it upstream.
            let result = tokio::select! {
                r = call => r,
                () = ctx.cancellation().cancelled() => {
                    return Err(ErrorObject::internal("cancelled"));
                }
            };
            result.map_err(|e| match e {
                mcp_client::SupervisorError::Call(mcp_client::CallError::Rpc(e)) => e,
                other => ErrorObject::internal(format!("upstream: {other}")),
            })
        })
    })
}
