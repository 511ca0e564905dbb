//! The run: the [`Plan`] made from the command line, its measured [`Phase`]s, and the report
//! (human lines or JSON) of tool-call throughput and latency, bursts of new sessions, the
//! memory an idle session costs, and cold starts.
//!
//! Every answer is checked: its id, then its result (for `echo`, the text must be the
//! message that call sent, and each call sends another). A phase reports its error count
//! beside every figure, and a phase with errors reports them instead of a rate.
//!
//! Drivers: [`crate::client`] (the SDK's `Client`: stdio servers, WebSocket and gRPC, or HTTP
//! with `--driver client`) and the raw HTTP driver ([`crate::wire`]: JSON-RPC POSTed over
//! hyper) for the shapes in [`crate::calls`] (N connections with a session each, one session
//! shared by all, or stateless 2026-07-28) and [`crate::burst`] (N new sessions at once).
//! [`crate::idle`]: server memory per idle session; [`crate::cold`]: cold starts.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::bail;
use serde_json::{Map, Value, json};

use crate::args::BenchMode;
use crate::check::Tally;
pub(crate) use crate::check::{Expect, Payload};
use crate::stats::{CpuWatch, percentiles, rate, status_kib};
use crate::target::Target;
use crate::{burst, calls, client, cold, idle, lean_stdio, relay};

/// Who sends the requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Driver {
    /// JSON-RPC POSTed straight over hyper (Streamable HTTP only).
    Raw,
    /// The SDK's `Client`.
    Client,
}

/// How the raw driver's connections use sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sessions {
    /// A session per connection.
    Each,
    /// One session, all connections calling in it.
    Shared,
    /// None: 2026-07-28 requests.
    Stateless,
}

/// What to run.
pub(crate) struct Plan {
    pub(crate) target: Target,
    pub(crate) driver: Driver,
    pub(crate) tool: String,
    pub(crate) payload: Payload,
    pub(crate) expect: Expect,
    pub(crate) requests: usize,
    /// Run each phase this long instead of `requests` calls.
    pub(crate) duration: Option<Duration>,
    pub(crate) window: usize,
    pub(crate) mode: BenchMode,
    pub(crate) clients: usize,
    /// Raw driver, legacy era: one session for all connections.
    pub(crate) shared_session: bool,
    /// Open this many sessions at once instead of calling.
    pub(crate) burst: Option<usize>,
    pub(crate) idle_sessions: Option<usize>,
    /// Start the stdio server this many times instead of calling.
    pub(crate) cold_start: Option<usize>,
    /// The CPU a cold start's server runs on, from its first instruction.
    pub(crate) server_cpu: Option<usize>,
    pub(crate) server_pid: Option<u32>,
    /// More endpoints of the same deployment; calls rotate over the URL and these.
    pub(crate) also: Vec<String>,
    pub(crate) era: oxmcp_client::EraChoice,
    pub(crate) json: bool,
    /// Read this resource per call instead of calling the tool.
    pub(crate) read: Option<Read>,
    /// The client's encoding.
    pub(crate) encoding: oxmcp_http::BodyEncoding,
    /// Count bytes on the wire through a relay.
    pub(crate) wire: bool,
}

/// `--read URI`: the resource, and the contents of its first answer (each item's blob or
/// text), which every later answer must match byte for byte.
pub(crate) struct Read {
    pub(crate) uri: String,
    pub(crate) first: std::sync::OnceLock<Vec<String>>,
}

impl Read {
    pub(crate) fn new(uri: String) -> Read {
        Read {
            uri,
            first: std::sync::OnceLock::new(),
        }
    }
}

/// One measured phase: what ran and how its answers checked out.
pub(crate) struct Phase {
    name: &'static str,
    /// What the tally counts: calls, sessions, setups.
    unit: &'static str,
    connections: usize,
    pub(crate) tally: Tally,
    elapsed: Duration,
}

impl Phase {
    pub(crate) fn new(
        name: &'static str,
        unit: &'static str,
        connections: usize,
        tally: Tally,
        elapsed: Duration,
    ) -> Phase {
        Phase {
            name,
            unit,
            connections,
            tally,
            elapsed,
        }
    }

    /// Setup is checked like the rest but is no figure.
    fn is_figure(&self) -> bool {
        self.name != "setup"
    }

