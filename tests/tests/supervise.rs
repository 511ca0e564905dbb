//! Supervised stdio servers (restart with backoff, lost requests, crash loops, heartbeats),
//! graceful client shutdown, and 1,000 spawn/kill cycles leaving no zombie or orphan, all with
//! real child processes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use oxmcp_client::{
    CallError, Client, ClientConfig, ClientHandlers, Heartbeat, RequestOptions, RetryPolicy,
    Status, Supervised, SupervisorConfig, SupervisorError,
};
use oxmcp_transport::{ChildConfig, ChildProcess, Exit};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use oxmcp_tests::{first_progress, started};

use oxmcp_tests::oxmcp;

fn quick_child() -> ClientConfig {
    ClientConfig::default().child(
        ChildConfig::default()
            .stdin_grace(Duration::from_millis(100))
            .term_grace(Duration::from_millis(100))
            .inherit_stderr(false),
    )
}

fn fast_backoff() -> RetryPolicy {
    RetryPolicy::default()
        .base_delay(Duration::from_millis(20))
        .max_delay(Duration::from_millis(200))
}

async fn wait_for(sup: &Supervised, pred: impl Fn(&Status) -> bool) -> Status {
    let mut rx = sup.watch();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let s = rx.borrow_and_update().clone();
        if pred(&s) {
            return s;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        tokio::time::timeout(left, rx.changed())
            .await
            .unwrap_or_else(|_| panic!("status never matched; last {s:?}"))
            .unwrap();
    }
}

fn generation(s: &Status) -> u64 {
    match s {
        Status::Up { generation, .. } => *generation,
        _ => 0,
    }
}

/// `oxmcp serve --stdio` under a supervisor with a fast backoff and `heartbeat`.
fn supervised_mcp(heartbeat: Option<Heartbeat>) -> Supervised {
    Supervised::spawn(
        oxmcp(),
        vec!["serve".into(), "--stdio".into()],
        ClientHandlers::new(),
        quick_child(),
        SupervisorConfig::default()
            .backoff(fast_backoff())
            .heartbeat(heartbeat),
    )
}

#[tokio::test]
async fn a_crashed_server_is_restarted_and_lost_requests_are_reported() {
    let sup = supervised_mcp(None);
    let client = sup.client().await.unwrap();
    let pid = client.child_pid().await.unwrap();
    // A slow call is in flight (the server reported progress) when the server dies.
    let s2 = sup.clone();
    let (options, progress) = first_progress();
    let slow = tokio::spawn(async move {
        s2.call(|c| async move {
            let args = serde_json::from_value(json!({"steps": 50, "delay_ms": 100})).unwrap();
            c.call_tool_with("slow", args, &options).await
        })
        .await
    });
    started(progress).await;
    kill(Pid::from_raw(i32::try_from(pid).unwrap()), Signal::SIGKILL).unwrap();
    let lost = tokio::time::timeout(Duration::from_secs(10), slow)
        .await
        .expect("a lost request fails, it does not hang")
        .unwrap();
    assert!(
        matches!(lost, Err(SupervisorError::Lost(_))),
        "got {lost:?}"
    );
    assert!(lost.unwrap_err().to_string().contains("lost"));
    // It comes back: a new process, the handshake redone, calls work.
    let up = wait_for(&sup, |s| generation(s) == 2).await;
    let Status::Up { client, .. } = up else {
        unreachable!()
    };
    assert_ne!(client.child_pid().await.unwrap(), pid);
    let r = sup
        .call(|c| async move { c.list_tools().await })
        .await
        .unwrap();
    assert!(r.iter().any(|t| t.name == "echo"));
    sup.stop().await;
    assert!(matches!(sup.client().await, Err(SupervisorError::Stopped)));
}

