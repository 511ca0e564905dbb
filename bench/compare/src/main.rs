//! Runs `oxmcp-bench` against the rmcp echo server and ours in alternating rounds and prints the
//! median of each mode and the ratio ours/rmcp. `oxmcp-bench` checks every answer (the id, and
//! the echoed text: each call sends its own message); a round with errors gives no rate, and
//! the table shows each side's error count beside its figure.
//!
//! `scripts/compare-rmcp.sh` builds everything and runs this; by hand:
//! `mcp-compare --bench PATH --ours PATH --rmcp PATH [--rounds 5] [--scale 1.0]` (`--bench`: the
//! `oxmcp-bench` binary).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use anyhow::Context;
use serde_json::Value;

/// One measured mode: how `oxmcp-bench` is run and which phase of its report is the figure.
struct Mode {
    name: &'static str,
    http_clients: Option<usize>,
    bench_mode: &'static str,
    requests: usize,
    phase: &'static str,
}

const MODES: &[Mode] = &[
    Mode {
        name: "stdio sequential",
        http_clients: None,
        bench_mode: "sequential",
        requests: 20_000,
        phase: "sequential",
    },
    Mode {
        name: "stdio pipelined",
        http_clients: None,
        bench_mode: "pipelined",
        requests: 100_000,
        phase: "pipelined",
    },
    Mode {
        name: "HTTP 1 client",
        http_clients: Some(1),
        bench_mode: "sequential",
        requests: 5_000,
        phase: "calls",
    },
    Mode {
        name: "HTTP 16 clients",
        http_clients: Some(16),
        bench_mode: "sequential",
        requests: 20_000,
        phase: "calls",
    },
    Mode {
        name: "HTTP 64 clients",
        http_clients: Some(64),
        bench_mode: "sequential",
        requests: 20_000,
        phase: "calls",
    },
];

struct Args {
    /// The `oxmcp-bench` binary.
    bench: String,
    servers: [(&'static str, String); 2],
    rounds: usize,
    scale: f64,
}

fn args() -> anyhow::Result<Args> {
    let mut map = BTreeMap::new();
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().with_context(|| format!("{k} needs a value"))?;
        map.insert(k, v);
    }
    let get = |k: &str| map.get(k).cloned().with_context(|| format!("missing {k}"));
    Ok(Args {
        bench: get("--bench")?,
        servers: [("ours", get("--ours")?), ("rmcp", get("--rmcp")?)],
        rounds: map.get("--rounds").map_or(Ok(5), |r| r.parse())?,
        scale: map.get("--scale").map_or(Ok(1.0), |r| r.parse())?,
    })
}

/// One run: calls per second and p50 latency in ms, or the number of answers that failed
/// the check (then there is no rate).
type Figures = Result<(f64, f64), u64>;

fn bench(driver: &str, target: &[&str], mode: &Mode, scale: f64) -> anyhow::Result<Figures> {
    let requests = ((mode.requests as f64 * scale) as usize)
        .max(100)
        .to_string();
    let mut cmd = Command::new(driver);
    cmd.args(["--json", "--requests", &requests]);
    match mode.http_clients {
        Some(c) => cmd.args(["--clients", &c.to_string()]),
        None => cmd.args(["--mode", mode.bench_mode]),
    };
    cmd.args(target);
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .context("running oxmcp-bench")?;
    // With errors, oxmcp-bench still prints its report, and exits 1.
    let report: Value = serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "oxmcp-bench gave no report (exit {:?}): {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout)
        )
    })?;
    let phase = &report["phases"][mode.phase];
    let errors = phase["errors"]
        .as_u64()
        .with_context(|| format!("no error count in the report: {report}"))?;
    if errors > 0 || !out.status.success() {
        return Ok(Err(errors.max(1)));
    }
    let rate = phase["calls_per_sec"]
        .as_f64()
        .with_context(|| format!("no rate in the report: {report}"))?;
    let p50 = phase["latency"]["p50_ms"].as_f64().unwrap_or(f64::NAN);
    Ok(Ok((rate, p50)))
}

/// An HTTP server child, killed on drop.
struct HttpServer(Child, String);

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_http(server: &str) -> anyhow::Result<HttpServer> {
    let mut child = Command::new(server)
        .args(["--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {server}"))?;
    let stderr = child.stderr.take().context("stderr")?;
    let mut line = String::new();
    BufReader::new(stderr).read_line(&mut line)?;
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .with_context(|| format!("{server} printed no URL: {line:?}"))?
        .to_owned();
    Ok(HttpServer(child, url))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() -> anyhow::Result<()> {
    let args = args()?;
    // (mode, sdk) -> figures of each round
    let mut results: BTreeMap<(usize, &str), Vec<Figures>> = BTreeMap::new();
    for round in 0..args.rounds {
        // Alternate who goes first, so drift (heat, other load) does not favour one side.
        let mut order = args.servers.clone();
        if round % 2 == 1 {
            order.reverse();
        }
        for (sdk, server) in &order {
            eprintln!("round {}/{}: {sdk}", round + 1, args.rounds);
            for (i, mode) in MODES
                .iter()
                .enumerate()
                .filter(|(_, m)| m.http_clients.is_none())
            {
                let f = bench(&args.bench, &["--", server, "--stdio"], mode, args.scale)?;
                results.entry((i, sdk)).or_default().push(f);
            }
            let http = start_http(server)?;
            for (i, mode) in MODES
                .iter()
                .enumerate()
                .filter(|(_, m)| m.http_clients.is_some())
            {
                let f = bench(&args.bench, &[&http.1], mode, args.scale)?;
                results.entry((i, sdk)).or_default().push(f);
            }
        }
    }
    println!(
        "| mode | ours calls/s | ours errors | rmcp calls/s | rmcp errors | ours/rmcp | ours p50 ms | rmcp p50 ms |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (i, mode) in MODES.iter().enumerate() {
        let fig = |sdk| results.get(&(i, sdk)).cloned().unwrap_or_default();
        let (ours, rmcp) = (fig("ours"), fig("rmcp"));
        // Errors over all rounds; a median only when every round was clean.
        let errors = |v: &Vec<Figures>| v.iter().filter_map(|f| f.err()).sum::<u64>();
        let clean =
            |v: &Vec<Figures>| -> Option<Vec<(f64, f64)>> { v.iter().map(|f| f.ok()).collect() };
        let rate = |v: &Vec<Figures>| clean(v).map(|c| median(c.iter().map(|f| f.0).collect()));
        let p50 = |v: &Vec<Figures>| clean(v).map(|c| median(c.iter().map(|f| f.1).collect()));
        let show = |x: Option<f64>, digits: usize| match x {
            Some(x) if !x.is_nan() => format!("{x:.digits$}"),
            _ => "-".to_owned(),
        };
        let ratio = match (rate(&ours), rate(&rmcp)) {
            (Some(a), Some(b)) => Some(a / b),
            _ => None,
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            mode.name,
            show(rate(&ours), 0),
            errors(&ours),
            show(rate(&rmcp), 0),
            errors(&rmcp),
            show(ratio, 2),
            show(p50(&ours), 3),
            show(p50(&rmcp), 3),
        );
    }
    println!(
        "\nMedians of {} alternating rounds; `oxmcp-bench` speaks the initialize-handshake era to \
         both and checks every answer (id and echoed text). stdio: the SDK's Client as driver; \
         HTTP: the raw driver (hyper, one thread), a session per connection. A mode with errors \
         in any round shows no rate (\"-\").",
        args.rounds
    );
    Ok(())
}
