//! JSON logs: `oxmcp serve --log-format json` (or `MCP_LOG_FORMAT=json`) writes every log
//! line on stderr as one JSON object with `timestamp`, `level`, `target`, `message` and the
//! enclosing spans (a POST's session, request id, method and principal), never a token or an
//! argument; the flag wins over the variable; a bad value is a clear error. Over a real
//! process and socket.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const OXMCP: &str = env!("CARGO_BIN_EXE_oxmcp");
const TOKEN: &str = "tok-3f9c1e-never-logged";
const ARGUMENT: &str = "argument-7d2b-never-logged";

/// `oxmcp serve ARGS` with `env`, logging at debug; `calls` run against its URL (`oxmcp`
/// commands, `URL` replaced; then `posts`, raw JSON bodies), then it is stopped with
/// SIGTERM: every line it wrote on stderr.
async fn serve_logs(
    args: &[&str],
    env: &[(&str, &str)],
    calls: &[&[&str]],
    posts: &[&str],
) -> Vec<String> {
    let mut child = Command::new(OXMCP)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(args)
        .env("MCP_LOG", "debug")
        .env_remove("MCP_LOG_FORMAT")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    let url = loop {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the server starts")
            .unwrap()
            .expect("the server is running");
        seen.push(line.clone());
        if let Some(rest) = line.split("http://").nth(1) {
            break format!("http://{}", rest.split_whitespace().next().unwrap());
        }
    };
    for call in calls {
        let out = Command::new(OXMCP)
            .args(call.iter().map(|a| a.replace("URL", &url)))
            .env("MCP_LOG", "off")
            .output()
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for body in posts {
        reqwest::Client::new()
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
    }
    kill(Pid::from_raw(child.id().unwrap() as i32), Signal::SIGTERM).unwrap();
    while let Ok(Ok(Some(line))) =
        tokio::time::timeout(Duration::from_secs(20), lines.next_line()).await
    {
        seen.push(line);
    }
    seen
}

/// The log lines of `lines` as JSON objects: all but `oxmcp serve`'s own `oxmcp: ...` lines
/// (where it serves, that it stopped), each of which must be a JSON object with the keys of
/// a log line.
fn json_lines(lines: &[String]) -> Vec<Value> {
    lines
        .iter()
        .filter(|l| !l.starts_with("oxmcp: "))
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            for key in ["timestamp", "level", "target", "message"] {
                assert!(v.get(key).is_some(), "no {key}: {l}");
            }
            v
        })
        .collect()
}

/// The `mcp.post` spans of the log lines.
fn post_spans(lines: &[Value]) -> Vec<Value> {
    lines
        .iter()
        .filter_map(|l| l["spans"].as_array())
        .flatten()
        .filter(|s| s["name"] == "mcp.post")
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_are_one_object_a_line_with_the_requests_span_and_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, format!("{TOKEN} alice\n")).unwrap();
    let echo = format!(r#"{{"message":"{ARGUMENT}"}}"#);
    let legacy: &[&str] = &[
        "call", "--era", "legacy", "--bearer", TOKEN, "URL", "echo", &echo,
    ];
    let modern: &[&str] = &["call", "--bearer", TOKEN, "URL", "echo", &echo];
    let lines = serve_logs(
        &[
            "--log-format",
            "json",
            "--auth-token-file",
            tokens.to_str().unwrap(),
        ],
        &[],
        &[legacy, modern],
        &[],
    )
    .await;
    let all = lines.join("\n");
    assert!(!all.contains(TOKEN), "a token was logged: {all}");
    assert!(!all.contains(ARGUMENT), "an argument was logged: {all}");
    let logged = json_lines(&lines);
    assert!(
        logged
            .iter()
            .any(|l| l["level"] == "INFO"
                && l["message"].as_str().unwrap().contains("shutting down")),
        "{all}"
    );
    let spans = post_spans(&logged);
    let calls: Vec<&Value> = spans
        .iter()
        .filter(|s| s["method"] == "tools/call")
        .collect();
    assert_eq!(calls.len(), 2, "{all}");
    for call in &calls {
        assert_eq!(call["principal"], "alice", "{call}");
        assert!(call["request"].is_i64(), "{call}");
    }
    // The legacy call was made in a session, and its span says which.
    assert!(
        calls
            .iter()
            .any(|c| c["session"].as_str().is_some_and(|s| s.len() >= 16)),
        "{all}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_log_format_picks_json_and_the_flag_wins() {
    let call: &[&str] = &["call", "URL", "echo", r#"{"message":"hi"}"#];
    let lines = serve_logs(&[], &[("MCP_LOG_FORMAT", "json")], &[call], &[]).await;
    let logged = json_lines(&lines);
    assert!(!post_spans(&logged).is_empty(), "{lines:?}");
    // `--log-format text` wins over the variable: no line is JSON.
    let lines = serve_logs(
        &["--log-format", "text"],
        &[("MCP_LOG_FORMAT", "json")],
        &[call],
        &[],
    )
    .await;
    assert!(
        lines.iter().any(|l| l.contains("POST received")),
        "{lines:?}"
    );
    assert!(lines.iter().all(|l| !l.starts_with('{')), "{lines:?}");
}

#[tokio::test]
async fn a_bad_log_format_is_a_clear_error() {
    let out = Command::new(OXMCP)
        .args(["serve", "--stdio"])
        .env("MCP_LOG_FORMAT", "yaml")
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("MCP_LOG_FORMAT=\"yaml\"") && err.contains("text or json"),
        "{err}"
    );
    let out = Command::new(OXMCP)
        .args(["serve", "--stdio", "--log-format", "yaml"])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--log-format") && err.contains("json"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_method_and_id_cannot_forge_or_restyle_log_lines() {
    // C1 CSI, right-to-left override, line separator, DEL and a newline.
    // JSON escapes: the server decodes them.
    let hostile = r"x\u009b31m\u202eFAKE\u2028LINE\u007f\n{}";
    let body = format!(r#"{{"jsonrpc":"2.0","id":"{hostile}","method":"{hostile}"}}"#);
    for format in ["json", "text"] {
        let lines = serve_logs(&["--log-format", format], &[], &[], &[&body]).await;
        let all = lines.join("\n");
        assert!(
            all.contains("FAKE"),
            "{format}: the request was logged: {all}"
        );
        for c in ['\u{9b}', '\u{202e}', '\u{2028}', '\u{7f}'] {
            assert!(!all.contains(c), "{format}: {c:?} unescaped in {all:?}");
        }
        assert!(
            lines.iter().all(|l| !l.starts_with("{}")),
            "{format}: {all}"
        );
        if format == "json" {
            json_lines(&lines);
        }
    }
}
