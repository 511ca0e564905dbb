//! Run with: cargo run -p oxmcp --example cancellation
//!
//! Cancellation: the client gives up on a long tool call, once by dropping the call (here
//! through `tokio::time::timeout`) and once through the call's own `RequestOptions`
//! timeout. On a legacy session the client sends `notifications/cancelled`; in 2026-07-28
//! over Streamable HTTP it closes the request's POST, which is the cancellation there.
//! Either way the server fires `ctx.cancellation()`, which the handler itself watches: it
//! may return (its result is not sent) or is aborted after a short grace. Both eras, over
//! Streamable HTTP and a WebSocket.

use std::time::Duration;

use oxmcp::client::{ClientConfig, EraChoice, RequestOptions};
use oxmcp::remote::{Remote, connect};
use oxmcp::server::{Ctx, Server};
use oxmcp::types::JsonObject;
use tokio::sync::mpsc;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The tool tells main what happened to it.
    let (report, mut reports) = mpsc::unbounded_channel::<&'static str>();
    let server = Server::builder("cancellation-example", "1.0.0")
        .tool(
            "slow",
            "Works for a minute unless cancelled",
            move |ctx: Ctx, _: Nothing| {
                let report = report.clone();
                // The handler sees its own cancellation: it keeps running (for
                // `EngineConfig::cancel_grace`, 1 s by default) after the token fires.
                async move {
                    tokio::select! {
                        () = ctx.cancellation().cancelled() => {
                            let _ = report.send("cancelled");
                            Err("cancelled".to_owned())
                        }
                        () = tokio::time::sleep(Duration::from_secs(60)) => {
                            let _ = report.send("finished");
                            Ok("done".to_owned())
                        }
                    }
                }
            },
        )
        .build()?;
    let ws = oxmcp::ws::WebSocket::new(server.clone(), Default::default(), Default::default());
    let http = oxmcp::http::StreamableHttp::new(server, Default::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(oxmcp::http::serve_router(
        listener,
        http.router().merge(ws.router()),
    ));

    let runs = [
        (EraChoice::Legacy, format!("http://{addr}/mcp")),
        (EraChoice::Modern, format!("http://{addr}/mcp")),
        (EraChoice::Legacy, format!("ws://{addr}/ws")),
        (EraChoice::Modern, format!("ws://{addr}/ws")),
    ];
    for (era, url) in runs {
        println!("-- {era:?} over {url}");
        let client = ClientConfig::default().era(era);
        let client = connect(&url, Remote::default().client(client)).await?;

        // 1. Drop the call after 300 ms.
        let call = client.call_tool("slow", JsonObject::new());
        let dropped = tokio::time::timeout(Duration::from_millis(300), call).await;
        println!(
            "{era:?}: dropped the call: {}",
            if dropped.is_err() { "gave up" } else { "?" }
        );
        expect(&mut reports, era).await?;

        // 2. A per-request timeout: the call fails with a timeout error.
        let options = RequestOptions::default().timeout(Duration::from_millis(300));
        match client
            .call_tool_with("slow", JsonObject::new(), &options)
            .await
        {
            Ok(r) => return Err(format!("{era:?}: the call was not cut short: {r:?}").into()),
            Err(e) => println!("{era:?}: with a 300 ms timeout: {e}"),
        }
        expect(&mut reports, era).await?;
        client.close().await;
    }
    Ok(())
}

/// Waits for the tool to say it saw the cancellation.
async fn expect(
    reports: &mut mpsc::UnboundedReceiver<&'static str>,
    era: EraChoice,
) -> Result<(), Box<dyn std::error::Error>> {
    let got = tokio::time::timeout(Duration::from_secs(5), reports.recv()).await?;
    println!("{era:?}: the tool says {got:?}");
    match got {
        Some("cancelled") => Ok(()),
        other => Err(format!("the tool did not see the cancellation: {other:?}").into()),
    }
}
