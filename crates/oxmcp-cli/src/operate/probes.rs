//! `/healthz`, `/readyz` and `/metrics` of `oxmcp serve`, outside the MCP endpoint's
//! authentication and Host checks (a probe or a scraper comes with the pod's address, and
//! none of these answers shows a token, an argument or a result): the process serves; it is
//! ready for traffic (not draining, its store answers, the upstreams it needs are up); and
//! what its instruments and the transports' counters say.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use oxmcp_server::layer::Metrics;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// How long `/readyz` waits for the store.
const STORE_PROBE: Duration = Duration::from_secs(2);

/// Which of a gateway's upstreams must be up for `/readyz` to answer 200.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ReadyUpstreams {
    /// At least one (or none configured).
    #[default]
    Any,
    /// Every one.
    All,
    /// Readiness does not depend on upstreams.
    Ignore,
}

/// The health of a gateway's upstreams now: (name, up) pairs.
pub(crate) type UpstreamHealth = Arc<dyn Fn() -> Vec<(String, bool)> + Send + Sync>;

/// What the probes look at.
#[derive(Clone)]
pub(crate) struct Probes {
    /// The instruments `/metrics` renders (`None`: no `/metrics`).
    pub(crate) metrics: Option<Metrics>,
    /// Cancelled on SIGTERM: from then on `/readyz` answers 503.
    pub(crate) draining: CancellationToken,
    pub(crate) store: Option<Arc<dyn oxmcp_store::Store>>,
    pub(crate) upstreams: UpstreamHealth,
    pub(crate) ready_upstreams: ReadyUpstreams,
}

impl Probes {
    /// The routes: `/healthz`, `/readyz`, and `/metrics` when `with_metrics` and there are
    /// instruments.
    pub(crate) fn router(&self, with_metrics: bool) -> axum::Router {
        let ready = self.clone();
        let mut router = axum::Router::new()
            .route("/healthz", axum::routing::get(|| async { "ok\n" }))
            .route(
                "/readyz",
                axum::routing::get(move || {
                    let probes = ready.clone();
                    async move { probes.ready().await }
                }),
            );
        if let (true, Some(metrics)) = (with_metrics, self.metrics.clone()) {
            router = router.route(
                "/metrics",
                axum::routing::get(move || {
                    let metrics = metrics.clone();
                    async move {
                        (
                            [(header::CONTENT_TYPE, Metrics::CONTENT_TYPE)],
                            metrics.render(),
                        )
                            .into_response()
                    }
                }),
            );
        }
        router
    }

