//! `oxmcp-tests` (not published): the end-to-end tests of the workspace, in `tests/`, which
//! drive the real `oxmcp` binary (`oxmcp serve`, its gateway and bridges, scale-out over Redis,
//! interop with the Python SDK, limits and the bad-input corpus), and this library: the one
//! set of helpers those tests, the `oxmcp` CLI's own tests and the `oxmcp-bench` tests share.
//! Imports oxmcp-client, oxmcp-http, oxmcp-server and oxmcp-transport (the last two for its
//! one binary, `many_tools`, a stdio server of 1,000 tools for the inspector's test); nothing
//! imports it but the tests of oxmcp-cli and oxmcp-bench (as a dev-dependency).
//!
//! - [`oxmcp()`] finds the binary under test (`OXMCP_BIN`, else builds it once);
//! - [`Raw`] drives `oxmcp serve --stdio` line by line, [`mcp`] runs any `oxmcp` command;
//! - [`serve_http`] starts `oxmcp serve` on a free port, [`HttpSession`] talks to it;
//! - [`inspector`] starts `oxmcp inspect` and drives its page in a headless chromium;
//! - [`listen`] drives `oxmcp listen`, [`python`] finds the interop venv and scripts,
//!   [`node`] runs the TypeScript SDK's scripts, [`tls`] makes certificates, [`scale`] runs Redis, `--store` instances and a proxy.
#![forbid(unsafe_code)]
// Test helpers: a failed step is a failed test, so they panic (unwrap, expect) with what went
// wrong instead of returning errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod binary;
pub mod inspector;
pub mod listen;
pub mod node;
pub mod postgres;
pub mod python;
pub mod scale;
pub mod tls;

pub use binary::oxmcp;

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// A raw line-level harness around a real `oxmcp serve --stdio` child process.
#[derive(Debug)]
pub struct Raw {
    /// The `oxmcp serve --stdio` process.
    pub child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

/// The demo server's tools, sorted by name.
pub const DEMO_TOOLS: [&str; 16] = [
    "add",
    "ask",
    "cd",
    "converse",
    "echo",
    "fail",
    "log",
    "ls",
    "note",
    "notes",
    "pwd",
    "roots",
    "sample",
    "slow",
    "subscriptions",
    "touch",
];

/// Runs `mcp ARGS` with stdin closed (no terminal) and no bearer token from the
/// environment: success, stdout, stderr.
pub async fn mcp(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(oxmcp())
        .args(args)
        .env("MCP_LOG", "off")
        .env_remove("MCP_BEARER")
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

impl Raw {
    /// `oxmcp serve --stdio`.
    pub fn spawn() -> Self {
        Self::spawn_with(&[])
    }

    /// `oxmcp serve --stdio ARGS`.
    pub fn spawn_with(args: &[&str]) -> Self {
        Self::spawn_logging(args, "off", Stdio::null())
    }

    /// `oxmcp serve --stdio ARGS` logging at `level` (an `MCP_LOG` filter) to `stderr`.
    pub fn spawn_logging(args: &[&str], level: &str, stderr: impl Into<Stdio>) -> Self {
        let mut child = Command::new(oxmcp())
            .args(["serve", "--stdio"])
            .args(args)
            .env("MCP_LOG", level)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .expect("spawn mcp");
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Raw {
            child,
            stdin,
            lines,
        }
    }

    /// Writes `bytes` and a newline: one line to the server.
    pub async fn send_bytes(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).await.unwrap();
        self.stdin.write_all(b"\n").await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// Writes bytes with no newline after them.
    pub async fn send_partial(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// Writes a message as one line.
    pub async fn send(&mut self, v: Value) {
        self.send_bytes(v.to_string().as_bytes()).await;
    }

    /// The next line the server writes, as JSON (each read bounded to 20 s).
    pub async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(20), self.lines.next_line())
            .await
            .expect("timed out waiting for the server")
            .unwrap()
            .expect("server closed stdout");
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("server wrote non-JSON {line:?}: {e}"))
    }

