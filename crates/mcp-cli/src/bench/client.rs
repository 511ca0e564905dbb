//! The SDK's `Client` as the driver: stdio servers (sequential and pipelined phases on one
//! connection, or N connections), and Streamable HTTP with `--driver client`. Every result
//! is checked like the raw driver's.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use futures::StreamExt;
use mcp_client::{CallError, Client};
use mcp_types::Content;
use serde_json::{Value, json};

use super::check::{Failure, Tally};
use super::stats::{CpuWatch, DONE, Ticker, status_kib};
use super::{Phase, Plan};
use crate::BenchMode;
use crate::target::{Connection, connect_with};

fn failure(e: CallError) -> Failure {
    match e {
        CallError::Rpc(e) => Failure::Rpc(i64::from(e.code.0), e.message),
        CallError::Timeout(_) => Failure::Timeout,
        CallError::Decode(e) => Failure::Wrong(format!("undecodable result: {e}")),
        other => Failure::Transport(other.to_string()),
    }
}

/// One checked call, number `n`.
async fn call(client: &Client, plan: &Plan, n: u64) -> Result<(), Failure> {
    let (args, sent) = plan.payload.arguments(n);
    let result = client.call_tool(&plan.tool, args).await.map_err(failure)?;
    let texts = result.content.iter().filter_map(|c| match c {
        Content::Text(t) => Some(t.text.as_str()),
        _ => None,
    });
    plan.expect.check(sent.as_deref(), result.failed(), texts)
}

/// How many calls a phase makes: `requests`, or as many as fit in `duration`.
struct Budget {
    started: AtomicUsize,
    limit: usize,
    deadline: Option<Instant>,
}

impl Budget {
    fn new(plan: &Plan, start: Instant) -> Budget {
        Budget {
            started: AtomicUsize::new(0),
            limit: plan.requests,
            deadline: plan.duration.map(|d| start + d),
        }
    }

    /// Whether one more call may start.
    fn take(&self) -> bool {
        let n = self.started.fetch_add(1, Ordering::Relaxed);
        match self.deadline {
            Some(d) => Instant::now() < d,
            None => n < self.limit,
        }
    }
}

/// Calls one at a time until the budget is spent.
async fn sequential(client: &Client, plan: &Plan, budget: &Budget, next: &AtomicU64) -> Tally {
    let mut tally = Tally::default();
    while budget.take() {
        let n = next.fetch_add(1, Ordering::Relaxed);
        let t = Instant::now();
        let outcome = call(client, plan, n).await;
        tally.record(outcome, t.elapsed());
        DONE.fetch_add(1, Ordering::Relaxed);
    }
    tally
}

/// Up to `window` calls in flight until the budget is spent.
async fn pipelined(client: &Client, plan: &Plan, budget: &Budget, next: &AtomicU64) -> Tally {
    futures::stream::iter(std::iter::from_fn(|| budget.take().then_some(())))
        .map(|()| async {
            let n = next.fetch_add(1, Ordering::Relaxed);
            let t = Instant::now();
            let outcome = call(client, plan, n).await;
            DONE.fetch_add(1, Ordering::Relaxed);
            (outcome, t.elapsed())
        })
        .buffer_unordered(plan.window.max(1))
        .fold(
            Tally::default(),
            |mut tally, (outcome, latency)| async move {
                tally.record(outcome, latency);
                tally
            },
        )
        .await
}

async fn close_all(conns: Vec<Connection>) {
    futures::future::join_all(conns.into_iter().map(Connection::close)).await;
}

/// Runs the phases; returns them and the report's other fields (CPU, server memory), read
/// before a child server is closed.
pub(crate) async fn run(plan: &Plan) -> anyhow::Result<(Vec<Phase>, Value)> {
    let http = mcp_http::HttpClientConfig::default();
    let first = connect_with(&plan.target, http.clone(), plan.era).await?;
    let pid = match plan.server_pid {
        Some(p) => Some(p),
        None => first.client.child_pid().await,
    };
    let watch = CpuWatch::start(pid);
    let mut extra = json!({});
    let server_figures = |extra: &mut Value| {
        extra["cpu"] = watch.stop();
        if let Some(pid) = pid {
            extra["server_peak_rss_kib"] = json!(status_kib(pid, "VmHWM:"));
        }
    };
    let next = AtomicU64::new(1);
    let mut phases = Vec::new();
    if plan.clients > 1 {
        let mut conns = vec![first];
        for _ in 1..plan.clients {
            conns.push(connect_with(&plan.target, http.clone(), plan.era).await?);
        }
        let ticker = Ticker::start(&format!("{} clients", plan.clients));
        let start = Instant::now();
        let budget = Budget::new(plan, start);
        let tallies = futures::future::join_all(
            conns
                .iter()
                .map(|c| sequential(&c.client, plan, &budget, &next)),
        )
        .await;
        let elapsed = start.elapsed();
        drop(ticker);
        let mut tally = Tally::default();
        for t in tallies {
            tally.merge(t);
        }
        phases.push(Phase::new(
            "concurrent",
            "calls",
            plan.clients,
            tally,
            elapsed,
        ));
        server_figures(&mut extra);
        close_all(conns).await;
    } else {
        if plan.mode != BenchMode::Pipelined {
            let ticker = Ticker::start("sequential");
            let start = Instant::now();
            let tally = sequential(&first.client, plan, &Budget::new(plan, start), &next).await;
            let elapsed = start.elapsed();
            drop(ticker);
            phases.push(Phase::new("sequential", "calls", 1, tally, elapsed));
        }
        if plan.mode != BenchMode::Sequential {
            let ticker = Ticker::start("pipelined");
            let start = Instant::now();
            let tally = pipelined(&first.client, plan, &Budget::new(plan, start), &next).await;
            let elapsed = start.elapsed();
            drop(ticker);
            phases.push(Phase::new("pipelined", "calls", 1, tally, elapsed));
            extra["window"] = json!(plan.window);
        }
        server_figures(&mut extra);
        first.close().await;
    }
    Ok((phases, extra))
}
