//! Run with: cargo run -p mcp --example echo_stdio
//! (then type `{"jsonrpc":"2.0","id":1,"method":"initialize",...}` lines, or point `mcp tools` at it)

use mcp::server::{Ctx, Server};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    /// The text to echo back.
    message: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("echo-example", "1.0.0")
        .tool(
            "echo",
            "Echoes the message",
            |_ctx: Ctx, a: Echo| async move { Ok::<_, String>(a.message) },
        )
        .build()?;
    let (io, writer) = mcp::transport::stdio(mcp::transport::DEFAULT_MAX_LINE);
    server.serve(io.incoming, io.outgoing).await;
    writer.await?;
    Ok(())
}
