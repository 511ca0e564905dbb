//! `oxmcp serve` as an operator runs it: limits set by flags and by the config file, and a
//! graceful stop on SIGTERM over stdio (requests in flight answered, upstream children gone).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use oxmcp_tests::{Raw, serve_http};
use serde_json::json;
use tokio::process::Command;

/// The status of a POST of `body_len` bytes to a fresh session's endpoint.
async fn post_status(url: &str, body_len: usize) -> u16 {
    let pad = "x".repeat(body_len);
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"{pad}","version":"1"}}}}}}"#
    );
    reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn limits_come_from_flags_and_the_config_file() {
    // A flag.
    let (_child, url) = serve_http(&["--listen", "127.0.0.1:0", "--max-body", "1KiB"]).await;
    assert_eq!(post_status(&url, 100).await, 200);
    assert_eq!(post_status(&url, 2000).await, 413);
    // The config file's [limits] table.
    let dir = std::env::temp_dir().join(format!("mcp-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("limits.toml");
    std::fs::write(&cfg, "[limits]\nmax_body = \"1KiB\"\nmax_sessions = 1\n").unwrap();
    let path = cfg.to_str().unwrap();
    let (_child, url) = serve_http(&["--listen", "127.0.0.1:0", "--config", path]).await;
    assert_eq!(post_status(&url, 2000).await, 413);
    assert_eq!(post_status(&url, 10).await, 200);
    assert_eq!(post_status(&url, 10).await, 503, "max_sessions = 1");
    // A flag wins over the file.
    let (_child, url) = serve_http(&[
        "--listen",
        "127.0.0.1:0",
        "--config",
        path,
        "--max-body",
        "64KiB",
        "--max-sessions",
        "5",
    ])
    .await;
    assert_eq!(post_status(&url, 2000).await, 200);
    assert_eq!(post_status(&url, 10).await, 200);
    // A typo in the file is refused at start.
    std::fs::write(&cfg, "[limits]\nmax_sesions = 1\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_oxmcp"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config", path])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("max_sesions"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn sigterm_on_stdio_answers_what_is_in_flight_then_exits() {
    let mut s = Raw::spawn();
    s.initialize("2025-11-25").await;
    s.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"steps":3,"delay_ms":200},"_meta":{"progressToken":"p"}}}))
        .await;
    // The call is running once its first progress arrives.
    s.recv_method("notifications/progress").await;
    kill(Pid::from_raw(s.pid()), Signal::SIGTERM).unwrap();
    let (answer, _) = s.recv_id(json!(1)).await;
    assert_eq!(answer["result"]["content"][0]["text"], "done after 3 steps");
    let status = tokio::time::timeout(Duration::from_secs(10), s.child.wait())
        .await
        .expect("exits after the drain")
        .unwrap();
    assert!(status.success(), "{status:?}");
}

/// The children of a process (from /proc).
fn children(pid: i32) -> Vec<i32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

fn alive(pid: i32) -> bool {
    // A zombie still has a /proc entry; its state is Z.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit(')').next().map(|r| r.trim().to_owned()))
        .is_some_and(|r| !r.starts_with('Z'))
}

#[tokio::test]
async fn sigterm_on_a_stdio_gateway_stops_its_upstream_children() {
    let dir = std::env::temp_dir().join(format!("mcp-sigterm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("gw.toml");
    std::fs::write(
        &cfg,
        format!(
            "[[upstream]]\nname = \"demo\"\ncommand = [{:?}, \"serve\", \"--stdio\"]\n",
            env!("CARGO_BIN_EXE_oxmcp")
        ),
    )
    .unwrap();
    let mut s = Raw::spawn_with(&["--config", cfg.to_str().unwrap()]);
    s.initialize("2025-11-25").await;
    let upstream = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Some(c) = children(s.pid()).first() {
                return *c;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the upstream child runs");
    kill(Pid::from_raw(s.pid()), Signal::SIGTERM).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(15), s.child.wait())
        .await
        .expect("the gateway exits")
        .unwrap();
    assert!(status.success(), "{status:?}");
    let gone = tokio::time::timeout(Duration::from_secs(5), async {
        while alive(upstream) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    if gone.is_err() {
        let _ = kill(Pid::from_raw(upstream), Signal::SIGKILL);
    }
    assert!(
        gone.is_ok(),
        "the upstream child {upstream} outlived the gateway"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn max_line_on_stdio_drops_a_longer_line_and_goes_on() {
    let mut s = Raw::spawn_with(&["--max-line", "1KiB"]);
    s.initialize("2025-11-25").await;
    let long = "x".repeat(2048);
    s.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":long}}}))
        .await;
    s.send(json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"short"}}}))
        .await;
    // The oversized line has no answer; the next one is read and answered.
    let (answer, before) = s.recv_id(json!(2)).await;
    assert!(
        before.iter().all(|m| m["id"] != 1),
        "the oversized line was answered"
    );
    assert_eq!(answer["result"]["content"][0]["text"], "short");
    // Without the flag the default limit (4 MiB) lets the same line through.
    let mut d = Raw::spawn();
    d.initialize("2025-11-25").await;
    d.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":long}}}))
        .await;
    let (answer, _) = d.recv_id(json!(1)).await;
    assert_eq!(answer["result"]["content"][0]["text"], long);
}
