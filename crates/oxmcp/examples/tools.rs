//! Run with: cargo run -p oxmcp --example tools
//!
//! Tools written with the macros: free functions (`#[tool]` makes each a unit struct that
//! `ServerBuilder::add` takes), individual arguments or one arguments struct (`Args<T>`),
//! annotations, and a failing tool. A client lists and calls them over Streamable HTTP in
//! both protocol eras; a call with a wrong argument type is refused by validation.

use oxmcp::client::{ClientConfig, EraChoice};
use oxmcp::remote::{Remote, connect};
use oxmcp::server::{Args, Server, tool};
use oxmcp::types::JsonObject;

/// Adds two numbers.
#[tool(read_only, idempotent, title = "Add")]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Greeting {
    /// Who to greet.
    name: String,
    /// How many exclamation marks.
    #[serde(default)]
    excitement: u8,
}

/// Greets someone.
#[tool]
async fn greet(Args(g): Args<Greeting>) -> String {
    format!("Hello, {}{}", g.name, "!".repeat(usize::from(g.excitement)))
}

/// Divides a by b; dividing by zero is the tool's error (`isError: true`), not a protocol one.
#[tool(read_only)]
async fn divide(a: f64, b: f64) -> Result<String, String> {
    if b == 0.0 {
        return Err("cannot divide by zero".into());
    }
    Ok((a / b).to_string())
}

fn args(v: oxmcp::serde_json::Value) -> JsonObject {
    v.as_object().cloned().unwrap_or_default()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("tools-example", "1.0.0")
        .add(add)
        .add(greet)
        .add(divide)
        .build()?;
    let http = oxmcp::http::StreamableHttp::new(server, oxmcp::http::HttpConfig::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));

    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let remote = Remote::default().client(ClientConfig::default().era(era));
        let client = connect(&url, remote).await?;
        for t in client.list_tools().await? {
            let read_only = t.annotations.as_ref().and_then(|a| a.read_only_hint);
            println!(
                "{era:?}: {} ({:?}), read-only {read_only:?}",
                t.name, t.description
            );
        }
        let sum = client
            .call_tool("add", args(serde_json::json!({"a": 2, "b": 3})))
            .await?;
        let text = serde_json::to_value(&sum.content)?[0]["text"].clone();
        println!("  add(2, 3) = {text}");
        if text != "5" {
            return Err(format!("add answered {text}").into());
        }
        let hello = client
            .call_tool(
                "greet",
                args(serde_json::json!({"name": "Ada", "excitement": 2})),
            )
            .await?;
        println!(
            "  greet: {}",
            serde_json::to_value(&hello.content)?[0]["text"]
        );
        let zero = client
            .call_tool("divide", args(serde_json::json!({"a": 1, "b": 0})))
            .await?;
        println!("  divide(1, 0): isError {:?}", zero.is_error);
        if zero.is_error != Some(true) {
            return Err("dividing by zero should be the tool's error".into());
        }
        // The input schema says `a` is an integer: the server refuses before the tool runs.
        match client
            .call_tool("add", args(serde_json::json!({"a": "two", "b": 3})))
            .await
        {
            Ok(r) if r.is_error == Some(true) => println!("  add(\"two\", 3): isError"),
            Ok(_) => return Err("a string for an integer should be refused".into()),
            Err(e) => println!("  add(\"two\", 3): refused: {e}"),
        }
        client.close().await;
    }
    Ok(())
}
