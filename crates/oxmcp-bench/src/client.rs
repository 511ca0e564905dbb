//! The SDK's `Client` as the driver: stdio servers (sequential and pipelined phases on one
//! connection, or N connections), and Streamable HTTP with `--driver client`. Every result
//! is checked like the raw driver's.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use futures::StreamExt;
use oxmcp_client::{CallError, Client};
use oxmcp_types::Content;
use serde_json::{Value, json};

use crate::args::BenchMode;
use crate::check::{Failure, Tally};
use crate::run::{Phase, Plan};
use crate::stats::{CpuWatch, DONE, Ticker, status_kib};
use crate::target::{Connection, connect_with};

fn failure(e: CallError) -> Failure {
    match e {
        CallError::Rpc(e) => Failure::Rpc(i64::from(e.code.0), e.message),
        CallError::Timeout(_) => Failure::Timeout,
        CallError::Decode(e) => Failure::Wrong(format!("undecodable result: {e}")),
        other => Failure::Transport(other.to_string()),
    }
}

/// A read's item: its blob (base64) or its text.
fn body(c: &oxmcp_types::ResourceContents) -> &str {
    c.blob.as_deref().or(c.text.as_deref()).unwrap_or_default()
}

/// One checked read of `--read`'s resource: the same contents as the first read.
async fn read(client: &Client, read: &crate::run::Read) -> Result<(), Failure> {
    let result = client.read_resource(&read.uri).await.map_err(failure)?;
    let size: usize = result.contents.iter().map(|c| body(c).len()).sum();
    if size == 0 {
        return Err(Failure::Wrong("empty contents".to_owned()));
    }
    let first = read
        .first
        .get_or_init(|| result.contents.iter().map(|c| body(c).to_owned()).collect());
    let same = first.len() == result.contents.len()
        && first
            .iter()
            .zip(&result.contents)
            .all(|(f, c)| f == body(c));
    if !same {
        let before: usize = first.iter().map(String::len).sum();
        return Err(Failure::Wrong(format!(
            "contents differ from the first read ({size} against {before} bytes)"
        )));
    }
    Ok(())
}

/// One checked call, number `n`.
async fn call(client: &Client, plan: &Plan, n: u64) -> Result<(), Failure> {
    if let Some(r) = &plan.read {
        return read(client, r).await;
    }
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

/// The relay's bytes per call since it was last read (`--wire`), into the report.
fn wire_figures(extra: &mut Value, relay: Option<&crate::relay::Relay>, calls: u64) {
    let Some(relay) = relay else { return };
    let (sent, received) = relay.take();
    if extra.get("wire").is_some() || calls == 0 {
        return; // the first phase's figures stand
    }
    extra["wire"] = json!({
        "calls": calls,
        "sent_bytes": sent,
        "received_bytes": received,
        "sent_per_call": sent as f64 / calls as f64,
        "received_per_call": received as f64 / calls as f64,
    });
}

async fn close_all(conns: Vec<Connection>) {
    futures::future::join_all(conns.into_iter().map(Connection::close)).await;
}

/// Runs the phases; returns them and the report's other fields (CPU, server memory), read
/// before a child server is closed.
pub(crate) async fn run(
    plan: &Plan,
    relay: Option<&crate::relay::Relay>,
) -> anyhow::Result<(Vec<Phase>, Value)> {
    let http = oxmcp_http::HttpClientConfig::default().encoding(plan.encoding);
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
        relay.map(crate::relay::Relay::take);
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
        wire_figures(&mut extra, relay, tally.total());
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
            relay.map(crate::relay::Relay::take);
            let start = Instant::now();
            let tally = sequential(&first.client, plan, &Budget::new(plan, start), &next).await;
            let elapsed = start.elapsed();
            drop(ticker);
            wire_figures(&mut extra, relay, tally.total());
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
