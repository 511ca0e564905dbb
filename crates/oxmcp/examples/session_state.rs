//! Run with: cargo run -p oxmcp --example session_state
//!
//! State per session, kept by the server between requests: `ctx.session_state()` in a
//! `#[server]` impl block. Two clients of one server each change to a directory of their
//! own and read it back in a later call; neither sees the other's. With
//! `ServerConfig::state_store` set to a shared store (Redis, PostgreSQL), the same code
//! keeps it across the instances of a deployment.

use oxmcp::client::{ClientConfig, EraChoice};
use oxmcp::remote::{Remote, connect};
use oxmcp::server::{Ctx, Server, server};
use oxmcp::types::JsonObject;

struct Files;

#[server]
impl Files {
    /// Changes this session's working directory.
    #[tool]
    async fn cd(&self, ctx: Ctx, path: String) -> Result<String, String> {
        let state = ctx.session_state().map_err(|e| e.to_string())?;
        state.set("cwd", &path).await.map_err(|e| e.to_string())?;
        Ok(path)
    }

    /// This session's working directory (`/` until `cd`).
    #[tool(read_only)]
    async fn pwd(&self, ctx: Ctx) -> Result<String, String> {
        let state = ctx.session_state().map_err(|e| e.to_string())?;
        let cwd: Option<String> = state.get("cwd").await.map_err(|e| e.to_string())?;
        Ok(cwd.unwrap_or_else(|| "/".to_owned()))
    }
}

/// The text of a tool result.
fn text(r: &oxmcp::types::CallToolResult) -> Result<String, Box<dyn std::error::Error>> {
    Ok(serde_json::to_value(&r.content)?[0]["text"]
        .as_str()
        .ok_or("a text result")?
        .to_owned())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("files", "1.0.0").add(Files).build()?;
    let http = oxmcp::http::StreamableHttp::new(server, Default::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));

    let remote = || Remote::default().client(ClientConfig::default().era(EraChoice::Legacy));
    let (a, b) = (
        connect(&url, remote()).await?,
        connect(&url, remote()).await?,
    );
    for (client, dir) in [(&a, "/docs"), (&b, "/src")] {
        let mut args = JsonObject::new();
        args.insert("path".into(), dir.into());
        client.call_tool("cd", args).await?;
    }
    for (client, dir) in [(&a, "/docs"), (&b, "/src")] {
        let cwd = text(&client.call_tool("pwd", JsonObject::new()).await?)?;
        println!("a session that changed to {dir} is in {cwd}");
        if cwd != dir {
            return Err(format!("expected {dir}, got {cwd}").into());
        }
    }
    a.close().await;
    b.close().await;
    Ok(())
}
