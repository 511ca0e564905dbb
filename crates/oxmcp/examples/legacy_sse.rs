//! Run with: cargo run -p oxmcp --example legacy_sse
//!
//! The HTTP+SSE transport of protocol 2024-11-05: `GET /sse` opens a stream whose first
//! event names the URL to POST messages to (`/message?sessionId=...`), and every answer
//! comes back on the stream. A raw GET shows that first event; then a client pointed at
//! `/sse` finds no Streamable HTTP there, falls back to HTTP+SSE by itself and calls a tool.

use oxmcp::client::ClientConfig;
use oxmcp::http::LegacySse;
use oxmcp::remote::{Remote, connect};
use oxmcp::server::{Ctx, Server};
use oxmcp::types::{Content, JsonObject, ProtocolVersion};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("legacy-sse-example", "1.0.0")
        .tool("add", "Adds two numbers", |_: Ctx, x: Add| async move {
            Ok::<_, String>((x.a + x.b).to_string())
        })
        .build()?;
    let legacy = LegacySse::new(server, Default::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/sse", listener.local_addr()?);
    tokio::spawn(oxmcp::http::serve_router(listener, legacy.router()));

    // The wire: the stream's first event is `endpoint`.
    let mut stream = reqwest::Client::new()
        .get(&url)
        .header("accept", "text/event-stream")
        .send()
        .await?;
    let first = stream.chunk().await?.unwrap_or_default();
    let first = String::from_utf8_lossy(&first);
    println!("GET /sse -> {}\n{}", stream.status(), first.trim());
    if !first.contains("event: endpoint") || !first.contains("/message?sessionId=") {
        return Err(format!("unexpected first event {first:?}").into());
    }
    drop(stream); // closing the stream ends that session

    let client = ClientConfig::default().protocol_version(ProtocolVersion::V2024_11_05);
    let client = connect(&url, Remote::default().client(client)).await?;
    println!(
        "client: connected, protocol {:?}",
        client.protocol_version()
    );
    let mut args = JsonObject::new();
    args.insert("a".into(), 2.into());
    args.insert("b".into(), 40.into());
    let result = client.call_tool("add", args).await?;
    let text = result
        .content
        .first()
        .and_then(Content::as_text)
        .unwrap_or_default();
    println!("client: add(2, 40) = {text}");
    if text != "42" {
        return Err(format!("unexpected result {result:?}").into());
    }
    client.close().await;
    Ok(())
}
