//! The README's "Write a server": a complete program, compiled in CI (the README test checks
//! that the README shows exactly this code). Run with: cargo run -p oxmcp --example write_a_server

use oxmcp::server::server;

struct Echo;

#[server(name = "my-server", version = "1.0.0")]
impl Echo {
    /// Echoes the message.
    #[tool]
    async fn echo(&self, message: String) -> String {
        message
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Over stdio until stdin ends, the last answer flushed before returning.
    // For Streamable HTTP instead: oxmcp::serve_http(Echo.into_server()?, "127.0.0.1:8080").await?;
    oxmcp::serve_stdio(&Echo.into_server()?).await?;
    Ok(())
}
