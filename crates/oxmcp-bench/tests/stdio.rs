//! `oxmcp-bench` over stdio against `oxmcp serve --stdio`: phases by duration, the pipelined
//! phase alone, failing calls counted as errors (exit code 1, no rate), and cold starts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use oxmcp_tests::oxmcp;

/// The binary under test.
const BENCH: &str = env!("CARGO_BIN_EXE_oxmcp-bench");

/// Runs `oxmcp-bench ARGS`: success, stdout, stderr.
fn bench(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BENCH)
        .args(args)
        .env("MCP_LOG", "off")
        .env_remove("MCP_BEARER")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn by_duration_with_json() {
    let (ok, out, err) = bench(&[
        "--duration",
        "300ms",
        "--json",
        "--",
        oxmcp(),
        "serve",
        "--stdio",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["errors"], 0);
    let (seq, pipe) = (&v["phases"]["sequential"], &v["phases"]["pipelined"]);
    assert!(seq["calls"].as_u64().unwrap() > 10, "{v}");
    assert!(pipe["calls"].as_u64().unwrap() > 10, "{v}");
    assert_eq!(seq["errors"], 0, "{v}");
    assert!(seq["calls_per_sec"].as_f64().unwrap() > 0.0, "{v}");
    for p in ["p50_ms", "p90_ms", "p99_ms", "max_ms"] {
        assert!(seq["latency"][p].as_f64().unwrap() > 0.0, "{p}: {v}");
    }
    assert!(v["server_peak_rss_kib"].as_u64().unwrap() > 0);
    assert!(v["cpu"]["server_cpu_s"].as_f64().is_some(), "{v}");
    let (ok, _, err) = bench(&["--duration", "3 parsecs", "--", oxmcp(), "serve", "--stdio"]);
    assert!(!ok && err.contains("unknown unit"), "{err}");
}

#[test]
fn raw_driver_checks_every_answer() {
    let (ok, out, err) = bench(&[
        "--driver",
        "raw",
        "--requests",
        "500",
        "--json",
        "--",
        oxmcp(),
        "serve",
        "--stdio",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert!(
        v["driver"]
            .as_str()
            .unwrap()
            .starts_with("raw stdio driver"),
        "{v}"
    );
    assert_eq!(v["errors"], 0, "{v}");
    for phase in ["sequential", "pipelined"] {
        assert_eq!(v["phases"][phase]["ok"], 500, "{phase}: {v}");
    }
    assert!(v["cpu"]["driver_cpu_s"].as_f64().is_some(), "{v}");
    assert!(v["server_peak_rss_kib"].as_u64().unwrap() > 0, "{v}");
    // Answers that do not check out are counted, in both phases, and end with exit code 1.
    let (ok, out, _) = bench(&[
        "--driver",
        "raw",
        "--tool",
        "fail",
        "--args",
        "{}",
        "--requests",
        "200",
        "--",
        oxmcp(),
        "serve",
        "--stdio",
    ]);
    assert!(!ok);
    assert!(out.contains("200 calls, 200 errors"), "human output: {out}");
    assert!(out.contains("isError x200"), "human output: {out}");
    // Text other than the one sent is wrong, though the call succeeded.
    let (ok, out, _) = bench(&[
        "--driver",
        "raw",
        "--tool",
        "echo",
        "--expect",
        "something else",
        "--requests",
        "50",
        "--mode",
        "sequential",
        "--",
        oxmcp(),
        "serve",
        "--stdio",
    ]);
    assert!(!ok);
    assert!(out.contains("50 calls, 50 errors"), "human output: {out}");
}

/// A pipelined run by time whose window is one call ends when its time is up, not a read's
/// timeout later; a server that dies mid-run ends the run at once, its calls counted lost.
#[test]
fn raw_driver_ends_on_time_and_when_the_server_dies() {
    let started = std::time::Instant::now();
    let (ok, out, err) = bench(&[
        "--driver",
        "raw",
        "--pipeline",
        "--window",
        "1",
        "--duration",
        "300ms",
        "--json",
        "--",
        oxmcp(),
        "serve",
        "--stdio",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["errors"], 0, "{v}");
    assert!(v["phases"]["pipelined"]["ok"].as_u64().unwrap() > 10, "{v}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    // Answers `initialize`, reads one more line, and exits.
    let init = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"x","version":"1"}}}"#;
    let script = format!("read l; printf '%s\\n' '{init}'; read l; exit 0");
    let started = std::time::Instant::now();
    let (ok, out, _) = bench(&[
        "--driver",
        "raw",
        "--pipeline",
        "--requests",
        "5000",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert!(!ok);
    assert!(
        out.contains("errors") && out.contains("transport"),
        "human output: {out}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn pipeline_only_and_errors_counted() {
    let (ok, out, err) = bench(&[
        "--pipeline",
        "--requests",
        "500",
        "--json",
        "--",
        oxmcp(),
        "serve",
        "--stdio",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["phases"]["pipelined"]["calls"], 500, "{v}");
    assert_eq!(v["phases"]["pipelined"]["ok"], 500, "{v}");
    assert!(v["phases"].get("sequential").is_none(), "{v}");
    // A tool that fails: every call is counted as an error, no rate printed, the exit code 1.
    let (ok, out, err) = bench(&[
        "--tool",
        "fail",
        "--args",
        "{}",
        "--mode",
        "sequential",
        "--requests",
        "300",
        "--",
        oxmcp(),
        "serve",
        "--stdio",
    ]);
    assert!(!ok);
    assert!(out.contains("300 calls, 300 errors"), "human output: {out}");
    assert!(out.contains("isError x300"), "human output: {out}");
    assert!(!out.contains("calls/s"), "a rate despite errors: {out}");
    assert_eq!(
        err.trim(),
        "error: sequential: 300 of 300 calls failed the check",
        "{err}"
    );
    let (ok, _, err) = bench(&["--pipeline", "--mode", "sequential", "--", oxmcp()]);
    assert!(!ok && err.contains("cannot be used with"), "{err}");
}

#[test]
fn cold_start_checks_every_start() {
    let (ok, out, err) = bench(&[
        "--cold-start",
        "3",
        "--json",
        "--",
        oxmcp(),
        "serve",
        "--stdio",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        (v["starts"].as_u64(), v["errors"].as_u64()),
        (Some(3), Some(0)),
        "{v}"
    );
    assert!(
        v["spawn_to_initialize"]["p50_ms"].as_f64().unwrap() > 0.0,
        "{v}"
    );
    // The resident memory of a live process after its first call: at least a few hundred KiB.
    let rss = v["rss_after_first_call_kib"]["median"].as_u64().unwrap();
    assert!(rss > 100, "{v}");
    // Its anonymous part, some of it and never more.
    let anon = v["rss_anon_after_first_call_kib"]["median"]
        .as_u64()
        .unwrap();
    assert!(anon > 50 && anon <= rss, "{v}");
    // The first call is checked like any other: a failing tool makes every start an error.
    let (ok, out, err) = bench(&[
        "--cold-start",
        "2",
        "--tool",
        "fail",
        "--args",
        "{}",
        "--",
        oxmcp(),
        "serve",
        "--stdio",
    ]);
    assert!(!ok);
    assert!(out.contains("2 starts, 2 errors"), "{out}");
    assert!(out.contains("isError x2"), "{out}");
    assert!(!out.contains("spawn to initialize answered"), "{out}");
    assert!(err.contains("2 of 2 starts failed the check"), "{err}");
    // A server that is not one: no answer to initialize is an error too, not a hang.
    let (ok, out, _) = bench(&["--cold-start", "1", "--", "true"]);
    assert!(!ok && out.contains("1 starts, 1 errors"), "{out}");
    let (ok, _, err) = bench(&["--cold-start", "1", "http://127.0.0.1:1/mcp"]);
    assert!(!ok && err.contains("cannot be used with"), "{err}");
}

/// `--server-cpu`: each server runs on that CPU alone from its start (the driver pins the
/// spawn, no launcher such as `taskset` is timed with it), and the driver goes back to the
/// CPUs it had. Without it the server inherits the driver's.
#[test]
fn cold_start_pins_the_server_not_the_driver() {
    let cpus = |v: &serde_json::Value, k: &str| v[k].as_str().unwrap_or_default().to_owned();
    let (ok, out, err) = bench(&[
        "--cold-start",
        "2",
        "--json",
        "--",
        oxmcp(),
        "serve",
        "--stdio",
    ]);
    assert!(ok, "{err}");
    let free: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let mine = std::fs::read_to_string("/proc/self/status").unwrap();
    let mine = mine
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_owned();
    assert_eq!(cpus(&free, "server_cpus"), mine, "{free}");
    // The last CPU this test may use, so that it differs from the whole set where there are two.
    let last = mine.rsplit([',', '-']).next().unwrap().to_owned();
    let (ok, out, err) = bench(&[
        "--cold-start",
        "2",
        "--server-cpu",
        &last,
        "--json",
        "--",
        oxmcp(),
        "serve",
        "--stdio",
    ]);
    assert!(ok, "{err}");
    let pinned: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(pinned["errors"], 0, "{pinned}");
    assert_eq!(cpus(&pinned, "server_cpus"), last, "{pinned}");
    assert_eq!(cpus(&pinned, "driver_cpus"), mine, "{pinned}");
    // A CPU this machine does not have is refused before anything starts.
    let (ok, _, err) = bench(&[
        "--cold-start",
        "1",
        "--server-cpu",
        "100000",
        "--",
        oxmcp(),
        "serve",
        "--stdio",
    ]);
    assert!(!ok && err.contains("--server-cpu"), "{err}");
    // And it only means something for a cold start.
    let (ok, _, err) = bench(&["--server-cpu", "0", "--", oxmcp(), "serve", "--stdio"]);
    assert!(!ok && err.contains("--cold-start"), "{err}");
}

/// A server that keeps its pipes open and never answers is killed after the driver's 30 s
/// and counted as a timeout: the run ends. Here the pipes are held by a shell's child, so
/// the whole process group has to go.
#[test]
fn cold_start_of_a_silent_server_times_out() {
    let (ok, out, _) = bench(&["--cold-start", "1", "--", "sh", "-c", "sleep 120; true"]);
    assert!(!ok && out.contains("1 starts, 1 errors"), "{out}");
    assert!(out.contains("timeout"), "{out}");
}