#[tokio::test]
async fn a_crash_loop_is_detected_instead_of_spinning() {
    // Starts, then dies before answering initialize: every connection attempt fails.
    let attempts = Arc::new(AtomicU32::new(0));
    let a = attempts.clone();
    let connector: oxmcp_client::supervisor::Connector = Arc::new(move || {
        a.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            Client::spawn(
                "sh",
                &["-c", "exit 3"],
                ClientHandlers::new(),
                quick_child(),
            )
            .await
        })
    });
    let sup = Supervised::start(
        connector,
        SupervisorConfig::default()
            .backoff(fast_backoff())
            .max_restarts(3)
            .restart_window(Duration::from_secs(30))
            .crash_loop_cooldown(Duration::from_secs(30)),
    );
    let s = wait_for(&sup, |s| matches!(s, Status::CrashLoop { .. })).await;
    let Status::CrashLoop {
        restarts, reason, ..
    } = s
    else {
        unreachable!()
    };
    assert_eq!(restarts, 4);
    assert!(reason.contains("connecting failed"), "{reason}");
    let e = sup.client().await.unwrap_err();
    assert!(matches!(e, SupervisorError::CrashLoop { .. }), "{e:?}");
    assert!(e.to_string().contains("crash loop"), "{e}");
    // No spinning during the cooldown: the next attempt is set 30 s out, and none is made
    // meanwhile. (An attempt not made leaves nothing to wait for: 500 ms are 25 of the
    // backoff's base delays, time for many attempts if it spun.)
    let Status::CrashLoop { until, .. } = sup.status() else {
        panic!("{:?}", sup.status())
    };
    let wait = until.saturating_duration_since(tokio::time::Instant::now());
    assert!(wait > Duration::from_secs(25), "next attempt in {wait:?}");
    let before = attempts.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(attempts.load(Ordering::SeqCst), before);
    assert_eq!(before, 4);
    sup.stop().await;
}

/// A TCP proxy on 127.0.0.1 to `upstream` that counts what passes: the occurrences of `up`
/// in the client's bytes and of `down` in the server's, each counted before it is forwarded.
struct CountingProxy {
    addr: SocketAddr,
    up: Arc<AtomicUsize>,
    down: Arc<AtomicUsize>,
}

impl CountingProxy {
    async fn start(upstream: SocketAddr, up: &'static [u8], down: &'static [u8]) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (ups, downs) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (u, d) = (ups.clone(), downs.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = tokio::net::TcpStream::connect(upstream).await else {
                    continue;
                };
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                tokio::spawn(pump(cr, sw, up, u.clone()));
                tokio::spawn(pump(sr, cw, down, d.clone()));
            }
        });
        CountingProxy {
            addr,
            up: ups,
            down: downs,
        }
    }

    fn counts(&self) -> (usize, usize) {
        (
            self.up.load(Ordering::SeqCst),
            self.down.load(Ordering::SeqCst),
        )
    }
}

