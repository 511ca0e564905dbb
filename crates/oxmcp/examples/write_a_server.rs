//! The README's "Write a server": a complete program, compiled in CI (the README test checks
//! that the README shows exactly this code). Run with: cargo run -p oxmcp --example write_a_server

use oxmcp::server::{Ctx, Server};

#[derive(oxmcp::serde::Deserialize, oxmcp::schemars::JsonSchema)]
#[serde(crate = "oxmcp::serde")]
#[schemars(crate = "oxmcp::schemars")]
struct Echo {
    /// The text to send back.
    message: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("my-server", "1.0.0")
        .tool(
            "echo",
            "Echoes the message",
            |_ctx: Ctx, a: Echo| async move { Ok::<_, String>(a.message) },
        )
        .build()?;
    // Over stdio until stdin ends, the last answer flushed before returning.
    // For Streamable HTTP instead: oxmcp::serve_http(server, "127.0.0.1:8080").await?;
    oxmcp::serve_stdio(&server).await?;
    Ok(())
}
