//! Run with: cargo run -p oxmcp --example echo_stdio
//! (then type `{"jsonrpc":"2.0","id":1,"method":"initialize",...}` lines, or point `oxmcp tools` at it)

use oxmcp::server::{Ctx, Server};

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
    let (io, writer) = oxmcp::transport::stdio(oxmcp::transport::DEFAULT_MAX_LINE);
    server.serve(io.incoming, io.outgoing).await;
    writer.await?;
    Ok(())
}
