//! Run with: cargo run -p oxmcp --example middleware
//!
//! MCP middleware: a layer of our own (only `admin` may call `wipe`), the shipped rate limit
//! and deadline layers, and the metrics layer, wrapped around every request to a handler in
//! the order they are added. A client calls over Streamable HTTP: one call is refused by our
//! layer, one past its budget by the rate limit, one past its deadline; then the metrics are
//! printed as Prometheus would scrape them.

use std::time::Duration;

use futures::future::BoxFuture;
use oxmcp::client::{CallError, ClientConfig, EraChoice};
use oxmcp::engine::HandlerResult;
use oxmcp::jsonrpc::{ErrorCode, ErrorObject};
use oxmcp::remote::{Remote, connect};
use oxmcp::server::layer::{
    Layer, McpRequest, Metrics, Next, Quota, RateLimitLayer, Target, TimeoutLayer,
};
use oxmcp::server::{Ctx, Server};
use serde_json::json;

/// Only the principal `admin` may call the tool `wipe`.
struct AdminOnly;

impl Layer for AdminOnly {
    fn call(&self, req: McpRequest, next: Next) -> BoxFuture<'static, HandlerResult> {
        let wipe = matches!(req.target(), Some(Target::Tool(name)) if name == "wipe");
        if wipe && req.principal() != Some("admin") {
            let e = ErrorObject::new(ErrorCode::INVALID_REQUEST, "wipe is for admin only");
            return Box::pin(async move { Err(e) });
        }
        next.run(req)
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    message: String,
}

/// The JSON-RPC error code a call ended with (0: it did not end with one).
fn code<T>(answer: &Result<T, CallError>) -> i32 {
    match answer {
        Err(CallError::Rpc(o)) => o.code.0,
        _ => 0,
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let metrics = Metrics::new();
    let server = Server::builder("middleware-example", "1.0.0")
        .tool("echo", "Echoes", |_ctx: Ctx, a: Echo| async move {
            Ok::<_, String>(a.message)
        })
        .tool(
            "wipe",
            "Wipes everything",
            |_ctx: Ctx, _a: serde_json::Value| async move { Ok::<_, String>("wiped".to_owned()) },
        )
        .tool(
            "sleepy",
            "Takes a second",
            |_ctx: Ctx, _a: serde_json::Value| async move {
                tokio::time::sleep(Duration::from_secs(1)).await;
                Ok::<_, String>("awake".to_owned())
            },
        )
        // Outermost first: the metrics see every request, refusals included.
        .layer(metrics.layer())
        .layer(AdminOnly)
        .layer(RateLimitLayer::new().tool("echo", Quota::per_minute(2).ok_or("quota")?))
        .layer(TimeoutLayer::new(None).tool("sleepy", Duration::from_millis(100)))
        .build()?;
    let http = oxmcp::http::StreamableHttp::new(server, oxmcp::http::HttpConfig::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));

    let remote = Remote::default().client(ClientConfig::default().era(EraChoice::Legacy));
    let client = connect(&url, remote).await?;
    let call = |name: &str| json!({"name": name, "arguments": {"message": "hi"}});
    for _ in 0..2 {
        let r = client.request("tools/call", call("echo")).await?;
        println!("echo: {}", r["content"][0]["text"]);
    }
    let refused = client.request("tools/call", call("echo")).await;
    assert_eq!(code(&refused), -32000);
    println!("echo, a third time within the minute: {refused:?}");
    let refused = client.request("tools/call", call("wipe")).await;
    assert_eq!(code(&refused), -32600);
    println!("wipe, by nobody in particular: {refused:?}");
    let late = client.request("tools/call", call("sleepy")).await;
    assert_eq!(code(&late), -32001);
    println!("sleepy, past its 100 ms: {late:?}");
    client.close().await;

    let text = metrics.render();
    for line in text.lines().filter(|l| l.contains("_count{")) {
        println!("{line}");
    }
    assert!(text.contains(r#"gen_ai_tool_name="echo""#));
    Ok(())
}
