//! Run with: cargo run -p oxmcp --example redis
//!
//! Two server instances sharing one Redis store (oxmcp-store-redis), as two replicas
//! behind a load balancer: a session started on instance A is continued on instance B,
//! then ended on B, and A forgets it too. It needs a Redis 7 at `REDIS_URL` (default
//! `redis://127.0.0.1:6379`); if none answers it says how to start one and exits 0.

use std::sync::Arc;

use oxmcp::http::{HttpConfig, ResponseMode, StreamableHttp};
use oxmcp::server::{Ctx, Server};
use oxmcp_store_redis::{ConnectError, RedisStore};
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

const VERSION: &str = "2025-11-25";

/// Starts one instance named `name` on a free port, sharing `redis`; returns its URL.
async fn instance(
    name: &'static str,
    redis: &str,
    namespace: &str,
) -> Result<String, Box<dyn std::error::Error>> {
    let config = oxmcp_store::StoreConfig::default().namespace(namespace.into());
    let store = RedisStore::connect(redis, name, config).await?;
    let server = Server::builder("redis-example", "1.0.0")
        .tool(
            "where",
            "Names the instance that answers",
            move |_: Ctx, _: Nothing| async move {
                Ok::<_, String>(format!("answered by instance {name}"))
            },
        )
        .build()?;
    let config = HttpConfig::default().response_mode(ResponseMode::Json);
    let http = StreamableHttp::new(server, config).with_store(Arc::new(store));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));
    Ok(url)
}

/// POSTs `body` to `url` in session `sid` (if any); returns the status, session id and JSON.
async fn post(
    url: &str,
    sid: Option<&str>,
    body: Value,
) -> Result<(u16, Option<String>, Value), Box<dyn std::error::Error>> {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .body(body.to_string());
    if let Some(sid) = sid {
        request = request.header("mcp-session-id", sid);
    }
    let answer = request.send().await?;
    let status = answer.status().as_u16();
    let sid = answer
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = answer.text().await?;
    Ok((
        status,
        sid,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    ))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let redis = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let namespace = format!("oxmcp-example-{}", std::process::id());
    let a = match instance("A", &redis, &namespace).await {
        Ok(url) => url,
        Err(e) if e.downcast_ref::<ConnectError>().is_some() => {
            println!("No Redis to talk to ({e}).");
            println!(
                "Start one (e.g. `redis-server --port 6379` or `docker run -p 6379:6379 redis:7`)"
            );
            println!("and run again, or set REDIS_URL. Skipping the example.");
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    let b = instance("B", &redis, &namespace).await?;

    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let (_, sid, answer) = post(&a, None, init).await?;
    let sid = sid.ok_or("no session id")?;
    println!(
        "A: initialize -> session {sid} ({})",
        answer["result"]["serverInfo"]["name"]
    );
    post(
        &a,
        Some(&sid),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await?;

    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "where", "arguments": {}}});
    let (status, _, answer) = post(&b, Some(&sid), call.clone()).await?;
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    println!("B: tools/call in that session -> {status}: {text}");
    if status != 200 || text != "answered by instance B" {
        return Err(format!("B did not continue the session: {status} {answer}").into());
    }

    // Ending the session on B ends it everywhere.
    let ended = reqwest::Client::new()
        .delete(&b)
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", VERSION)
        .send()
        .await?;
    println!("B: DELETE the session -> {}", ended.status());
    let (status, _, _) = post(&a, Some(&sid), call).await?;
    println!("A: tools/call in the ended session -> {status}");
    if status != 404 {
        return Err(format!("A still serves the ended session ({status})").into());
    }
    Ok(())
}
