//! Run with: cargo run -p oxmcp --example extensions
//!
//! An extension (SEP-2133) of your own: the server declares it and serves a custom method;
//! the client declares it too and calls the method, in each protocol era. Both run in one
//! process over Streamable HTTP on 127.0.0.1.

use oxmcp::client::{ClientConfig, ClientHandlers, EraChoice};
use oxmcp::jsonrpc::ErrorObject;
use oxmcp::remote::{Remote, connect};
use oxmcp::server::{Ctx, Server};
use serde_json::json;

const EXTENSION: &str = "com.example/search-index";

#[derive(serde::Deserialize)]
struct Reindex {
    index: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("extensions-example", "1.0.0")
        .extension(EXTENSION, oxmcp::types::JsonObject::new())
        .method("search/reindex", |ctx: Ctx, p: Reindex| async move {
            // Handlers see whether this client declared the extension.
            let declared = ctx.client_supports_extension(EXTENSION);
            Ok::<_, ErrorObject>(json!({ "reindexed": p.index, "clientDeclared": declared }))
        })
        .build()?;
    let http = oxmcp::http::StreamableHttp::new(server, oxmcp::http::HttpConfig::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));

    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let remote = Remote::default()
            .handlers(ClientHandlers::new().extension(EXTENSION, Default::default()))
            .client(ClientConfig::default().era(era));
        let client = connect(&url, remote).await?;
        let declared = client.server_capabilities().extensions.clone();
        println!("{era:?}: the server declares {declared:?}");
        let answer = client
            .request("search/reindex", json!({ "index": "books" }))
            .await?;
        println!("{era:?}: {answer}");
        client.close().await;
    }
    Ok(())
}
