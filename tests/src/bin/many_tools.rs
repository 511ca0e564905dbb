//! A stdio MCP server with many tools (`many_tools [N]`, 1,000 by default): `tool_0000` to
//! `tool_NNNN`, each with a small argument schema, each echoing its `text`, and `form`, whose
//! arguments have every shape a form is made of (an enum, a nested object, an array, a default)
//! and which answers them as JSON. The inspector's test lists and filters them in a browser,
//! and fills `form`'s form.

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

/// A shape.
#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Circle,
    Square,
    Star,
}

/// A point.
#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
struct Point {
    x: i64,
    y: i64,
}

fn three() -> u32 {
    3
}

/// Every shape of argument a form is made of.
#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
struct Form {
    /// A name.
    name: String,
    /// Which shape.
    kind: Kind,
    /// Where it is.
    at: Point,
    /// Labels.
    #[serde(default)]
    tags: Vec<String>,
    /// How many.
    #[serde(default = "three")]
    count: u32,
    /// Filled or not.
    #[serde(default)]
    filled: bool,
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
    let builder = builder.tool(
        "form",
        "Answers its arguments as JSON",
        |_ctx: Ctx, f: Form| async move { serde_json::to_string(&f).map_err(|e| e.to_string()) },
    );
    let server = builder.build()?;
    let (io, writer) = oxmcp_transport::stdio(oxmcp_transport::DEFAULT_MAX_LINE);
    server.serve(io.incoming, io.outgoing).await;
    writer.await?;
    Ok(())
}
