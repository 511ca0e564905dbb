//! Run with: cargo run -p oxmcp --example gateway --features gateway
//!
//! A gateway built in code (`oxmcp::gateway`, the gateway of `oxmcp serve --config`): one
//! server in front of an upstream server, whose tools it lists as `up__NAME` and to which it
//! forwards calls, with supervision, per-request connections and the other lists. The
//! upstream, the gateway and its client all run in this process on 127.0.0.1.

use oxmcp::gateway::{Config, Gateway, Upstream};
use oxmcp::remote::{Remote, connect};
use oxmcp::server::{Server, tool};
use oxmcp::types::JsonObject;

/// Shouts the message back.
#[tool]
async fn shout(message: String) -> String {
    message.to_uppercase()
}

/// Serves `server` over Streamable HTTP on a free port and returns its URL.
async fn serve(server: Server) -> std::io::Result<String> {
    let http = oxmcp::http::StreamableHttp::new(server, Default::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));
    Ok(url)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let upstream_url = serve(Server::builder("upstream", "1.0.0").add(shout).build()?).await?;
    // The same as `[[upstream]] name = "up" url = "..."` in mcp.toml (`Config::from_toml`);
    // `Upstream::command("up", ["some-server", "--stdio"])` would start a stdio server.
    let config = Config::default().with_upstream(Upstream::url("up", upstream_url));
    let gateway = Gateway::builder(config).start().await?;
    let gateway_url = serve(gateway.server().clone()).await?;

    let client = connect(&gateway_url, Remote::default()).await?;
    let names: Vec<String> = client
        .list_tools()
        .await?
        .into_iter()
        .map(|t| t.name)
        .collect();
    println!("the gateway lists {names:?}");
    let mut args = JsonObject::new();
    args.insert("message".into(), "hello".into());
    let r = client.call_tool("up__shout", args).await?;
    let text = serde_json::to_value(&r.content)?[0]["text"].clone();
    println!("up__shout(hello) = {text}");
    client.close().await;
    gateway.stop().await;
    if names != ["up__shout"] || text != "HELLO" {
        return Err("the gateway should list and forward the upstream's tool".into());
    }
    Ok(())
}
