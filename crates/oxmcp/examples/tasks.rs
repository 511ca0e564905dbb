//! Run with: cargo run -p oxmcp --example tasks
//!
//! A tool that runs as a task, in one process: the server on Streamable HTTP
//! (127.0.0.1, a free port), and a client in each protocol era that starts the task,
//! watches its status messages and prints its result.

use std::time::Duration;

use oxmcp::client::{ClientConfig, ClientHandlers, EraChoice, ToolCall};
use oxmcp::remote::{Remote, connect};
use oxmcp::server::{Ctx, Server};
use oxmcp::types::TaskSupport;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Build {
    /// What to build.
    target: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The same handler runs as a plain call or as a task; its progress becomes the task's
    // status message.
    let server = Server::builder("tasks-example", "1.0.0")
        .task_tool(
            "build",
            "Builds a target in five steps",
            TaskSupport::Optional,
            |ctx: Ctx, a: Build| async move {
                for step in 1..=5 {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    let note = format!("building {}", a.target);
                    ctx.progress(f64::from(step), Some(5.0), Some(note)).await;
                }
                Ok::<_, String>(format!("built {}", a.target))
            },
        )
        .build()?;
    let http = oxmcp::http::StreamableHttp::new(server, oxmcp::http::HttpConfig::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));

    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let remote = Remote::default()
            .handlers(ClientHandlers::new())
            .client(ClientConfig::default().era(era));
        let client = connect(&url, remote).await?;
        let mut args = oxmcp::types::JsonObject::new();
        args.insert("target".into(), "docs".into());
        let task = match client.call_tool_as_task("build", args, None).await? {
            ToolCall::Task(task) => task,
            ToolCall::Done(result) => {
                println!("{era:?}: answered at once: {result:?}");
                continue;
            }
        };
        println!("{era:?}: task {} is {:?}", task.task_id, task.status);
        let result = client
            .task(&task.task_id)
            .wait(|t| {
                if let Some(m) = &t.status_message {
                    println!("  {:?} {m}", t.status);
                }
            })
            .await?;
        println!("{era:?}: {:?}", result.content);
        client.close().await;
    }
    Ok(())
}
