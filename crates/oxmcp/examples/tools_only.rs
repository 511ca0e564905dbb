//! A tools-only MCP server written with oxmcp's macros (`echo` and `add`, over stdio): the
//! oxmcp half of the side-by-side in docs/guide/migrating-from-rmcp.md.
//! Run with: cargo run -p oxmcp --example tools_only

use oxmcp::server::server;

struct Tools;

#[server]
impl Tools {
    /// Echoes the message back.
    #[tool]
    async fn echo(&self, message: String) -> String {
        message
    }

    /// Adds two numbers.
    #[tool(read_only, idempotent)]
    async fn add(&self, a: i64, b: i64) -> i64 {
        a + b
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    oxmcp::serve_stdio(&Tools.into_server()?).await?;
    Ok(())
}
