//! Runs `mcp bench` against the rmcp echo server and ours in alternating rounds and prints the
//! median of each mode and the ratio ours/rmcp.
//!
//! `scripts/compare-rmcp.sh` builds everything and runs this; by hand:
//! `mcp-compare --mcp PATH --ours PATH --rmcp PATH [--rounds 5] [--scale 1.0]`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use anyhow::{Context, bail};
use serde_json::Value;

/// One measured mode: how `mcp bench` is run and which figure is the throughput.
struct Mode {
    name: &'static str,
    http_clients: Option<usize>,
    bench_mode: &'static str,
    requests: usize,
    rate_key: &'static str,
}

const MODES: &[Mode] = &[
    Mode {
        name: "stdio sequential",
        http_clients: None,
        bench_mode: "sequential",
        requests: 20_000,
        rate_key: "sequential_calls_per_sec",
    },
    Mode {
        name: "stdio pipelined",
        http_clients: None,
        bench_mode: "pipelined",
        requests: 100_000,
        rate_key: "pipelined_calls_per_sec",
    },
    Mode {
        name: "HTTP 1 client",
        http_clients: Some(1),
        bench_mode: "sequential",
        requests: 5_000,
        rate_key: "sequential_calls_per_sec",
    },
    Mode {
        name: "HTTP 16 clients",
        http_clients: Some(16),
        bench_mode: "sequential",
        requests: 20_000,
        rate_key: "calls_per_sec",
    },
    Mode {
        name: "HTTP 64 clients",
        http_clients: Some(64),
        bench_mode: "sequential",
        requests: 20_000,
        rate_key: "calls_per_sec",
    },
];

struct Args {
    mcp: String,
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
        mcp: get("--mcp")?,
        servers: [("ours", get("--ours")?), ("rmcp", get("--rmcp")?)],
        rounds: map.get("--rounds").map_or(Ok(5), |r| r.parse())?,
        scale: map.get("--scale").map_or(Ok(1.0), |r| r.parse())?,
    })
}

/// Figures of one run: calls per second and p50 latency in ms.
type Figures = (f64, f64);

fn bench(mcp: &str, target: &[&str], mode: &Mode, scale: f64) -> anyhow::Result<Figures> {
    let requests = ((mode.requests as f64 * scale) as usize)
        .max(100)
        .to_string();
    let mut cmd = Command::new(mcp);
    cmd.args([
        "bench",
        "--json",
        "--mode",
        mode.bench_mode,
        "--requests",
        &requests,
    ]);
    if let Some(c) = mode.http_clients {
        cmd.args(["--clients", &c.to_string()]);
    }
    cmd.args(target);
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .context("running mcp bench")?;
    if !out.status.success() {
        bail!("mcp bench failed: {}", String::from_utf8_lossy(&out.stdout));
    }
    let report: Value = serde_json::from_slice(&out.stdout).context("mcp bench --json output")?;
    if report["errors"].as_u64() != Some(0) {
        bail!("calls failed: {report}");
    }
    let rate = report[mode.rate_key]
        .as_f64()
        .context("no rate in the report")?;
    let p50 = report["latency"]["p50_ms"].as_f64().unwrap_or(f64::NAN);
    Ok((rate, p50))
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
                let f = bench(&args.mcp, &["--", server, "--stdio"], mode, args.scale)?;
                results.entry((i, sdk)).or_default().push(f);
            }
            let http = start_http(server)?;
            for (i, mode) in MODES
                .iter()
                .enumerate()
                .filter(|(_, m)| m.http_clients.is_some())
            {
                let f = bench(&args.mcp, &[&http.1], mode, args.scale)?;
                results.entry((i, sdk)).or_default().push(f);
            }
        }
    }
    println!("| mode | ours calls/s | rmcp calls/s | ours/rmcp | ours p50 ms | rmcp p50 ms |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (i, mode) in MODES.iter().enumerate() {
        let fig = |sdk| results.get(&(i, sdk)).cloned().unwrap_or_default();
        let (ours, rmcp) = (fig("ours"), fig("rmcp"));
        let rate = |v: &Vec<Figures>| median(v.iter().map(|f| f.0).collect());
        let p50 = |v: &Vec<Figures>| median(v.iter().map(|f| f.1).collect());
        let p50s = |v: &Vec<Figures>| {
            let p = p50(v);
            if p.is_nan() {
                "-".to_owned()
            } else {
                format!("{p:.3}")
            }
        };
        println!(
            "| {} | {:.0} | {:.0} | {:.2} | {} | {} |",
            mode.name,
            rate(&ours),
            rate(&rmcp),
            rate(&ours) / rate(&rmcp),
            p50s(&ours),
            p50s(&rmcp),
        );
    }
    println!(
        "\nMedians of {} alternating rounds; `mcp bench` speaks the initialize-handshake era to both.",
        args.rounds
    );
    Ok(())
}