    fn to_json(&self) -> Value {
        let t = &self.tally;
        let mut v = Map::new();
        v.insert("connections".into(), json!(self.connections));
        v.insert(self.unit.into(), json!(t.total()));
        v.insert("ok".into(), json!(t.ok));
        v.insert("errors".into(), json!(t.errors()));
        v.insert("seconds".into(), json!(self.elapsed.as_secs_f64()));
        if t.errors() == 0 {
            if self.is_figure() {
                let r = rate(t.total(), self.elapsed);
                v.insert(format!("{}_per_sec", self.unit), json!(r));
                v.insert("latency".into(), percentiles(t.latencies.clone()));
            }
        } else {
            let kinds: Map<String, Value> = t
                .failures
                .iter()
                .map(|(k, (n, _))| (k.clone(), json!(n)))
                .collect();
            let examples: Map<String, Value> = t
                .failures
                .iter()
                .map(|(k, (_, d))| (k.clone(), json!(d)))
                .collect();
            v.insert("error_kinds".into(), Value::Object(kinds));
            v.insert("error_examples".into(), Value::Object(examples));
        }
        Value::Object(v)
    }

    /// The human line(s): counts, errors, then either the rate and latency or the errors.
    fn lines(&self) -> String {
        let t = &self.tally;
        let mut s = format!(
            "{:11} {} connection{}, {} {}, {} errors",
            self.name,
            self.connections,
            if self.connections == 1 { "" } else { "s" },
            t.total(),
            self.unit,
            t.errors()
        );
        if t.errors() > 0 {
            let _ = write!(s, " (answers that failed the check; no rate is given)");
            for (kind, (n, detail)) in &t.failures {
                let _ = write!(s, "\n{:11}   {kind} x{n}: {detail}", "");
            }
        } else if self.is_figure() {
            let _ = write!(s, ", {:.0} {}/s", rate(t.total(), self.elapsed), self.unit);
            if let Value::Object(p) = percentiles(t.latencies.clone()) {
                let ms = |k: &str| p.get(k).and_then(Value::as_f64).unwrap_or(0.0);
                let _ = write!(
                    s,
                    ", latency ms p50 {:.3} p90 {:.3} p99 {:.3} max {:.3}",
                    ms("p50_ms"),
                    ms("p90_ms"),
                    ms("p99_ms"),
                    ms("max_ms")
                );
            }
        }
        s
    }
}

/// The raw driver's shapes; returns the phases, the report's other fields and a description.
async fn raw(plan: &Plan, url: &str) -> anyhow::Result<(Vec<Phase>, Value, String)> {
    let sessions = match (plan.era, plan.shared_session) {
        (oxmcp_client::EraChoice::Modern, false) => Sessions::Stateless,
        (oxmcp_client::EraChoice::Modern, true) => {
            bail!("--session shared is for the legacy era (2026-07-28 has no sessions)")
        }
        (oxmcp_client::EraChoice::Legacy, false) => Sessions::Each,
        (oxmcp_client::EraChoice::Legacy, true) => Sessions::Shared,
        (_, _) => bail!("the raw driver speaks --era legacy or modern (auto: --driver client)"),
    };
    let watch = CpuWatch::start(plan.server_pid);
    let (phases, mut extra, shape) = match plan.burst {
        Some(n) => {
            if sessions != Sessions::Each || !url.starts_with("http://") {
                bail!("--burst opens legacy Streamable HTTP sessions, one per connection");
            }
            let shape = format!("a burst of {n} new sessions at once, a connection each");
            (burst::run(url, n).await?, json!({}), shape)
        }
        None => {
            let shape = match sessions {
                Sessions::Each => "legacy era, a session per connection",
                Sessions::Shared => "legacy era, one session shared by all connections",
                Sessions::Stateless => "2026-07-28, no session",
            };
            let (phases, extra) = calls::run(plan, url, sessions).await?;
            (phases, extra, shape.to_owned())
        }
    };
    extra["cpu"] = watch.stop();
    if let Some(pid) = plan.server_pid {
        extra["server_peak_rss_kib"] = json!(status_kib(pid, "VmHWM:"));
    }
    let how = if url.starts_with("ws://") {
        "raw WebSocket driver (one thread; its own frames, each connection its session)"
    } else if url.starts_with("grpc://") {
        "raw gRPC driver (one thread; h2, its own envelopes, each connection's Connect stream its session)"
    } else {
        "raw HTTP driver (one thread; timed calls on its own lean HTTP/1.1, sessions opened over hyper)"
    };
    Ok((phases, extra, format!("{how}, {shape}")))
}

