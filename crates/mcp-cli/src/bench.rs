//! `mcp bench`: tool-call throughput and latency of a server (stdio or Streamable HTTP), and
//! the memory an idle session costs.

use std::io::Write;
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

/// Calls one at a time; returns per-call latencies and the error count.
async fn sequential(client: &Client, plan: &Plan, calls: usize) -> (Vec<Duration>, usize) {
    let mut lat = Vec::with_capacity(calls);
    let mut errors = 0;
    for _ in 0..calls {
        let t = Instant::now();
        if !call_ok(client, plan).await {
            errors += 1;
        }
        lat.push(t.elapsed());
    }
    (lat, errors)
}

async fn pipelined(client: &Client, plan: &Plan) -> (Duration, usize) {
    let start = Instant::now();
    let errors = futures::stream::iter(0..plan.requests)
        .map(|_| async { usize::from(!call_ok(client, plan).await) })
        .buffer_unordered(plan.window.max(1))
        .fold(0, |acc, e| async move { acc + e })
        .await;
    (start.elapsed(), errors)
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
    let mut report = json!({"requests": plan.requests, "clients": plan.clients});
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
        let start = Instant::now();
        let results = futures::future::join_all(
            conns
                .iter()
                .map(|c| sequential(&c.client, plan, per_client)),
        )
        .await;
        let elapsed = start.elapsed();
        let mut lat = Vec::new();
        for (l, e) in results {
            lat.extend(l);
            errors += e;
        }
        report["calls_per_sec"] = json!(rate(lat.len(), elapsed));
        report["latency"] = percentiles(lat);
        close_all(conns).await;
    } else {
        if plan.mode != BenchMode::Pipelined {
            let start = Instant::now();
            let (lat, e) = sequential(&first.client, plan, plan.requests).await;
            report["sequential_calls_per_sec"] = json!(rate(plan.requests, start.elapsed()));
            report["latency"] = percentiles(lat);
            errors += e;
        }
        if plan.mode != BenchMode::Sequential {
            let (d, e) = pipelined(&first.client, plan).await;
            report["pipelined_calls_per_sec"] = json!(rate(plan.requests, d));
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
