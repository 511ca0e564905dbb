//! `mcp bench`: tool-call throughput and latency of a server (stdio or Streamable HTTP), and
//! the memory an idle session costs.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::StreamExt;
use mcp_client::Client;
use mcp_types::JsonObject;
use serde_json::{Value, json};

use crate::target::{Connection, Target, connect_with};
use crate::{BenchMode, call_error};

/// What to run.
pub(crate) struct Plan {
    pub(crate) target: Target,
    pub(crate) tool: String,
    pub(crate) arguments: JsonObject,
    pub(crate) requests: usize,
    /// Run each phase this long instead of `requests` calls.
    pub(crate) duration: Option<Duration>,
    pub(crate) window: usize,
    pub(crate) mode: BenchMode,
    pub(crate) clients: usize,
    pub(crate) idle_sessions: Option<usize>,
    pub(crate) server_pid: Option<u32>,
    pub(crate) era: mcp_client::EraChoice,
    pub(crate) json: bool,
}

fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

async fn call_ok(client: &Client, plan: &Plan) -> bool {
    matches!(client.call_tool(&plan.tool, plan.arguments.clone()).await, Ok(r) if !r.failed())
}

/// Calls made so far in the running phase (for the progress display).
static DONE: AtomicUsize = AtomicUsize::new(0);

/// Whether another call should start: `calls` not reached, or the phase's time not over.
fn more(limit: usize, started: usize, deadline: Option<Instant>) -> bool {
    match deadline {
        Some(d) => Instant::now() < d,
        None => started < limit,
    }
}

/// Calls one at a time; returns per-call latencies and the error count.
async fn sequential(
    client: &Client,
    plan: &Plan,
    calls: usize,
    deadline: Option<Instant>,
) -> (Vec<Duration>, usize) {
    let mut lat = Vec::with_capacity(calls.min(1 << 20));
    let mut errors = 0;
    while more(calls, lat.len(), deadline) {
        let t = Instant::now();
        if !call_ok(client, plan).await {
            errors += 1;
        }
        lat.push(t.elapsed());
        DONE.fetch_add(1, Ordering::Relaxed);
    }
    (lat, errors)
}

/// Up to `window` calls in flight; returns the calls made, the time and the error count.
async fn pipelined(
    client: &Client,
    plan: &Plan,
    deadline: Option<Instant>,
) -> (usize, Duration, usize) {
    let start = Instant::now();
    let started = AtomicUsize::new(0);
    let (calls, errors) = futures::stream::iter(std::iter::from_fn(|| {
        let n = started.fetch_add(1, Ordering::Relaxed);
        more(plan.requests, n, deadline).then_some(())
    }))
    .map(|()| async {
        let ok = call_ok(client, plan).await;
        DONE.fetch_add(1, Ordering::Relaxed);
        usize::from(!ok)
    })
    .buffer_unordered(plan.window.max(1))
    .fold((0, 0), |(n, e), err| async move { (n + 1, e + err) })
    .await;
    (calls, start.elapsed(), errors)
}

/// A spinner on stderr (terminals only) showing calls done and the rate, until dropped.
struct Ticker(
    Option<tokio::task::JoinHandle<()>>,
    Option<indicatif::ProgressBar>,
);