/// The raw stdio driver's phases; returns them, the report's other fields and a description.
async fn raw_stdio(plan: &Plan, command: &[String]) -> anyhow::Result<(Vec<Phase>, Value, String)> {
    let (phases, extra) = lean_stdio::run(plan, command).await?;
    let how = "raw stdio driver (one thread; requests rendered and written together, answers \
               compared by their bytes)";
    Ok((phases, extra, how.to_owned()))
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// The CPU line: what the driver and the server used while the phases ran.
fn cpu_line(cpu: &Value) -> Option<String> {
    let wall = cpu["wall_s"].as_f64()?;
    let driver = cpu["driver_cpu_s"].as_f64()?;
    let mut s = format!(
        "{:11} driver {driver:.2} s ({:.0}% of one core)",
        "cpu",
        100.0 * driver / wall.max(1e-9)
    );
    if let Some(server) = cpu["server_cpu_s"].as_f64() {
        let _ = write!(s, ", server {server:.2} s");
    }
    let _ = write!(
        s,
        " in {wall:.2} s; driver and server share this machine's {} cores",
        cores()
    );
    Some(s)
}

/// `--cold-start N`: N fresh server processes, spawn to `initialize` answered, and RSS after
/// the first call.
async fn cold_start(plan: &Plan, n: usize) -> anyhow::Result<()> {
    let Target::Command(command) = &plan.target else {
        bail!("--cold-start starts a stdio server: give its command after --");
    };
    // Blocking is fine: nothing else runs on the bench's one-thread runtime meanwhile.
    let starts = cold::run(plan, command, n)?;
    let mut rss = starts.rss_kib;
    rss.sort_unstable();
    let rss_median = rss.get(rss.len() / 2).copied();
    let mut anon = starts.anon_kib;
    anon.sort_unstable();
    let anon_median = anon.get(anon.len() / 2).copied();
    let tally = starts.tally;
    let errors = tally.errors();
    let latency = percentiles(tally.latencies.clone());
    let checked = format!(
        "initialize answered with protocolVersion, then one tools/call: {}",
        plan.expect.describe(&plan.payload)
    );
    if plan.json {
        let report = json!({"target": plan.target.describe(), "checked": checked,
            "starts": tally.total(), "errors": errors, "spawn_to_initialize": latency,
            "server_cpus": starts.server_cpus, "driver_cpus": starts.driver_cpus,
            "rss_after_first_call_kib": {"median": rss_median, "min": rss.first(), "max": rss.last()},
            "rss_anon_after_first_call_kib": {"median": anon_median, "min": anon.first(), "max": anon.last()}});
        println!("{report}");
    } else {
        println!("{:11} {}", "target", plan.target.describe());
        println!("{:11} {checked}", "checked");
        let mut line = format!(
            "{:11} {} starts, {errors} errors",
            "cold start",
            tally.total()
        );
        for (kind, (n, detail)) in &tally.failures {
            let _ = write!(line, "\n{:11}   {kind} x{n}: {detail}", "");
        }
        if errors == 0 {
            let ms = |k: &str| latency[k].as_f64().unwrap_or_default();
            let _ = write!(
                line,
                ", spawn to initialize answered ms p50 {:.2} p90 {:.2} max {:.2}",
                ms("p50_ms"),
                ms("p90_ms"),
                ms("max_ms")
            );
        }
        println!("{line}");
        if let Some(cpus) = &starts.server_cpus {
            println!(
                "{:11} on CPUs {cpus} (the driver's: {})",
                "server",
                starts.driver_cpus.as_deref().unwrap_or("unknown")
            );
        }
        if let (Some(kib), Some(lo), Some(hi)) = (rss_median, rss.first(), rss.last()) {
            println!(
                "{:11} RSS after the first call: median {:.1} MiB (min {:.1}, max {:.1}), \
                 anonymous {:.1} MiB",
                "server",
                kib as f64 / 1024.0,
                *lo as f64 / 1024.0,
                *hi as f64 / 1024.0,
                anon_median.unwrap_or_default() as f64 / 1024.0
            );
        }
    }
    if errors > 0 {
        bail!("cold start: {errors} of {n} starts failed the check");
    }
    Ok(())
}

/// Runs the plan and prints the figures; fails when any answer failed its check.
pub(crate) async fn run(mut plan: Plan) -> anyhow::Result<()> {
    let relay = match (&plan.target, plan.wire) {
        (Target::Url(url), true) => {
            let (through, relay) = relay::relayed(url).await?;
            plan.target = Target::Url(through);
            Some(relay)
        }
        (Target::Command(_), true) => bail!("--wire counts bytes of a URL's connections"),
        _ => None,
    };
    if let Some(n) = plan.idle_sessions {
        let report = idle::run(&plan, n).await?;
        if plan.json {
            println!("{report}");
        } else {
            println!("{}", serde_json::to_string_pretty(&report)?);
        }
        return Ok(());
    }
    if let Some(n) = plan.cold_start {
        return cold_start(&plan, n).await;
    }
    let (phases, extra, driver) = match (&plan.target, plan.driver) {
        (Target::Url(url), Driver::Raw) => raw(&plan, url).await?,
        (Target::Command(command), Driver::Raw) => raw_stdio(&plan, command).await?,
        (_, Driver::Client) => {
            if plan.burst.is_some() || plan.shared_session {
                bail!("--burst and --session shared use the raw driver");
            }
            let (phases, extra) = client::run(&plan, relay.as_ref()).await?;
            (phases, extra, "the SDK's Client".to_owned())
        }
    };
    let errors: u64 = phases.iter().map(|p| p.tally.errors()).sum();
    let check = if plan.burst.is_some() {
        "initialize answered (status 200, id, protocolVersion), notifications/initialized \
         accepted (2xx)"
            .to_owned()
    } else if let Some(read) = &plan.read {
        format!(
            "id, and the contents of {} are those of the first read (compared)",
            read.uri
        )
    } else {
        plan.expect.describe(&plan.payload)
    };
    if plan.json {
        let mut report = json!({
            "target": plan.target.describe(), "driver": driver, "tool": plan.tool,
            "checked": check, "errors": errors, "cores": cores(),
            "phases": phases.iter().map(|p| (p.name.to_owned(), p.to_json())).collect::<Map<_, _>>(),
        });
        if let (Value::Object(r), Value::Object(e)) = (&mut report, extra) {
            r.extend(e);
        }
        println!("{report}");
    } else {
        print_human(&plan, &phases, &extra, &driver, &check);
    }
    if errors > 0 {
        let failed: Vec<String> = phases
            .iter()
            .filter(|p| p.tally.errors() > 0)
            .map(|p| {
                format!(
                    "{}: {} of {} {} failed the check",
                    p.name,
                    p.tally.errors(),
                    p.tally.total(),
                    p.unit
                )
            })
            .collect();
        bail!("{}", failed.join("; "));
    }
    Ok(())
}

/// The human report: the target, what was checked, a line per phase, then CPU, bytes on the
/// wire, server memory and reopened connections where measured.
fn print_human(plan: &Plan, phases: &[Phase], extra: &Value, driver: &str, check: &str) {
    println!("{:11} {}, {driver}", "target", plan.target.describe());
    println!("{:11} {check}", "checked");
    for p in phases {
        if p.is_figure() || p.tally.errors() > 0 {
            println!("{}", p.lines());
        }
    }
    if let Some(line) = cpu_line(&extra["cpu"]) {
        println!("{line}");
    }
    if let Some(w) = extra.get("wire") {
        println!(
            "{:11} {:.0} bytes/call sent, {:.0} received (counted by a relay, connection setup excluded)",
            "wire",
            w["sent_per_call"].as_f64().unwrap_or_default(),
            w["received_per_call"].as_f64().unwrap_or_default()
        );
    }
    if let Some(kib) = extra["server_peak_rss_kib"].as_u64() {
        println!("{:11} peak RSS {:.1} MiB", "server", kib as f64 / 1024.0);
    }
    if let Some(n) = extra["connections_reopened"].as_u64().filter(|n| *n > 0) {
        println!(
            "{:11} {n} connections closed by the server were reopened",
            ""
        );
    }
}
