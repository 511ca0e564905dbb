//! Helpers shared by the HTTP server tests: start an endpoint on a real socket, raw POSTs, and
//! reading a JSON or SSE answer.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use mcp_http::{HttpConfig, ServeOptions, StreamableHttp};
use mcp_server::{Ctx, Server};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Sleep {
    pub ms: u64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Echo {
    pub message: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Nothing {}

/// A server with `sleep` (answers "slept MS"), `chatty_sleep` (logs first), `echo` and
/// `boom` (panics).
pub fn server() -> Server {
    Server::builder("limits", "1")
        .tool("sleep", "sleeps", |_c: Ctx, a: Sleep| async move {
            tokio::time::sleep(Duration::from_millis(a.ms)).await;
            Ok::<_, String>(format!("slept {}", a.ms))
        })
        .tool(
            "chatty_sleep",
            "logs, then sleeps",
            |c: Ctx, a: Sleep| async move {
                c.log(mcp_types::LoggingLevel::Info, None, json!("going to sleep"))
                    .await;
                tokio::time::sleep(Duration::from_millis(a.ms)).await;
                Ok::<_, String>(format!("slept {}", a.ms))
            },
        )
        .tool("echo", "echoes", |_c: Ctx, a: Echo| async move {
            Ok::<_, String>(a.message)
        })
        .tool("boom", "panics", |_c: Ctx, _a: Nothing| async move {
            if true {
                panic!("boom on purpose");
            }
            Ok::<_, String>("unreachable")
        })
        .build()
        .unwrap()
}

pub struct Running {
    pub url: String,
    pub addr: std::net::SocketAddr,
    pub http: StreamableHttp,
    pub shutdown: CancellationToken,
    pub done: tokio::task::JoinHandle<std::io::Result<()>>,
}

/// Serves [`server`] with these settings on 127.0.0.1.
pub async fn start(config: HttpConfig, options: ServeOptions) -> Running {
    start_with(server(), config, options).await
}

/// Serves `server` with these settings on 127.0.0.1.
pub async fn start_with(server: Server, config: HttpConfig, options: ServeOptions) -> Running {
    let shutdown = CancellationToken::new();
    let config = HttpConfig {
        shutdown: shutdown.clone(),
        ..config
    };
    let http = StreamableHttp::new(server, config);
    serve(http, shutdown, options).await
}

/// Serves an endpoint (built by the caller) on 127.0.0.1.
pub async fn serve(
    http: StreamableHttp,
    shutdown: CancellationToken,
    options: ServeOptions,
) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = http.router();
    let token = shutdown.clone();
    let done = tokio::spawn(async move {
        mcp_http::serve_router_with(listener, router, options, token.cancelled_owned()).await
    });
    Running {
        url: format!("http://{addr}/mcp"),
        addr,
        http,
        shutdown,
        done,
    }
}

pub const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

pub fn post(
    url: &str,
    session: Option<&str>,
    body: impl Into<reqwest::Body>,
) -> reqwest::RequestBuilder {
    let mut r = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body);
    if let Some(s) = session {
        r = r.header("mcp-session-id", s);
    }
    r
}

pub async fn init(url: &str, auth: Option<&str>) -> reqwest::Response {
    let mut r = post(url, None, INIT);
    if let Some(a) = auth {
        r = r.header("authorization", a);
    }
    r.send().await.unwrap()
}

/// A new, initialized session.
pub async fn session(url: &str) -> String {
    let r = init(url, None).await;
    assert_eq!(r.status(), StatusCode::OK);
    let id = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let r = post(
        url,
        Some(&id),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    id
}

/// The JSON-RPC response of a JSON or SSE answer.
pub async fn answer(r: reqwest::Response) -> Value {
    let sse = r
        .headers()
        .get("content-type")
        .is_some_and(|v| v.to_str().unwrap().starts_with("text/event-stream"));
    let text = r.text().await.unwrap();
    if !sse {
        return serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text:?}"));
    }
    let mut p = mcp_http::sse::SseParser::new(1 << 20);
    p.push(text.as_bytes())
        .into_iter()
        .filter(|e| !e.data.is_empty())
        .map(|e| serde_json::from_str::<Value>(&e.data).unwrap())
        .find(|m| m.get("id").is_some())
        .unwrap_or_else(|| panic!("no response in {text:?}"))
}

pub fn call(id: u64, tool: &str, args: Value) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}})
        .to_string()
}

pub async fn ping_ok(url: &str, session: &str) {
    let r = post(
        url,
        Some(session),
        r#"{"jsonrpc":"2.0","id":77,"method":"ping"}"#,
    )
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(answer(r).await["result"], json!({}));
}

/// Waits until `f` holds (checked every 10 ms), at most `secs` seconds; whether it did.
pub async fn until(secs: u64, f: impl Fn() -> bool) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    while !f() {
        if std::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}
