//! `oxmcp serve --store URL`: sessions, stream logs, tasks, handlers' state and changes
//! shared with the other instances of a deployment through Redis or PostgreSQL.

use std::sync::Arc;

use anyhow::Context;
use oxmcp_server::{Change, Server};
use oxmcp_store::{BusEvent, Store, StoreConfig};
use tokio::sync::broadcast::error::RecvError;

/// The store flags of `oxmcp serve`.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct StoreArgs {
    /// Share sessions, tasks and handlers' state with the other instances behind a load
    /// balancer through this Redis or PostgreSQL: redis://[user:password@]host:port[/db],
    /// rediss:// for TLS, redis+cluster://host:port,host:port for a Cluster, or
    /// postgres://[user[:password]@]host[:port]/db[?sslmode=require] (also postgresql://)
    /// (also `store = "..."` in the config file). Without it everything stays in this
    /// process.
    #[arg(long, value_name = "URL")]
    pub(crate) store: Option<String>,
    /// This instance's name in the store and in logs (default: random).
    #[arg(long, value_name = "NAME")]
    pub(crate) instance_id: Option<String>,
    /// A store operation slower than this fails the request that needs it (503, -32000
    /// busy, Retry-After) [default: 2s]
    #[arg(long, value_name = "DURATION")]
    pub(crate) store_timeout: Option<crate::limits::Dur>,
    /// Store operations waiting at once; past that, requests are refused as busy at once
    /// instead of queueing behind a slow store [default: 1024]
    #[arg(long, value_name = "N")]
    pub(crate) store_max_waiting: Option<usize>,
    /// How long an instance serves a session without asking the store whether it still
    /// exists (a DELETE on another instance reaches it on the store's bus at once; this
    /// bounds how long one can go unnoticed when the bus is down). 0: ask on every request
    /// [default: 1s]
    #[arg(long, value_name = "DURATION")]
    pub(crate) store_lease: Option<crate::limits::Dur>,
    /// The CA certificate (PEM) that signed the store's TLS certificate, for a rediss:// URL
    /// or a postgres:// URL with sslmode=require whose certificate is not from a public CA
    #[arg(long, value_name = "FILE")]
    pub(crate) store_ca: Option<std::path::PathBuf>,
}

/// The name of an instance that was given none: `mcp-` and 8 random hex digits.
fn random_instance() -> String {
    let mut b = [0u8; 4];
    if getrandom::fill(&mut b).is_err() {
        return format!("mcp-{}", std::process::id());
    }
    format!("mcp-{:02x}{:02x}{:02x}{:02x}", b[0], b[1], b[2], b[3])
}

/// Connects to the store at `url`, for an endpoint with `http`'s settings (sessions expire
/// after its idle timeout; a bus event may carry a message of its largest body) and a server
/// holding at most `max_subscriptions` per session.
pub(crate) async fn connect(
    url: &str,
    args: &StoreArgs,
    instance: Option<&str>,
    http: &oxmcp_http::HttpConfig,
    max_subscriptions: usize,
) -> anyhow::Result<Arc<dyn Store>> {
    let session_ttl = http.session_idle_timeout;
    let instance = instance.map_or_else(random_instance, str::to_owned);
    if instance.is_empty() || !instance.bytes().all(|b| b.is_ascii_graphic()) {
        anyhow::bail!("--instance-id must be printable ASCII without spaces");
    }
    let mut config = StoreConfig::default()
        .session_ttl(session_ttl)
        .max_subscriptions(max_subscriptions.max(1));
    // Room for a client's answer of the largest body the endpoint takes, and its envelope.
    config.max_bus_event = config.max_bus_event.max(http.max_body + 64 * 1024);
    if let Some(t) = &args.store_timeout {
        config.op_timeout = t.0.max(std::time::Duration::from_millis(1));
    }
    if let Some(t) = &args.store_lease {
        config.session_lease = t.0;
    }
    if let Some(n) = args.store_max_waiting {
        config.max_waiting = n.max(1);
    }
    let ca = match &args.store_ca {
        Some(path) => {
            Some(std::fs::read(path).with_context(|| format!("reading {}", path.display()))?)
        }
        None => None,
    };
    let postgres = url.starts_with("postgres://") || url.starts_with("postgresql://");
    let store: Arc<dyn Store> = if postgres {
        let store =
            oxmcp_store_postgres::PostgresStore::connect_with_ca(url, instance.clone(), config, ca)
                .await?;
        Arc::new(store)
    } else {
        let store =
            oxmcp_store_redis::RedisStore::connect_with_ca(url, instance.clone(), config, ca)
                .await?;
        Arc::new(store)
    };
    let shown = if postgres {
        oxmcp_store_postgres::redacted(url)
    } else {
        oxmcp_store_redis::redacted(url)
    };
    eprintln!("oxmcp: instance {instance}, sessions shared through {shown}");
    tracing::info!(instance = %instance, "connected to the session store");
    Ok(store)
}

/// The key that signs 2026-07-28 `requestState`, the same on every instance.
pub(crate) async fn request_state_key(
    store: &Arc<dyn Store>,
) -> anyhow::Result<oxmcp_server::RequestStateKey> {
    let key = store
        .shared_secret("request-state")
        .await
        .context("reading the shared requestState key")?;
    Ok(oxmcp_server::RequestStateKey::from_bytes(key))
}

/// Tells the other instances of every change made here (in order), and this instance's
/// clients of every change made there.
pub(crate) fn share_changes(server: &Server, store: &Arc<dyn Store>) {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Change>(1024);
    server.on_change(move |change| {
        if tx.try_send(change.clone()).is_err() {
            tracing::warn!("other instances miss a change: too many waiting to be sent");
        }
    });
    let out = store.clone();
    tokio::spawn(async move {
        while let Some(change) = rx.recv().await {
            let Ok(change) = serde_json::to_value(&change) else {
                continue;
            };
            let event = BusEvent::Change {
                from: out.instance().to_owned(),
                change,
            };
            if let Err(e) = out.publish(&event).await {
                tracing::warn!("other instances miss a change: {e}");
            }
        }
    });
    let mut bus = store.bus();
    let me = store.instance().to_owned();
    let server = server.clone();
    tokio::spawn(async move {
        loop {
            match bus.recv().await {
                Ok(BusEvent::Change { from, change }) if from != me => {
                    match serde_json::from_value::<Change>(change) {
                        Ok(c) => server.apply_change(&c),
                        Err(e) => tracing::warn!("unreadable change from {from}: {e}"),
                    }
                }
                Ok(_) => {}
                Err(RecvError::Lagged(n)) => tracing::warn!("{n} bus events missed"),
                Err(RecvError::Closed) => return,
            }
        }
    });
}