    /// Receives until a response with `id` arrives; returns it and what came before.
    pub async fn recv_id(&mut self, id: Value) -> (Value, Vec<Value>) {
        let mut before = Vec::new();
        loop {
            let m = self.recv().await;
            if m.get("id") == Some(&id) && m.get("method").is_none() {
                return (m, before);
            }
            before.push(m);
        }
    }

    /// Sends `v` and receives until the response with `id`: it and what came before.
    pub async fn send_then(&mut self, v: Value, id: i64) -> (Value, Vec<Value>) {
        self.send(v).await;
        self.recv_id(json!(id)).await
    }

    /// Receives until a message with `method` arrives.
    pub async fn recv_method(&mut self, method: &str) -> Value {
        loop {
            let m = self.recv().await;
            if m["method"] == method {
                return m;
            }
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id().expect("running")).unwrap()
    }

    /// Sends request `id` and receives until its response: the response.
    pub async fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}))
            .await;
        self.recv_id(json!(id)).await.0
    }

    /// `initialize` at `version`, then `notifications/initialized`: the answer to `initialize`.
    pub async fn initialize(&mut self, version: &str) -> Value {
        let r = self
            .request(
                0,
                "initialize",
                json!({"protocolVersion":version,"capabilities":{},"clientInfo":{"name":"t","version":"0"}}),
            )
            .await;
        self.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
            .await;
        r
    }

    /// Closes the server's stdin: it must exit within 10 s.
    pub async fn close(mut self) {
        drop(self.stdin);
        let status = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
        assert!(status.is_ok(), "server did not exit after stdin closed");
    }
}

/// The code of an error response (a panic if `v` is not one).
pub fn code(v: &Value) -> i64 {
    v["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("expected an error, got {v}"))
}

/// Starts `oxmcp serve ARGS` and returns it with the URL it printed.
pub async fn serve_http(args: &[&str]) -> (Child, String) {
    serve_http_env(args, &[]).await
}

/// [`serve_http`] with extra environment variables.
pub async fn serve_http_env(args: &[&str], env: &[(&str, &str)]) -> (Child, String) {
    let (child, url, mut lines) = serve_http_lines(args, env).await;
    tokio::spawn(async move { while lines.recv().await.is_some() {} });
    (child, url)
}

/// [`serve_http_env`], with the lines the server writes on stderr after its address.
pub async fn serve_http_lines(
    args: &[&str],
    env: &[(&str, &str)],
) -> (Child, String, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let mut child = Command::new(oxmcp())
        .arg("serve")
        .args(args)
        .envs(env.iter().copied())
        .env(
            "MCP_LOG",
            std::env::var("MCP_TEST_LOG").unwrap_or_else(|_| "off".into()),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the server prints its address")
            .unwrap()
            .expect("server running");
        if let Some(rest) = line.split("http://").nth(1) {
            break format!("http://{}", rest.split_whitespace().next().unwrap());
        }
    };
    // MCP_TEST_LOG=debug (an MCP_LOG filter) shows what the server logs.
    let show = std::env::var_os("MCP_TEST_LOG").is_some();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            if show {
                eprintln!("[oxmcp serve] {line}");
            }
            let _ = tx.send(line);
        }
    });
    (child, url, rx)
}

/// The JSON-RPC messages of an HTTP answer body (JSON, or the `data` of SSE events).
pub fn http_messages(content_type: &str, body: &str) -> Vec<Value> {
    if body.is_empty() {
        return Vec::new();
    }
    if content_type.starts_with("text/event-stream") {
        let mut p = oxmcp_http::sse::SseParser::new(64 << 20);
        return p
            .push(body.as_bytes())
            .into_iter()
            .filter(|e| !e.data.is_empty())
            .map(|e| serde_json::from_str(&e.data).unwrap())
            .collect();
    }
    vec![serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body:.300}"))]
}

/// An initialized Streamable HTTP session with a real `oxmcp serve` (see [`serve_http`]).
#[derive(Clone, Debug)]
pub struct HttpSession {
    /// The server's endpoint.
    pub url: String,
    /// The session id (`Mcp-Session-Id`).
    pub session: String,
    /// The protocol version the session speaks.
    pub version: String,
}