impl Ticker {
    fn start(phase: &str) -> Self {
        DONE.store(0, Ordering::Relaxed);
        if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            return Ticker(None, None);
        }
        let bar = indicatif::ProgressBar::new_spinner();
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
        {
            bar.set_style(style);
        }
        let b = bar.clone();
        let phase = phase.to_owned();
        let start = Instant::now();
        let task = tokio::spawn(async move {
            loop {
                let n = DONE.load(Ordering::Relaxed);
                b.set_message(format!(
                    "{phase}: {n} calls, {:.0}/s",
                    rate(n, start.elapsed())
                ));
                b.tick();
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        Ticker(Some(task), Some(bar))
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        if let Some(t) = self.0.take() {
            t.abort();
        }
        if let Some(b) = self.1.take() {
            b.finish_and_clear();
        }
    }
}

fn rate(n: usize, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64().max(1e-9)
}

fn percentiles(mut lat: Vec<Duration>) -> Value {
    if lat.is_empty() {
        return Value::Null;
    }
    lat.sort_unstable();
    let at = |p: f64| {
        let i = ((lat.len() as f64 - 1.0) * p).round() as usize;
        lat[i.min(lat.len() - 1)].as_secs_f64() * 1e3
    };
    json!({"p50_ms": at(0.50), "p90_ms": at(0.90), "p99_ms": at(0.99), "max_ms": at(1.0)})
}

async fn close_all(conns: Vec<Connection>) {
    futures::future::join_all(conns.into_iter().map(Connection::close)).await;
}

/// Server RSS growth per session for `n` idle sessions opened with `http` settings.
async fn rss_per_session(
    plan: &Plan,
    pid: u32,
    n: usize,
    http: &mcp_http::HttpClientConfig,
) -> anyhow::Result<Value> {
    let before = status_kib(pid, "VmRSS:").context("cannot read the server's RSS")?;
    let mut conns = Vec::with_capacity(n);
    for _ in 0..n {
        conns.push(connect_with(&plan.target, http.clone(), plan.era).await?);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = status_kib(pid, "VmRSS:").context("cannot read the server's RSS")?;
    close_all(conns).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let closed = status_kib(pid, "VmRSS:");
    let per = (after.saturating_sub(before) as f64 * 1024.0) / n as f64;
    Ok(json!({
        "rss_before_kib": before, "rss_with_sessions_kib": after,
        "rss_after_close_kib": closed, "bytes_per_session": per,
    }))
}

/// RSS per idle session, twice: sessions that keep a GET stream (and so a connection) open,
/// and bare sessions whose clients hold no connection.
async fn idle_sessions(plan: &Plan, n: usize) -> anyhow::Result<Value> {
    let Some(pid) = plan.server_pid else {
        bail!("--idle-sessions needs --server-pid (the server's RSS is what is measured)");
    };
    // Bare sessions first: once memory has been freed, later phases reuse it and read low.
    let bare = mcp_http::HttpClientConfig {
        standalone_stream: false,
        reuse_connections: false,
        ..Default::default()
    };
    let without = rss_per_session(plan, pid, n, &bare).await?;
    let with_stream = rss_per_session(plan, pid, n, &mcp_http::HttpClientConfig::default()).await?;
    Ok(json!({"idle_sessions": n, "with_get_stream": with_stream, "session_only": without}))
}

async fn throughput(plan: &Plan) -> anyhow::Result<Value> {
    let first = connect_with(
        &plan.target,
        mcp_http::HttpClientConfig::default(),
        plan.era,
    )
    .await?;
    let pid = match plan.server_pid {
        Some(p) => Some(p),
        None => first.client.child_pid().await,
    };
    for _ in 0..200.min(plan.requests) {
        first
            .client
            .call_tool(&plan.tool, plan.arguments.clone())
            .await
            .map_err(call_error)?;
    }
    let mut report = match plan.duration {
        Some(d) => json!({"duration_s": d.as_secs_f64(), "clients": plan.clients}),
        None => json!({"requests": plan.requests, "clients": plan.clients}),
    };
    let mut errors = 0;
    if plan.clients > 1 {
        let mut conns = vec![first];
        for _ in 1..plan.clients {
            conns.push(
                connect_with(
                    &plan.target,
                    mcp_http::HttpClientConfig::default(),
                    plan.era,
                )
                .await?,
            );
        }
        let per_client = plan.requests.div_ceil(plan.clients);
        let ticker = Ticker::start(&format!("{} clients", plan.clients));
        let start = Instant::now();
        let deadline = plan.duration.map(|d| start + d);
        let results = futures::future::join_all(
            conns
                .iter()
                .map(|c| sequential(&c.client, plan, per_client, deadline)),
        )
        .await;
        drop(ticker);
        let elapsed = start.elapsed();
        let mut lat = Vec::new();
        for (l, e) in results {
            lat.extend(l);
            errors += e;
        }
        report["calls"] = json!(lat.len());
        report["calls_per_sec"] = json!(rate(lat.len(), elapsed));
        report["latency"] = percentiles(lat);
        if let Some(pid) = pid {
            report["server_peak_rss_kib"] = json!(status_kib(pid, "VmHWM:"));
        }
        close_all(conns).await;
    } else {
        if plan.mode != BenchMode::Pipelined {
            let ticker = Ticker::start("sequential");
            let start = Instant::now();
            let deadline = plan.duration.map(|d| start + d);
            let (lat, e) = sequential(&first.client, plan, plan.requests, deadline).await;
            drop(ticker);
            report["sequential_calls"] = json!(lat.len());
            report["sequential_calls_per_sec"] = json!(rate(lat.len(), start.elapsed()));
            report["latency"] = percentiles(lat);
            errors += e;
        }
        if plan.mode != BenchMode::Sequential {
            let ticker = Ticker::start("pipelined");
            let deadline = plan.duration.map(|d| Instant::now() + d);
            let (n, d, e) = pipelined(&first.client, plan, deadline).await;
            drop(ticker);
            report["pipelined_calls"] = json!(n);
            report["pipelined_calls_per_sec"] = json!(rate(n, d));
            report["window"] = json!(plan.window);
            errors += e;
        }
        if let Some(pid) = pid {
            report["server_peak_rss_kib"] = json!(status_kib(pid, "VmHWM:"));
        }
        first.close().await;
    }
    report["errors"] = json!(errors);
    Ok(report)
}

/// Runs the plan and prints the figures.
pub(crate) async fn run(plan: Plan) -> anyhow::Result<()> {
    let report = match plan.idle_sessions {
        Some(n) => idle_sessions(&plan, n).await?,
        None => throughput(&plan).await?,
    };
    if plan.json {
        println!("{report}");
    } else {
        let mut out = std::io::stdout().lock();
        if let Value::Object(m) = &report {
            for (k, v) in m {
                let v = match v {
                    Value::Number(n) if n.is_u64() || n.is_i64() => n.to_string(),
                    Value::Number(n) => n
                        .as_f64()
                        .map_or_else(|| n.to_string(), |f| format!("{f:.1}")),
                    Value::Object(o) => o
                        .iter()
                        .map(|(k, v)| format!("{k}={:.2}", v.as_f64().unwrap_or(0.0)))
                        .collect::<Vec<_>>()
                        .join(" "),
                    other => other.to_string(),
                };
                writeln!(out, "{k:28} {v}")?;
            }
        }
    }
    let errors = report["errors"].as_u64().unwrap_or(0);
    if errors > 0 {
        bail!("{errors} calls failed");
    }
    Ok(())
}
