//! Run with: cargo run -p oxmcp --example roots
//!
//! Roots: a tool reads the client's roots with `ctx.roots()`. The client changes them and
//! says so (`notifications/roots/list_changed`); in the legacy era the server reads them
//! again at once and its `on_roots_changed` hook sees the new list, while a 2026-07-28
//! request asks the client each time. Over Streamable HTTP.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use oxmcp::client::{ClientConfig, ClientHandlers, EraChoice};
use oxmcp::remote::{Remote, connect};
use oxmcp::server::{Ctx, Server};
use oxmcp::types::{Content, JsonObject, ListRootsResult, Root};
use tokio::sync::mpsc;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

fn root(uri: &str) -> Root {
    Root::default().with_uri(uri.into())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (changed, mut changes) = mpsc::unbounded_channel();
    let server = Server::builder("roots-example", "1.0.0")
        .tool(
            "workspace",
            "Lists the client's roots",
            |ctx: Ctx, _: Nothing| async move {
                let roots = ctx.roots().await.map_err(|e| e.to_string())?;
                Ok::<_, String>(
                    roots
                        .into_iter()
                        .map(|r| r.uri)
                        .collect::<Vec<_>>()
                        .join(" "),
                )
            },
        )
        .on_roots_changed(move |roots| {
            let _ = changed.send(roots.iter().map(|r| r.uri.clone()).collect::<Vec<_>>());
        })
        .build()?;
    let http = oxmcp::http::StreamableHttp::new(server, Default::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));

    for era in [EraChoice::Legacy, EraChoice::Modern] {
        // The client's roots, which it may change while connected.
        let roots = Arc::new(Mutex::new(vec![root("file:///home/me/project")]));
        let current = roots.clone();
        let handlers = ClientHandlers::new().roots(move || {
            let roots = current.lock().map(|r| r.clone()).unwrap_or_default();
            async move { Ok(ListRootsResult::default().with_roots(roots)) }
        });
        let client = ClientConfig::default().era(era);
        let client = connect(&url, Remote::default().handlers(handlers).client(client)).await?;
        let call = || client.call_tool("workspace", JsonObject::new());
        let text = |r: oxmcp::types::CallToolResult| {
            r.content
                .first()
                .and_then(Content::as_text)
                .unwrap_or_default()
                .to_owned()
        };
        let before = text(call().await?);
        println!("{era:?}: the server sees {before}");

        roots
            .lock()
            .map_err(|e| e.to_string())?
            .push(root("file:///home/me/docs"));
        if !client.is_modern() {
            client.notify_roots_changed().await?;
            let seen = tokio::time::timeout(Duration::from_secs(5), changes.recv()).await?;
            println!("{era:?}: on_roots_changed got {seen:?}");
        }
        let after = text(call().await?);
        println!("{era:?}: the server sees {after}");
        if before != "file:///home/me/project"
            || after != "file:///home/me/project file:///home/me/docs"
        {
            return Err(format!("{era:?}: unexpected roots {before:?} then {after:?}").into());
        }
        client.close().await;
    }
    Ok(())
}