/// Copies `from` to `to`, counting the occurrences of `token` (also across reads).
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    token: &'static [u8],
    count: Arc<AtomicUsize>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut seen = Vec::new();
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        seen.extend_from_slice(&buf[..n]);
        let found = seen.windows(token.len()).filter(|w| *w == token).count();
        count.fetch_add(found, Ordering::SeqCst);
        // Keep what could be the start of a token cut by this read.
        seen.drain(..seen.len() - seen.len().min(token.len() - 1));
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// Waits until `f` holds, polling every 10 ms for at most 20 s; whether it did.
async fn until(f: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_keep_a_2026_http_server_up() {
    let (_server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    // Between client and server, a proxy counts the heartbeats (a 2026-07-28 server has no
    // `ping`: they are `server/discover`) and their answers.
    let upstream = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let proxy = CountingProxy::start(
        upstream.parse().unwrap(),
        br#""method":"server/discover""#,
        br#""supportedVersions""#,
    )
    .await;
    let url = format!("http://{}/mcp", proxy.addr);
    let connector: oxmcp_client::supervisor::Connector = Arc::new(move || {
        let url = url.clone();
        Box::pin(async move {
            let t = oxmcp_http::client::connect(&url, oxmcp_http::HttpClientConfig::default())
                .map_err(|e| {
                    oxmcp_client::ConnectError::Initialize(CallError::Protocol(e.to_string()))
                })?;
            let config = ClientConfig::default().era(oxmcp_client::EraChoice::Modern);
            Client::connect(t.incoming, t.outgoing, ClientHandlers::new(), config).await
        })
    });
    let sup = Supervised::start(
        connector,
        SupervisorConfig::default().heartbeat(Some(Heartbeat {
            interval: Duration::from_millis(50),
            timeout: Duration::from_millis(500),
            misses: 2,
        })),
    );
    assert!(sup.client().await.unwrap().is_modern());
    // Ten heartbeats sent and answered after the connection was made.
    let (sent, answered) = proxy.counts();
    let ten = until(|| {
        let (s, a) = proxy.counts();
        s >= sent + 10 && a >= answered + 10
    })
    .await;
    assert!(ten, "heartbeats (sent, answered): {:?}", proxy.counts());
    assert_eq!(generation(&sup.status()), 1, "{:?}", sup.status());
    sup.stop().await;
}

/// `oxmcp serve --stdio` behind `tee`s that log what goes in and out, in its own process group
/// (the shell's): `sh -c 'tee IN | oxmcp serve --stdio | tee OUT'`.
fn logged_mcp(dir: &std::path::Path) -> Vec<String> {
    let script = r#"tee -a "$1" | "$2" serve --stdio | tee -a "$3""#;
    let (input, output) = (dir.join("in.log"), dir.join("out.log"));
    [
        "-c",
        script,
        "sh",
        input.to_str().unwrap(),
        oxmcp(),
        output.to_str().unwrap(),
    ]
    .map(str::to_owned)
    .to_vec()
}

/// The ids of the logged `ping` requests that the logged answers answered.
fn pings_answered(dir: &std::path::Path) -> usize {
    let messages = |file: &str| -> Vec<Value> {
        let text = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let answers: Vec<Value> = messages("out.log")
        .into_iter()
        .filter(|m| m.get("result").is_some())
        .map(|m| m["id"].clone())
        .collect();
    messages("in.log")
        .iter()
        .filter(|m| m["method"] == "ping" && answers.contains(&m["id"]))
        .count()
}

#[tokio::test]
async fn missed_heartbeats_restart_a_hung_server() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hung-server-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sup = Supervised::spawn(
        "sh",
        logged_mcp(&dir),
        ClientHandlers::new(),
        quick_child(),
        SupervisorConfig::default()
            .backoff(fast_backoff())
            .heartbeat(Some(Heartbeat {
                interval: Duration::from_millis(100),
                timeout: Duration::from_millis(200),
                misses: 2,
            })),
    );
    let client = sup.client().await.unwrap();
    let pid = i32::try_from(client.child_pid().await.unwrap()).unwrap();
    // Alive and answering: heartbeats (pings, seen going in and answered coming out) keep
    // it up.
    let answered = until(|| pings_answered(&dir) >= 3).await;
    assert!(answered, "{} heartbeats answered", pings_answered(&dir));
    assert_eq!(generation(&sup.status()), 1);
    // Hung (stopped, not dead): only the heartbeat can tell.
    killpg(Pid::from_raw(pid), Signal::SIGSTOP).unwrap();
    let up = wait_for(&sup, |s| generation(s) == 2).await;
    let Status::Up { client, .. } = up else {
        unreachable!()
    };
    assert_ne!(
        client.child_pid().await.unwrap(),
        u32::try_from(pid).unwrap()
    );
    // The hung process was killed and reaped.
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    sup.call(|c| async move { c.ping().await }).await.unwrap();
    sup.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn graceful_client_shutdown_drains_in_flight_requests() {
    let client = Client::spawn(
        oxmcp(),
        &["serve", "--stdio"],
        ClientHandlers::new(),
        quick_child(),
    )
    .await
    .unwrap();
    let peer = client.peer().clone();
    let (options, progress) = first_progress();
    let slow = tokio::spawn(async move {
        peer.request_raw(
            "tools/call",
            json!({"name":"slow","arguments":{"steps":3,"delay_ms":100}}),
            &options,
        )
        .await
    });
    // In flight: the server has done its first step.
    started(progress).await;
    let late_peer = client.peer().clone();
    let exit = client.shutdown(Duration::from_secs(5)).await;
    let r = slow
        .await
        .unwrap()
        .expect("the in-flight call was answered");
    assert!(r.get().contains("done after 3 steps"));
    assert_eq!(exit, Some(Exit::Closed), "closed politely after the drain");
    let e = late_peer
        .request_raw("ping", json!({}), &RequestOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(e, CallError::ShuttingDown | CallError::Closed),
        "{e:?}"
    );
}

fn zombies_of(parent: u32) -> Vec<u32> {
    let mut z = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid ...": comm may hold spaces, so split after the last ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let mut f = rest.split_whitespace();
        let state = f.next().unwrap_or("");
        let ppid: u32 = f.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        if ppid == parent && state == "Z" {
            z.push(pid);
        }
    }
    z
}

fn processes_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline"))
            && String::from_utf8_lossy(&cmd).contains(marker)
        {
            found.push(pid);
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_spawn_kill_cycles_leave_nothing_behind() {
    // Three kinds of child, each with a grandchild in its process group:
    // exits on EOF; ignores EOF but not SIGTERM; ignores both.
    // Every process of the test carries the marker in its command line.
    let marker = format!("29.{}", std::process::id());
    let scripts = [
        format!("sleep {marker} & echo $!; exec cat"),
        format!("sleep {marker} & echo $!; while :; do sleep 0.05; done"),
        format!(
            "trap '' TERM; (trap '' TERM; while :; do sleep 0.05; done) & echo $!; while :; do sleep 0.05; done; : {marker}"
        ),
    ];
    // Generous for a loaded CI machine: the polite child must exit within the stdin grace.
    let config = ChildConfig::default()
        .stdin_grace(Duration::from_millis(300))
        .term_grace(Duration::from_millis(100))
        .inherit_stderr(false);
    let start = Instant::now();
    let counts = Arc::new(std::sync::Mutex::new([0u32; 3]));
    let next = Arc::new(AtomicU32::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let scripts = scripts.clone();
        let config = config.clone();
        let counts = counts.clone();
        let next = next.clone();
        tasks.spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::SeqCst);
                if n >= 1000 {
                    break;
                }
                let kind = (n % 3) as usize;
                let (mut child, mut io) =
                    ChildProcess::spawn("sh", ["-c", scripts[kind].as_str()], config.clone())
                        .unwrap();
                // The grandchild is running (and traps are set) once its pid is printed.
                let line = tokio::time::timeout(Duration::from_secs(10), io.incoming.recv())
                    .await
                    .expect("child started")
                    .expect("child printed its grandchild");
                assert!(matches!(&line, oxmcp_jsonrpc::Inbound::Frame(b) if !b.is_empty()));
                let exit = child.shutdown().await.unwrap();
                let want = [Exit::Closed, Exit::Terminated, Exit::Killed][kind];
                assert_eq!(exit, want, "kind {kind}");
                counts.lock().unwrap()[kind] += 1;
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.unwrap();
    }
    let counts = *counts.lock().unwrap();
    assert_eq!(counts.iter().sum::<u32>(), 1000);
    // Every child was reaped; grandchildren were killed with their group (init reaps them).
    assert!(zombies_of(std::process::id()).is_empty(), "zombies left");
    let mut left = processes_with(&marker);
    for _ in 0..100 {
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        left = processes_with(&marker);
    }
    assert!(left.is_empty(), "processes left behind: {left:?}");
    eprintln!(
        "1000 spawn/kill cycles ({counts:?} closed/terminated/killed) in {:?}",
        start.elapsed()
    );
}

/// The pids of `parent`'s children, and their states ("pid (comm) state ppid ..." in
/// /proc/PID/stat).
fn children_of(parent: u32) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let mut f = rest.split_whitespace();
        let state = f.next().unwrap_or("").to_owned();
        if f.next().and_then(|p| p.parse().ok()) == Some(parent) {
            found.push((pid, state));
        }
    }
    found
}

