//! A stdio MCP server with many tools (`many_tools [N]`, 1,000 by default): `tool_0000` to
//! `tool_NNNN`, each with a small argument schema, each echoing its `text`. The inspector's
//! test lists and filters them in a browser.

use oxmcp_server::{Ctx, Server};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Args {
    /// What to echo.
    text: String,
    /// How many times.
    times: Option<u32>,
    /// Shout it.
    #[serde(default)]
    loud: bool,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1000);
    let mut builder = Server::builder("many-tools", "1.0.0");
    for i in 0..n {
        let name = format!("tool_{i:04}");
        let description = format!("Tool number {i}: echoes its text (group {})", i % 10);
        builder = builder.tool(&name, &description, |_ctx: Ctx, a: Args| async move {
            let text = if a.loud {
                a.text.to_uppercase()
            } else {
                a.text
            };
            Ok::<_, String>(text.repeat(a.times.unwrap_or(1).min(10) as usize))
        });
    }
    let server = builder.build()?;
    let (io, writer) = oxmcp_transport::stdio(oxmcp_transport::DEFAULT_MAX_LINE);
    server.serve(io.incoming, io.outgoing).await;
    writer.await?;
    Ok(())
}
