//! Run with: cargo run -p oxmcp --example grpc
//!
//! MCP over gRPC: the `mcp.v1.Mcp` service (a bidirectional `Connect` stream) served over
//! HTTP/2 on 127.0.0.1, and a client in each protocol era connecting to its `grpc://` URL,
//! listing the tools and calling one that reports progress along the stream.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use oxmcp::client::{ClientConfig, EraChoice, RequestOptions};
use oxmcp::grpc::Grpc;
use oxmcp::http::HttpConfig;
use oxmcp::remote::{Remote, connect};
use oxmcp::server::{Ctx, Server};
use oxmcp::types::{Content, JsonObject};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Count {
    /// Up to what.
    to: u32,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("grpc-example", "1.0.0")
        .tool(
            "count",
            "Counts, reporting each number",
            |ctx: Ctx, a: Count| async move {
                for n in 1..=a.to {
                    ctx.progress(f64::from(n), Some(f64::from(a.to)), None)
                        .await;
                }
                Ok::<_, String>(format!("counted to {}", a.to))
            },
        )
        .build()?;
    let grpc = Grpc::new(server, HttpConfig::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("grpc://{}", listener.local_addr()?);
    // No TLS; the listener runs until the program ends.
    let forever = std::future::pending();
    tokio::spawn(oxmcp::grpc::serve_grpc(
        listener,
        grpc.router(),
        None,
        forever,
    ));

    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let client = ClientConfig::default().era(era);
        let client = connect(&url, Remote::default().client(client)).await?;
        let tools: Vec<_> = client
            .list_tools()
            .await?
            .into_iter()
            .map(|t| t.name)
            .collect();
        println!("{era:?}: {url} serves {tools:?}");
        let seen = Arc::new(AtomicU32::new(0));
        let count = seen.clone();
        let options = RequestOptions::default().on_progress(move |_| {
            count.fetch_add(1, Ordering::SeqCst);
        });
        let mut args = JsonObject::new();
        args.insert("to".into(), 5.into());
        let result = client.call_tool_with("count", args, &options).await?;
        let text = result
            .content
            .first()
            .and_then(Content::as_text)
            .unwrap_or_default();
        let seen = seen.load(Ordering::SeqCst);
        println!("{era:?}: {text}, with {seen} progress notification(s)");
        if text != "counted to 5" || seen != 5 {
            return Err(format!("{era:?}: unexpected {result:?}, {seen}").into());
        }
        client.close().await;
    }
    Ok(())
}