/// Whether `pid` has ended (gone, or a zombie waiting for whoever adopted it).
fn ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with('Z')),
        Err(_) => true,
    }
}

/// Waits (at most 20 s) until `f` gives something.
async fn eventually<T>(what: &str, f: impl Fn() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `oxmcp call URL echo`: what it printed, if it succeeded.
async fn echo(url: &str, message: &str) -> Option<String> {
    let args = json!({ "message": message }).to_string();
    let (ok, out, _) = oxmcp_tests::mcp(&["call", url, "echo", &args]).await;
    ok.then(|| out.trim().to_owned())
}

/// `oxmcp serve -- sh WRAPPER`, the wrapper starting the real server as its own child and
/// waiting for it (as `npx` does: npm, then sh, then node). When the wrapper dies (`kill -9`),
/// the bridge reaps it, ends what it started (the server, which kept the pipes open and would
/// go on serving unsupervised), and starts the command again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bridged_child_that_dies_behind_a_wrapper_is_reaped_and_restarted() {
    let dir = tempfile::tempdir().unwrap();
    let wrapper = dir.path().join("wrapper.sh");
    // Two commands, so that sh runs the server as a child instead of exec'ing it.
    let bin = oxmcp();
    std::fs::write(
        &wrapper,
        format!("\"{bin}\" serve --stdio\necho wrapper done >&2\n"),
    )
    .unwrap();
    let wrapper = wrapper.to_str().unwrap();
    let (bridge, url) =
        oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0", "--", "sh", wrapper]).await;
    let bridge_pid = bridge.id().unwrap();
    let only_child = |parent: u32| {
        let c = children_of(parent);
        (c.len() == 1 && c[0].1 != "Z").then(|| c[0].0)
    };
    let first = eventually("the wrapper runs under the bridge", || {
        only_child(bridge_pid)
    })
    .await;
    let server = eventually("the server runs under the wrapper", || only_child(first)).await;
    assert_eq!(echo(&url, "before").await.as_deref(), Some("before"));

    kill(
        Pid::from_raw(i32::try_from(first).unwrap()),
        Signal::SIGKILL,
    )
    .unwrap();
    // The wrapper is reaped, the server it started ended with it, and a new wrapper runs.
    let second = eventually("a new wrapper runs under the bridge", || {
        let c = children_of(bridge_pid);
        let zombies = c.iter().any(|(_, state)| state == "Z");
        (!zombies && c.len() == 1 && c[0].0 != first).then(|| c[0].0)
    })
    .await;
    eventually("the old server is gone", || ended(server).then_some(())).await;
    assert_ne!(second, first);
    assert!(zombies_of(bridge_pid).is_empty(), "zombies left");
    // Calls work again, served by the new server.
    let mut answer = None;
    for _ in 0..100 {
        answer = echo(&url, "after").await;
        if answer.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(answer.as_deref(), Some("after"));
    let new_server = eventually("the new server runs", || only_child(second)).await;
    assert_ne!(new_server, server);
}

/// `Supervised::recycle` replaces a healthy connection with a new process at once: the old
/// one is never handed out again, and recycling often is no crash loop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recycling_replaces_the_connection_at_once_and_is_no_crash() {
    // A slow backoff: a recycle that waited for it would show.
    let sup = Supervised::spawn(
        oxmcp(),
        vec!["serve".into(), "--stdio".into()],
        ClientHandlers::new(),
        quick_child(),
        SupervisorConfig::default()
            .backoff(RetryPolicy::default().base_delay(Duration::from_secs(30)))
            .max_restarts(2),
    );
    let mut pids = Vec::new();
    for round in 1..=6u64 {
        let client = sup.client().await.unwrap();
        assert_eq!(generation(&sup.status()), round);
        pids.push(client.child_pid().await.unwrap());
        assert!(sup.recycle(&client), "round {round}");
        // Not up until the new connection is: nobody gets the old one again.
        assert!(!matches!(sup.status(), Status::Up { .. }));
        assert!(!sup.recycle(&client), "recycled once only");
        let started = Instant::now();
        let next = tokio::time::timeout(Duration::from_secs(20), sup.client())
            .await
            .expect("a new connection")
            .unwrap();
        assert!(!Arc::ptr_eq(&next, &client));
        assert!(started.elapsed() < Duration::from_secs(15), "no backoff");
    }
    assert!(matches!(sup.status(), Status::Up { generation: 7, .. }));
    // Every old process is gone: ended and reaped (no zombie).
    for pid in pids {
        let gone = || (!std::path::Path::new(&format!("/proc/{pid}")).exists()).then_some(());
        eventually("a recycled server is reaped", gone).await;
    }
    sup.stop().await;
}