    /// 200 with the checks when ready, else 503 with them.
    async fn ready(&self) -> Response {
        let mut checks = serde_json::Map::new();
        let mut ready = true;
        let draining = self.draining.is_cancelled();
        ready &= !draining;
        checks.insert("draining".into(), json!(draining));
        if let Some(store) = &self.store {
            let started = Instant::now();
            let answer = tokio::time::timeout(STORE_PROBE, store.is_alive(store.instance())).await;
            let error = match answer {
                Ok(Ok(_)) => None,
                Ok(Err(e)) => Some(e.to_string()),
                Err(_) => Some(format!("no answer within {STORE_PROBE:?}")),
            };
            ready &= error.is_none();
            checks.insert(
                "store".into(),
                json!({
                    "ok": error.is_none(),
                    "error": error,
                    "ms": started.elapsed().as_secs_f64() * 1000.0,
                }),
            );
        }
        let upstreams = (self.upstreams)();
        if !upstreams.is_empty() {
            let up = upstreams.iter().filter(|(_, up)| *up).count();
            ready &= match self.ready_upstreams {
                ReadyUpstreams::Any => up > 0,
                ReadyUpstreams::All => up == upstreams.len(),
                ReadyUpstreams::Ignore => true,
            };
            let each: serde_json::Map<_, _> = upstreams
                .into_iter()
                .map(|(n, up)| (n, json!(up)))
                .collect();
            checks.insert("upstreams".into(), serde_json::Value::Object(each));
        }
        let status = if ready {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        let body = json!({ "ready": ready, "checks": checks });
        let json = [(header::CONTENT_TYPE, "application/json")];
        (status, json, body.to_string()).into_response()
    }
}

/// Adds to `metrics` what is read at each scrape: sessions, open connections and streams
/// by transport, refusals by status, tasks, the store's round trips and time, and the
/// gateway's upstreams.
pub(crate) fn sample(
    metrics: &Metrics,
    server: &oxmcp_server::Server,
    store: Option<&Arc<dyn oxmcp_store::Store>>,
    upstreams: &UpstreamHealth,
) {
    sample_transports(metrics, server);
    if server.task_counts().is_some() {
        sample_tasks(metrics, server);
    }
    if let Some(store) = store {
        sample_store(metrics, store);
    }
    let upstreams = upstreams.clone();
    metrics.gauge_fn(
        "oxmcp_gateway_upstream_up",
        "1 when the gateway's upstream is connected, else 0",
        Some("upstream"),
        move || {
            upstreams()
                .into_iter()
                .map(|(name, up)| (name, if up { 1.0 } else { 0.0 }))
                .collect()
        },
    );
}

/// Sessions, connections and streams open, refusals.
fn sample_transports(metrics: &Metrics, server: &oxmcp_server::Server) {
    use oxmcp_http::stats::parked_sessions;
    use oxmcp_http::stats::{Transport, open, refusals};
    let sessions = server.clone();
    // A parked session has no engine connection, which is what the server counts.
    metrics.gauge_fn(
        "mcp_server_sessions",
        "Sessions and connections served now (HTTP sessions, parked ones included, WebSocket, gRPC, stdio)",
        None,
        move || {
            let n = sessions.session_count() as f64 + parked_sessions() as f64;
            vec![(String::new(), n)]
        },
    );
    metrics.gauge_fn(
        "oxmcp_http_sessions_parked",
        "Streamable HTTP sessions parked now: idle, with no engine connection running for them",
        None,
        || vec![(String::new(), parked_sessions() as f64)],
    );
    metrics.gauge_fn(
        "oxmcp_open",
        "Connections and streams open now, by transport (connection: TCP connections of the HTTP listener)",
        Some("transport"),
        || {
            Transport::ALL
                .iter()
                .map(|t| (t.label().to_owned(), open(*t) as f64))
                .collect()
        },
    );
    metrics.counter_fn(
        "oxmcp_http_refusals",
        "Requests refused before reaching a handler (limits, authentication, admission), by HTTP status",
        Some("status"),
        || {
            refusals()
                .into_iter()
                .map(|(status, n)| (status.to_string(), n as f64))
                .collect()
        },
    );
}

/// Tasks running here, and ended by status.
fn sample_tasks(metrics: &Metrics, server: &oxmcp_server::Server) {
    let (running, ended) = (server.clone(), server.clone());
    metrics.gauge_fn(
        "mcp_server_tasks_running",
        "Tasks running in this process now",
        None,
        move || {
            let n = running.task_counts().unwrap_or_default().running;
            vec![(String::new(), n as f64)]
        },
    );
    metrics.counter_fn(
        "mcp_server_tasks_ended",
        "Tasks of this process that ended, by status",
        Some("status"),
        move || {
            let c = ended.task_counts().unwrap_or_default();
            [
                ("completed", c.completed),
                ("failed", c.failed),
                ("cancelled", c.cancelled),
            ]
            .into_iter()
            .map(|(s, n)| (s.to_owned(), n as f64))
            .collect()
        },
    );
}

/// The store's round trips, operations and their time.
fn sample_store(metrics: &Metrics, store: &Arc<dyn oxmcp_store::Store>) {
    let (a, b, c) = (store.clone(), store.clone(), store.clone());
    metrics.counter_fn(
        "oxmcp_store_round_trips",
        "Requests sent to the shared store and answered",
        None,
        move || vec![(String::new(), a.stats().round_trips as f64)],
    );
    metrics.counter_fn(
        "oxmcp_store_operations",
        "Store operations timed (the bus reader's waits excluded)",
        None,
        move || vec![(String::new(), b.stats().operations as f64)],
    );
    metrics.counter_fn(
        "oxmcp_store_busy_seconds",
        "Time spent in the timed store operations (divided by oxmcp_store_operations: their mean latency)",
        None,
        move || vec![(String::new(), c.stats().busy_micros as f64 / 1e6)],
    );
}

/// Serves the probes and `/metrics` on a listener of their own (`--metrics-listen`), until the
/// returned task is aborted.
pub(crate) async fn serve_probes(
    addr: std::net::SocketAddr,
    probes: &Probes,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    use anyhow::Context as _;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} for /metrics"))?;
    eprintln!(
        "oxmcp: serving /metrics, /healthz and /readyz at http://{}",
        listener.local_addr()?
    );
    let router = probes.router(true);
    Ok(tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router).await {
            tracing::warn!("the metrics listener failed: {e}");
        }
    }))
}
