//! Run with: cargo run -p oxmcp --example stateful
//!
//! State on `&self`: a `#[server]` impl block whose tools share a counter and a notebook.
//! The server value is registered as an `Arc` the program keeps, so the state is visible
//! from outside too; a `ctx: Ctx` parameter reports progress and logs to the caller.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use oxmcp::client::{ClientConfig, EraChoice};
use oxmcp::remote::{Remote, connect};
use oxmcp::server::{Ctx, Server, server};
use oxmcp::types::{JsonObject, LoggingLevel};

#[derive(Default)]
struct Notebook {
    calls: AtomicU64,
    notes: Mutex<Vec<String>>,
}

#[server]
impl Notebook {
    /// Writes a note down and says how many there are.
    #[tool]
    async fn note(&self, ctx: Ctx, text: String) -> Result<String, String> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        ctx.log(LoggingLevel::Info, Some("notebook"), text.clone().into())
            .await;
        let mut notes = self.notes.lock().map_err(|e| e.to_string())?;
        notes.push(text);
        Ok(format!("{} notes", notes.len()))
    }

    /// Reads every note back, reporting progress per note.
    #[tool(read_only)]
    async fn read_all(&self, ctx: Ctx) -> Result<String, String> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let notes = self.notes.lock().map_err(|e| e.to_string())?.clone();
        for i in 0..notes.len() {
            ctx.progress((i + 1) as f64, Some(notes.len() as f64), None)
                .await;
        }
        Ok(notes.join("\n"))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let notebook = Arc::new(Notebook::default());
    let server = Server::builder("notebook", "1.0.0")
        .add(notebook.clone())
        .build()?;
    let http = oxmcp::http::StreamableHttp::new(server, Default::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));

    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let remote = Remote::default().client(ClientConfig::default().era(era));
        let client = connect(&url, remote).await?;
        let mut args = JsonObject::new();
        args.insert("text".into(), format!("written in {era:?}").into());
        let r = client.call_tool("note", args).await?;
        println!("{era:?}: {}", serde_json::to_value(&r.content)?[0]["text"]);
        if era == EraChoice::Modern {
            let all = client.call_tool("read_all", JsonObject::new()).await?;
            println!(
                "  read_all: {}",
                serde_json::to_value(&all.content)?[0]["text"]
            );
        }
        client.close().await;
    }
    let notes = notebook.notes.lock().map_err(|e| e.to_string())?.clone();
    let calls = notebook.calls.load(Ordering::Relaxed);
    println!("the server's own state: {calls} calls, notes {notes:?}");
    if notes.len() != 2 || calls != 3 {
        return Err("each era should have written one note".into());
    }
    Ok(())
}
