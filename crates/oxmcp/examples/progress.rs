//! Run with: cargo run -p oxmcp --example progress
//!
//! Progress: a tool reports progress through its `Ctx`; the client asks for it by setting
//! a progress callback in the call's `RequestOptions` (which adds `_meta.progressToken`)
//! and prints each `notifications/progress`, in each protocol era.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use oxmcp::client::{ClientConfig, EraChoice, RequestOptions};
use oxmcp::remote::{Remote, connect};
use oxmcp::server::{Ctx, Server};
use oxmcp::types::JsonObject;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Download {
    /// How many files to fetch.
    files: u32,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("progress-example", "1.0.0")
        .tool(
            "download",
            "Fetches files, one by one",
            |ctx: Ctx, a: Download| async move {
                for n in 1..=a.files {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    let note = format!("file {n} of {}", a.files);
                    ctx.progress(f64::from(n), Some(f64::from(a.files)), Some(note))
                        .await;
                }
                Ok::<_, String>(format!("{} files fetched", a.files))
            },
        )
        .build()?;
    let http = oxmcp::http::StreamableHttp::new(server, Default::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));

    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let client = ClientConfig::default().era(era);
        let client = connect(&url, Remote::default().client(client)).await?;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let options = RequestOptions::default().on_progress(move |p| {
            let total = p.total.unwrap_or(0.0);
            let message = p.message.as_deref().unwrap_or_default();
            println!("  progress {}/{total}: {message}", p.progress);
            if let Ok(mut seen) = sink.lock() {
                seen.push(p.progress);
            }
        });
        let mut args = JsonObject::new();
        args.insert("files".into(), 4.into());
        let result = client.call_tool_with("download", args, &options).await?;
        println!(
            "{era:?}: {:?}",
            result.content.first().and_then(|c| c.as_text())
        );
        let seen = seen.lock().map_err(|e| e.to_string())?.clone();
        if seen != [1.0, 2.0, 3.0, 4.0] {
            return Err(format!("{era:?}: expected progress 1..4, got {seen:?}").into());
        }
        client.close().await;
    }
    Ok(())
}
