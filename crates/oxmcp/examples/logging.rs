//! Run with: cargo run -p oxmcp --example logging
//!
//! Logging: a tool logs through its `Ctx` at four levels; the client chooses the lowest
//! level it wants (`logging/setLevel` in the legacy era, each request's `_meta` in
//! 2026-07-28) and its event handler receives only the messages at or above it.

use std::sync::{Arc, Mutex};

use oxmcp::client::{ClientConfig, ClientHandlers, EraChoice, ServerEvent};
use oxmcp::remote::{Remote, connect};
use oxmcp::server::{Ctx, Server};
use oxmcp::types::{JsonObject, LoggingLevel};
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Job {
    /// What to process.
    name: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("logging-example", "1.0.0")
        .tool(
            "process",
            "Processes a job, logging as it goes",
            |ctx: Ctx, job: Job| async move {
                let log = Some("process");
                ctx.log(
                    LoggingLevel::Debug,
                    log,
                    json!({ "step": "parsing", "job": job.name }),
                )
                .await;
                ctx.log(LoggingLevel::Info, log, json!("started")).await;
                ctx.log(LoggingLevel::Warning, log, json!("disk almost full"))
                    .await;
                ctx.log(
                    LoggingLevel::Error,
                    log,
                    json!({ "failed": "cache", "retrying": true }),
                )
                .await;
                Ok::<_, String>(format!("processed {}", job.name))
            },
        )
        .build()?;
    let http = oxmcp::http::StreamableHttp::new(server, Default::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));

    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let handlers = ClientHandlers::new().on_event(move |event| {
            if let ServerEvent::Log(m) = event {
                println!(
                    "  [{:?}] {}: {}",
                    m.level,
                    m.logger.as_deref().unwrap_or("-"),
                    m.data
                );
                if let Ok(mut seen) = sink.lock() {
                    seen.push(m.level);
                }
            }
        });
        let client = ClientConfig::default().era(era);
        let client = connect(&url, Remote::default().handlers(handlers).client(client)).await?;
        client.set_log_level(LoggingLevel::Warning).await?;
        let mut args = JsonObject::new();
        args.insert("name".into(), "report".into());
        println!("{era:?}: calling with the level at warning");
        let result = client.call_tool("process", args).await?;
        println!(
            "{era:?}: {:?}",
            result.content.first().and_then(|c| c.as_text())
        );
        // Notifications about a request arrive before its answer.
        let levels = seen.lock().map_err(|e| e.to_string())?.clone();
        if levels != [LoggingLevel::Warning, LoggingLevel::Error] {
            return Err(format!("{era:?}: expected warning and error, got {levels:?}").into());
        }
        client.close().await;
    }
    Ok(())
}
