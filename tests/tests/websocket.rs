//! WebSocket in the CLI: the gateway over a `ws://` upstream, a call cut by the server's
//! death, and interop with the Python SDK (`mcp` 1.30.0 from PyPI, which ships a WebSocket
//! client and server with the subprotocol `mcp`) and a plain `websockets` client. The
//! Python lives in `.venv-interop` at the repository root (scripts/test.sh makes it), or
//! where MCP_INTEROP_PYTHON points.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use oxmcp_tests::python::{run_script, script};

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};

fn ws_url(http_url: &str) -> String {
    http_url
        .replacen("http://", "ws://", 1)
        .replace("/mcp", "/ws")
}

#[tokio::test]
async fn the_python_sdk_client_uses_our_server() {
    let (_server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    let v = run_script("ws_client.py", &[&ws_url(&url)]).await;
    assert_eq!(v["server"], "mcp-demo", "{v}");
    assert!(
        v["tools"].as_array().unwrap().iter().any(|t| t == "echo"),
        "{v}"
    );
    assert_eq!(v["echo"], "from python");
}

#[tokio::test]
async fn our_client_uses_the_python_sdk_server() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = tokio::process::Command::new(oxmcp_tests::python::python())
        .arg(script("ws_server.py"))
        .arg(port.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let ready = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .expect("the Python server starts")
        .unwrap();
    assert_eq!(ready.as_deref(), Some("ready"));
    let url = format!("ws://127.0.0.1:{port}/ws");
    let mcp = oxmcp_tests::oxmcp();
    let out = tokio::process::Command::new(mcp)
        .args(["tools", &url])
        .output()
        .await
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{listed}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        listed.contains("echo") && listed.contains("add"),
        "{listed}"
    );
    let out = tokio::process::Command::new(mcp)
        .args(["call", &url, "add", r#"{"a":2,"b":40}"#])
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "42");
}

#[tokio::test]
async fn raw_and_bad_frames_from_a_plain_websockets_client() {
    let (_server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    let v = run_script("ws_raw.py", &[&ws_url(&url)]).await;
    assert_eq!(v["subprotocol"], "mcp", "{v}");
    assert_eq!(v["not_json"]["error"]["code"], -32700, "{v}");
    assert_eq!(v["binary"]["closed"], 1003, "{v}");
    assert_eq!(v["too_big"]["closed"], 1009, "{v}");
    assert_eq!(v["ping"]["result"], serde_json::json!({}), "{v}");
    assert_eq!(v["other_subprotocol"], "InvalidStatus", "refused: {v}");
}

/// The gateway reaches an upstream over WebSocket; its tools appear and work.
#[tokio::test]
async fn the_gateway_takes_a_websocket_upstream() {
    let (_upstream, up) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    let out = oxmcp_tests::echo_through_gateway(&ws_url(&up), "ws", "through a socket").await;
    assert_eq!(out, "through a socket");
}

/// A call in flight when the server dies fails at once; it does not wait for its timeout.
#[tokio::test]
async fn a_call_cut_by_the_server_dying_fails() {
    let (server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    oxmcp_tests::a_call_cut_by_death_fails(server, &ws_url(&url)).await;
}
