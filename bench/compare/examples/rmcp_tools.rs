//! A tools-only MCP server written with rmcp 3.11 (`echo` and `add`, over stdio): the rmcp
//! half of the side-by-side in docs/guide/migrating-from-rmcp.md.
//! Run with: cargo run --example rmcp_tools (from bench/compare)

use rmcp::handler::server::wrapper::Parameters;
use rmcp::{ServiceExt, tool, tool_router};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    message: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
}

#[derive(Clone)]
struct Tools;

#[tool_router(server_handler)]
impl Tools {
    /// Echoes the message back.
    #[tool]
    async fn echo(&self, Parameters(EchoArgs { message }): Parameters<EchoArgs>) -> String {
        message
    }

    /// Adds two numbers.
    #[tool(annotations(read_only_hint = true, idempotent_hint = true))]
    async fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        (a + b).to_string()
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let service = Tools.serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    Ok(())
}
