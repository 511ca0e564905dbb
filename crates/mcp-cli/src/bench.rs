//! `mcp bench`: tool-call throughput of a stdio server, sequential and pipelined, with the
//! server's peak RSS.

use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::bail;
use futures::StreamExt;
use mcp_client::Client;
use mcp_types::JsonObject;

use crate::{BenchMode, call_error};

/// What to run.
pub(crate) struct Plan {
    pub(crate) tool: String,
    pub(crate) arguments: JsonObject,
    pub(crate) requests: usize,
    pub(crate) window: usize,
    pub(crate) mode: BenchMode,
    pub(crate) json: bool,
}

fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

async fn sequential(client: &Client, plan: &Plan) -> (Duration, usize) {
    let start = Instant::now();
    let mut errors = 0;
    for _ in 0..plan.requests {
        match client.call_tool(&plan.tool, plan.arguments.clone()).await {
            Ok(r) if !r.failed() => {}
            _ => errors += 1,
        }
    }
    (start.elapsed(), errors)
}

async fn pipelined(client: &Client, plan: &Plan) -> (Duration, usize) {
    let start = Instant::now();
    let errors = futures::stream::iter(0..plan.requests)
        .map(|_| async {
            let r = client.call_tool(&plan.tool, plan.arguments.clone()).await;
            usize::from(!matches!(r, Ok(r) if !r.failed()))
        })
        .buffer_unordered(plan.window.max(1))
        .fold(0, |acc, e| async move { acc + e })
        .await;
    (start.elapsed(), errors)
}

fn rate(requests: usize, d: Duration) -> f64 {
    requests as f64 / d.as_secs_f64().max(1e-9)
}

/// Runs the plan and prints the figures.
pub(crate) async fn run(client: Client, plan: Plan) -> anyhow::Result<()> {
    let pid = client.child_pid().await;
    for _ in 0..200.min(plan.requests) {
        client
            .call_tool(&plan.tool, plan.arguments.clone())
            .await
            .map_err(call_error)?;
    }
    let mut errors = 0;
    let mut seq = None;
    let mut pipe = None;
    if plan.mode != BenchMode::Pipelined {
        let (d, e) = sequential(&client, &plan).await;
        seq = Some(rate(plan.requests, d));
        errors += e;
    }
    if plan.mode != BenchMode::Sequential {
        let (d, e) = pipelined(&client, &plan).await;
        pipe = Some(rate(plan.requests, d));
        errors += e;
    }
    let rss = pid.and_then(peak_rss_kib);
    client.close().await;
    if plan.json {
        let figures = serde_json::json!({
            "requests": plan.requests, "window": plan.window,
            "sequential_calls_per_sec": seq, "pipelined_calls_per_sec": pipe,
            "errors": errors, "server_peak_rss_kib": rss,
        });
        println!("{figures}");
    } else {
        let mut out = std::io::stdout().lock();
        writeln!(out, "calls per phase:   {}", plan.requests)?;
        if let Some(r) = seq {
            writeln!(out, "sequential:        {r:.0} calls/s")?;
        }
        if let Some(r) = pipe {
            writeln!(out, "pipelined (w={}): {r:.0} calls/s", plan.window)?;
        }
        writeln!(out, "errors:            {errors}")?;
        if let Some(kib) = rss {
            writeln!(out, "server peak RSS:   {:.1} MiB", kib as f64 / 1024.0)?;
        }
    }
    if errors > 0 {
        bail!("{errors} calls failed");
    }
    Ok(())
}