impl HttpSession {
    /// `initialize` at `version`, then `notifications/initialized`.
    pub async fn open(url: &str, version: &str) -> Self {
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":version,"capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
        let r = reqwest::Client::new()
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(init.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let session = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let s = HttpSession {
            url: url.to_owned(),
            session,
            version: version.to_owned(),
        };
        let (status, _) = s
            .post(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        assert_eq!(status, 202);
        s
    }

    /// A POST of `body` in the session, to send (and read as it streams).
    pub fn request(&self, body: &[u8]) -> reqwest::RequestBuilder {
        reqwest::Client::new()
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &self.session)
            .header("mcp-protocol-version", &self.version)
            .body(body.to_vec())
            .timeout(Duration::from_secs(30))
    }

    /// POSTs a body in the session; the status and the messages of the answer.
    pub async fn post(&self, body: &[u8]) -> (u16, Vec<Value>) {
        let r = self.request(body).send().await.unwrap();
        let status = r.status().as_u16();
        let ct = r
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        let body = r.text().await.unwrap();
        (status, http_messages(&ct, &body))
    }

    /// A `ping` in the session is answered: a case before it did no harm.
    pub async fn ping_ok(&self, name: &str) {
        let (status, m) = self
            .post(br#"{"jsonrpc":"2.0","id":"probe","method":"ping"}"#)
            .await;
        assert_eq!(status, 200, "{name}: the next request works");
        assert_eq!(m[0]["result"], json!({}), "{name}");
    }
}

/// Request options that report the first progress notification: once it has come, the
/// server is working on the request.
pub fn first_progress() -> (
    oxmcp_client::RequestOptions,
    tokio::sync::oneshot::Receiver<()>,
) {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let tx = std::sync::Mutex::new(Some(tx));
    let options = oxmcp_client::RequestOptions::default().on_progress(move |_| {
        if let Some(tx) = tx.lock().unwrap().take() {
            let _ = tx.send(());
        }
    });
    (options, rx)
}

/// Waits (at most 20 s) for the progress that [`first_progress`] reports.
pub async fn started(progress: tokio::sync::oneshot::Receiver<()>) {
    tokio::time::timeout(Duration::from_secs(20), progress)
        .await
        .expect("the server reported progress")
        .expect("the call is still running");
}

/// Drives `call` until it has reported progress, then drops it: the request is cancelled
/// while it runs.
pub async fn cancel_once_started<T: std::fmt::Debug>(
    call: impl std::future::Future<Output = T>,
    progress: tokio::sync::oneshot::Receiver<()>,
) {
    tokio::select! {
        r = call => panic!("the call ended before it was cancelled: {r:?}"),
        () = started(progress) => {}
    }
}

/// The peak resident set size of a process, in KiB (`VmHWM` in /proc/PID/status).
pub fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status")
}

/// A gateway (`oxmcp serve --config`) whose one upstream, `name`, is at `upstream_url`; what
/// `oxmcp call GATEWAY NAME__echo {"message": MESSAGE}` printed.
pub async fn echo_through_gateway(upstream_url: &str, name: &str, message: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gw.toml");
    std::fs::write(
        &file,
        format!("[[upstream]]\nname = \"{name}\"\nurl = \"{upstream_url}\"\n"),
    )
    .unwrap();
    let (_gw, gw) = serve_http(&[
        "--listen",
        "127.0.0.1:0",
        "--config",
        file.to_str().unwrap(),
    ])
    .await;
    let args = json!({"message": message}).to_string();
    let out = Command::new(oxmcp())
        .args(["call", &gw, &format!("{name}__echo"), &args])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// `oxmcp call URL slow` while `server` is killed: the call fails within 5 s (it does not wait
/// for its timeout) and says the connection closed.
pub async fn a_call_cut_by_death_fails(mut server: Child, url: &str) {
    let call = Command::new(oxmcp())
        .args(["call", url, "slow", r#"{"steps":100,"delay_ms":100}"#])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    server.kill().await.unwrap();
    let t0 = std::time::Instant::now();
    let out = tokio::time::timeout(Duration::from_secs(10), call.wait_with_output())
        .await
        .expect("the call ends")
        .unwrap();
    assert!(!out.status.success());
    assert!(t0.elapsed() < Duration::from_secs(5));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("closed") || err.contains("connection"),
        "{err}"
    );
}
