//! Soak test (not in the default run; `scripts/soak.sh` runs it): a Streamable HTTP server in
//! its own process, waves of 1,000 concurrent sessions making calls whose SSE streams are cut
//! at random and resumed with `Last-Event-ID`, standalone GET streams opened and dropped,
//! sessions ended by DELETE or abandoned to the idle reaper. Afterwards: no session, stream
//! or task left behind, RSS back within 10% of the start (after a warm-up wave), and every
//! call's response received exactly once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use oxmcp_http::{HttpConfig, ResponseMode, StreamableHttp};
use oxmcp_server::{Ctx, Server};
use serde_json::{Value, json};

mod common;
use common::{Session, VERSION};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Work {
    n: u64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

/// The server side, run in a child process (this same test binary, `SOAK_SERVER=1`).
#[test]
#[ignore = "the soak's server process; started by soak_1000_sessions"]
fn soak_server() {
    if std::env::var_os("SOAK_SERVER").is_none() {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let http_cell: Arc<std::sync::OnceLock<StreamableHttp>> = Arc::default();
        let cell = http_cell.clone();
        let server = Server::builder("soak", "1")
            .tool(
                "work",
                "progress x3, then n",
                |c: Ctx, a: Work| async move {
                    for i in 1..=3u32 {
                        c.progress(f64::from(i), Some(3.0), None).await;
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    Ok::<_, String>(a.n.to_string())
                },
            )
            .tool("stats", "server counters", move |_c: Ctx, _a: Nothing| {
                let cell = cell.clone();
                async move {
                    let http = cell.get().expect("set");
                    let tasks = tokio::runtime::Handle::current()
                        .metrics()
                        .num_alive_tasks();
                    Ok::<_, String>(
                        json!({
                            "sessions": http.session_count(),
                            "streams": http.stream_count(),
                            "tasks": tasks,
                            "rss_kib": rss_kib(std::process::id()).unwrap_or(0),
                        })
                        .to_string(),
                    )
                }
            })
            .build()
            .unwrap();
        let http = StreamableHttp::new(
            server,
            HttpConfig::default()
                .response_mode(ResponseMode::Sse)
                .session_idle_timeout(Duration::from_secs(2))
                .keep_alive(Duration::from_secs(1)),
        );
        let _ = http_cell.set(http.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("PORT {}", listener.local_addr().unwrap().port());
        http.serve(listener).await.unwrap();
    });
}

/// The resident set size of a process in KiB, if it can be read (and is not zero).
fn rss_kib(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .filter(|&kib| kib > 0)
}

/// The server's RSS in KiB: a soak that cannot measure it fails rather than compare zeros.
fn server_rss(pid: u32) -> u64 {
    rss_kib(pid).unwrap_or_else(|| panic!("no RSS for the server process {pid}"))
}

#[derive(Default)]
struct Totals {
    sessions: AtomicU64,
    calls: AtomicU64,
    responses: AtomicU64,
    duplicates: AtomicU64,
    lost: AtomicU64,
    cuts: AtomicU64,
    resumes: AtomicU64,
    get_streams: AtomicU64,
    deleted: AtomicU64,
    abandoned: AtomicU64,
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// Reads SSE events until the response to `id` (or the end); `cut` stops after the first
/// event that carries data, as a dropped connection would.
async fn read_until(
    resp: reqwest::Response,
    id: u64,
    cut: bool,
    last_event: &mut Option<String>,
    responses: &mut Vec<Value>,
) -> bool {
    let mut parser = oxmcp_http::sse::SseParser::new(1 << 20);
    let mut body = resp.bytes_stream();
    while let Some(Ok(chunk)) = body.next().await {
        for ev in parser.push(&chunk) {
            if ev.id.is_some() {
                last_event.clone_from(&ev.id);
            }
            if ev.data.is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(&ev.data).unwrap();
            if v["id"] == id && v.get("method").is_none() {
                responses.push(v);
                return true;
            }
            if cut {
                return false; // drop the connection mid-stream
            }
        }
    }
    false
}

async fn session_life(
    http: reqwest::Client,
    url: String,
    seed: u64,
    calls: u64,
    totals: Arc<Totals>,
) {
    let mut rng = Rng(seed | 1);
    let session = Session::open_with(&http, &url, VERSION).await;
    totals.sessions.fetch_add(1, Ordering::Relaxed);
    // Sometimes a standalone stream, dropped at some point.
    let standalone = if rng.chance(30) {
        totals.get_streams.fetch_add(1, Ordering::Relaxed);
        Some(session.get().send().await.unwrap())
    } else {
        None
    };
    for k in 1..=calls {
        totals.calls.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc":"2.0","id":k,"method":"tools/call","params":{"name":"work","arguments":{"n":k},"_meta":{"progressToken":k}}});
        let r = session.post(body.to_string()).send().await.unwrap();
        assert_eq!(r.status(), 200);
        let cut = rng.chance(30);
        let mut last_event = None;
        let mut responses = Vec::new();
        let mut done = read_until(r, k, cut, &mut last_event, &mut responses).await;
        if !done {
            totals.cuts.fetch_add(1, Ordering::Relaxed);
        }
        let mut tries = 0;
        while !done && tries < 5 {
            tries += 1;
            let Some(last) = last_event.clone() else {
                break;
            };
            totals.resumes.fetch_add(1, Ordering::Relaxed);
            let r = session
                .get()
                .header("last-event-id", &last)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200, "resume with {last}");
            let cut_again = rng.chance(10);
            done = read_until(r, k, cut_again, &mut last_event, &mut responses).await;
        }
        match responses.len() {
            1 => {
                assert_eq!(responses[0]["result"]["content"][0]["text"], k.to_string());
                totals.responses.fetch_add(1, Ordering::Relaxed);
            }
            0 => {
                totals.lost.fetch_add(1, Ordering::Relaxed);
            }
            _ => {
                totals.duplicates.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    drop(standalone);
    if rng.chance(90) {
        let r = session.delete().send().await.unwrap();
        assert_eq!(r.status(), 200);
        totals.deleted.fetch_add(1, Ordering::Relaxed);
    } else {
        totals.abandoned.fetch_add(1, Ordering::Relaxed);
    }
}

async fn stats(url: &str) -> Value {
    // No connection pool: idle keep-alive connections would count as server tasks.
    let http = &reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let session = Session::open_with(http, url, VERSION).await;
    let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stats","arguments":{}}});
    let r = session.post(call.to_string()).send().await.unwrap();
    let mut responses = Vec::new();
    read_until(r, 1, false, &mut None, &mut responses).await;
    let text = responses[0]["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    session.delete().send().await.unwrap();
    // The stats session itself is counted (its session and its call's stream): take it out.
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["sessions"] = json!(v["sessions"].as_u64().unwrap() - 1);
    v["streams"] = json!(v["streams"].as_u64().unwrap() - 1);
    v
}

async fn wave(url: &str, n: u64, calls: u64, seed: u64, totals: &Arc<Totals>) {
    // A client per wave, dropped after it: its pooled connections close with it.
    let http = &reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .unwrap();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..n {
        tasks.spawn(session_life(
            http.clone(),
            url.to_owned(),
            seed.wrapping_mul(1_000_003).wrapping_add(i * 7919 + 1),
            calls,
            totals.clone(),
        ));
    }
    while let Some(r) = tasks.join_next().await {
        r.unwrap();
    }
}

/// Waits for the idle reaper to end abandoned sessions and for tasks to wind down.
async fn settle(url: &str, baseline_tasks: u64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let s = stats(url).await;
        let clean = s["sessions"] == 0
            && s["streams"] == 0
            && s["tasks"].as_u64().unwrap() <= baseline_tasks;
        if clean || Instant::now() > deadline {
            return s;
        }
    }
}

/// A positive count from the environment, or `default`: a soak of nothing measures nothing.
fn setting(name: &str, default: u64) -> u64 {
    let v = std::env::var(name)
        .ok()
        .map_or(Some(default), |v| v.parse().ok())
        .unwrap_or_else(|| panic!("{name} is not a number"));
    assert!(v > 0, "{name}=0 would measure nothing");
    v
}

/// Starts [`soak_server`] in its own process: the process, its pid and its URL.
async fn start_server() -> (tokio::process::Child, u32, String) {
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "soak_server", "--ignored", "--nocapture"])
        .env("SOAK_SERVER", "1")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let server_pid = child.id().unwrap();
    let mut out = tokio::io::BufReader::new(child.stdout.take().unwrap());
    let port = loop {
        let mut line = String::new();
        tokio::io::AsyncBufReadExt::read_line(&mut out, &mut line)
            .await
            .unwrap();
        assert!(!line.is_empty(), "server exited");
        if let Some(p) = line.trim().strip_prefix("PORT ") {
            break p.parse::<u16>().unwrap();
        }
    };
    (child, server_pid, format!("http://127.0.0.1:{port}/mcp"))
}

/// The largest RSS seen by a sampler every 100 ms, and how many samples it took.
#[derive(Default)]
struct Peak {
    kib: AtomicU64,
    samples: AtomicU64,
}

impl Peak {
    fn sample(&self, pid: u32) {
        self.kib.fetch_max(server_rss(pid), Ordering::Relaxed);
        self.samples.fetch_add(1, Ordering::Relaxed);
    }
}

/// The measured waves: RSS after each, and the peak sampled while they ran.
async fn measured_waves(
    url: &str,
    pid: u32,
    (waves, sessions, calls): (u64, u64, u64),
    baseline_tasks: u64,
    totals: &Arc<Totals>,
) -> (Vec<u64>, Arc<Peak>) {
    let peak = Arc::new(Peak::default());
    let mut rss_waves = Vec::new();
    for w in 0..waves {
        let sampler = {
            let peak = peak.clone();
            tokio::spawn(async move {
                loop {
                    peak.sample(pid);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            })
        };
        wave(url, sessions, calls, w + 2, totals).await;
        sampler.abort();
        peak.sample(pid);
        let s = settle(url, baseline_tasks).await;
        eprintln!("soak: after wave {}: {s}", w + 1);
        rss_waves.push(server_rss(pid));
    }
    (rss_waves, peak)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "soak test: run with scripts/soak.sh"]
async fn soak_1000_sessions() {
    let sessions = setting("SOAK_SESSIONS", 1000);
    let waves = setting("SOAK_WAVES", 3);
    let calls: u64 = 5;
    let (mut child, server_pid, url) = start_server().await;
    let started = Instant::now();
    let rss_cold = server_rss(server_pid);
    let first = stats(&url).await;
    let baseline_tasks = first["tasks"].as_u64().unwrap();
    assert!(baseline_tasks > 0, "the server's runtime reports its tasks");
    // Warm-up waves: the allocator's arenas and the tables reach their working size (RSS
    // measured this way plateaus from the second wave on; what is compared is the plateau).
    let warm = Arc::new(Totals::default());
    wave(&url, sessions, calls, 1, &warm).await;
    settle(&url, baseline_tasks).await;
    let rss_one_wave = server_rss(server_pid);
    wave(&url, sessions, calls, 100, &warm).await;
    let after_warm = settle(&url, baseline_tasks).await;
    let rss_start = server_rss(server_pid);
    let totals = Arc::new(Totals::default());
    let (rss_waves, peak) = measured_waves(
        &url,
        server_pid,
        (waves, sessions, calls),
        baseline_tasks,
        &totals,
    )
    .await;
    let end = settle(&url, baseline_tasks).await;
    let rss_end = server_rss(server_pid);
    let t = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let peak_kib = t(&peak.kib).max(rss_start);
    eprintln!(
        "soak: {waves} waves x {sessions} concurrent sessions x {calls} calls in {:?}: {} sessions, {} calls, {} responses, {} lost, {} duplicated; \
         {} streams cut and {} resumes; {} GET streams; {} sessions deleted, {} abandoned to the reaper; \
         server after: {end}; tasks at start {baseline_tasks} (after warm-up {}); \
         RSS cold {rss_cold} KiB, after one warm-up wave {rss_one_wave} KiB, after two {rss_start} KiB, after each wave {rss_waves:?} KiB, peak >= {peak_kib} KiB ({} samples), end {rss_end} KiB",
        started.elapsed(),
        t(&totals.sessions),
        t(&totals.calls),
        t(&totals.responses),
        t(&totals.lost),
        t(&totals.duplicates),
        t(&totals.cuts),
        t(&totals.resumes),
        t(&totals.get_streams),
        t(&totals.deleted),
        t(&totals.abandoned),
        after_warm["tasks"],
        t(&peak.samples),
    );
    // What was measured: every session lived, every call was made and answered.
    assert_eq!(t(&totals.sessions), waves * sessions, "sessions opened");
    assert_eq!(
        t(&totals.deleted) + t(&totals.abandoned),
        waves * sessions,
        "sessions ended"
    );
    assert_eq!(t(&totals.calls), waves * sessions * calls, "calls made");
    assert_eq!(t(&totals.lost), 0, "every response arrived");
    assert_eq!(t(&totals.duplicates), 0, "and only once");
    assert_eq!(t(&totals.responses), waves * sessions * calls);
    assert!(t(&totals.cuts) > 0 && t(&totals.resumes) > 0);
    assert_eq!(end["sessions"], 0, "no session left: {end}");
    assert_eq!(end["streams"], 0, "no stream left: {end}");
    assert!(
        end["tasks"].as_u64().unwrap() <= baseline_tasks,
        "no task left: {end} vs {baseline_tasks}"
    );
    assert!(
        t(&peak.samples) >= 2 * waves,
        "RSS was sampled during and after every wave"
    );
    assert!(
        rss_end as f64 <= rss_start as f64 * 1.10,
        "RSS {rss_end} KiB is more than 10% above {rss_start} KiB"
    );
    child.kill().await.unwrap();
}
