//! Run with: cargo run -p oxmcp --example websocket
//!
//! MCP over WebSocket (our custom transport, subprotocol `mcp`, at `/ws`): one socket
//! carries messages both ways, so a tool can ask the client for input (here its roots) in
//! the middle of a call. A client in each protocol era connects to a `ws://` URL.

use oxmcp::client::{ClientConfig, ClientHandlers, EraChoice};
use oxmcp::http::HttpConfig;
use oxmcp::remote::{Remote, connect};
use oxmcp::server::{Ctx, Server};
use oxmcp::types::{Content, JsonObject, ListRootsResult, Root};
use oxmcp::ws::{WebSocket, WsConfig};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("websocket-example", "1.0.0")
        .tool(
            "where",
            "Says where the client works",
            |ctx: Ctx, _: Nothing| async move {
                let roots = ctx.roots().await.map_err(|e| e.to_string())?;
                let first = roots.first().map_or("nowhere", |r| r.uri.as_str());
                Ok::<_, String>(format!("you work in {first}"))
            },
        )
        .build()?;
    let ws = WebSocket::new(server, HttpConfig::default(), WsConfig::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("ws://{}/ws", listener.local_addr()?);
    tokio::spawn(oxmcp::http::serve_router(listener, ws.router()));

    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let handlers = ClientHandlers::new().roots(|| async {
            let root = Root::default().with_uri("file:///src/app".into());
            Ok(ListRootsResult::default().with_roots(vec![root]))
        });
        let client = ClientConfig::default().era(era);
        let client = connect(&url, Remote::default().handlers(handlers).client(client)).await?;
        println!(
            "{era:?}: connected to {url}, protocol {:?}",
            client.protocol_version()
        );
        let result = client.call_tool("where", JsonObject::new()).await?;
        let text = result
            .content
            .first()
            .and_then(Content::as_text)
            .unwrap_or_default();
        println!("{era:?}: {text}");
        if text != "you work in file:///src/app" {
            return Err(format!("{era:?}: unexpected result {result:?}").into());
        }
        client.close().await;
    }
    Ok(())
}
