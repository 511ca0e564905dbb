//! The limits of `--sampling-cmd`, over real processes: a command that runs too long is
//! killed with everything it started (`--sampling-timeout`), and no more than
//! `--sampling-concurrency` commands run at once, the others waiting a bounded time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use oxmcp_server::{Ctx, Server};
use serde_json::{Value, json};

use oxmcp_tests::mcp;

const ERAS: [&str; 2] = ["legacy", "modern"];

const ANSWER: &str =
    r#"echo '{"role":"assistant","content":{"type":"text","text":"sampled"},"model":"sh"}'"#;

/// Whether a process is gone (or a zombie, dead but not reaped yet).
fn gone(pid: i32) -> bool {
    if nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_err() {
        return true;
    }
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(true)
}

#[tokio::test]
async fn a_command_past_its_time_limit_is_killed_with_its_children() {
    let (_server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    let dir = tempfile::tempdir().unwrap();
    for era in ERAS {
        let pidfile = dir.path().join(format!("{era}.pid"));
        // The shell starts a child that would outlive it, and waits for it.
        let cmd = format!(
            "cat >/dev/null; sleep 300 & echo $! > '{}'; wait",
            pidfile.display()
        );
        let started = Instant::now();
        let args = [
            "call",
            &url,
            "sample",
            "-a",
            "prompt=hi",
            "--era",
            era,
            "--sampling-cmd",
            &cmd,
            "--sampling-timeout",
            "1",
        ];
        let (ok, out, err) = tokio::time::timeout(Duration::from_secs(30), mcp(&args))
            .await
            .unwrap_or_else(|_| panic!("{era}: the sampling command was not stopped"));
        assert!(!ok, "{era}: {out}");
        let said = format!("{out}{err}");
        assert!(
            said.contains("ran longer than 1 s (--sampling-timeout)"),
            "{era}: {said}"
        );
        assert!(started.elapsed() < Duration::from_secs(20), "{era}");
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !gone(pid) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(gone(pid), "{era}: the command's child {pid} outlived it");
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Fan {
    n: u32,
}

/// A server whose `fan` tool asks the client's model `n` times at once, and returns one line
/// per answer: `ok TEXT` or `error MESSAGE`.
async fn fan_server() -> String {
    let server = Server::builder("fan", "1")
        .tool(
            "fan",
            "asks the client's model n times at once",
            |ctx: Ctx, a: Fan| async move {
                let asks = (0..a.n).map(|i| {
                    let ctx = ctx.clone();
                    async move {
                        let request = json!({
                            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                            "maxTokens": 10
                        });
                        ctx.input::<Value>(&format!("s{i}"), "sampling/createMessage", request)
                            .await
                    }
                });
                let lines: Vec<String> = futures::future::join_all(asks)
                    .await
                    .into_iter()
                    .map(|r| match r {
                        Ok(v) => format!("ok {}", v["content"]["text"].as_str().unwrap_or("?")),
                        Err(e) => format!("error {e}"),
                    })
                    .collect();
                Ok::<_, String>(lines.join("\n"))
            },
        )
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let router =
        oxmcp_http::StreamableHttp::new(server, oxmcp_http::HttpConfig::default()).router();
    tokio::spawn(async move { oxmcp_http::serve_router(listener, router).await });
    url
}

/// `oxmcp call URL fan n=N --era legacy --sampling-cmd CMD ARGS`: its answer lines.
async fn fan(url: &str, n: u32, cmd: &str, args: &[&str]) -> Vec<String> {
    let n = format!("n={n}");
    let mut all = vec![
        "call",
        url,
        "fan",
        "-a",
        &n,
        "--era",
        "legacy",
        "--sampling-cmd",
        cmd,
    ];
    all.extend(args);
    let (ok, out, err) = tokio::time::timeout(Duration::from_secs(60), mcp(&all))
        .await
        .expect("the fan finishes");
    assert!(ok, "{out} {err}");
    out.lines().map(str::to_owned).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_more_commands_run_at_once_than_allowed() {
    let url = fan_server().await;
    let dir = tempfile::tempdir().unwrap();
    let running = dir.path().join("running");
    std::fs::create_dir(&running).unwrap();
    let seen = dir.path().join("seen");
    // Each command counts the commands running with it.
    let cmd = format!(
        "cat >/dev/null; touch '{r}'/$$; ls '{r}' | wc -l >> '{s}'; sleep 1; rm '{r}'/$$; {ANSWER}",
        r = running.display(),
        s = seen.display()
    );
    let lines = fan(&url, 6, &cmd, &["--sampling-concurrency", "2"]).await;
    assert_eq!(lines, vec!["ok sampled"; 6]);
    let counts: Vec<u32> = std::fs::read_to_string(&seen)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(counts.len(), 6);
    assert!(
        counts.iter().all(|c| *c <= 2),
        "more than 2 at once: {counts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_waits_for_a_slot_at_most_the_time_limit() {
    let url = fan_server().await;
    // One at a time, 4 s each, a 6 s limit: the second waits 4 s and runs; the third would
    // wait 8 s, and is refused after 6.
    let cmd = format!("cat >/dev/null; sleep 4; {ANSWER}");
    let lines = fan(
        &url,
        3,
        &cmd,
        &["--sampling-concurrency", "1", "--sampling-timeout", "6"],
    )
    .await;
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[..2], ["ok sampled", "ok sampled"], "{lines:?}");
    assert!(
        lines[2].starts_with("error")
            && lines[2].contains("no free slot within 6 s (--sampling-concurrency 1"),
        "{lines:?}"
    );
}
