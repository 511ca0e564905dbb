//! Run with: cargo run -p oxmcp --example structured_output
//!
//! A tool returning `Json<T>`: its `outputSchema` comes from `T` (schemars), each result
//! carries `structuredContent` (and the same JSON as text for older clients), and the client
//! checks the result against the schema before handing it over.

use oxmcp::client::{ClientConfig, EraChoice};
use oxmcp::remote::{Remote, connect};
use oxmcp::server::{Json, server};
use oxmcp::types::JsonObject;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Forecast {
    /// The city asked about.
    city: String,
    /// Degrees Celsius.
    temperature: f64,
    /// A word for the sky.
    sky: String,
}

struct Weather;

#[server(name = "weather", version = "1.0.0")]
impl Weather {
    /// Today's forecast for a city.
    #[tool(read_only)]
    async fn forecast(&self, city: String) -> Json<Forecast> {
        Json(Forecast {
            temperature: if city == "Oslo" { -3.5 } else { 21.0 },
            sky: "clear".into(),
            city,
        })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let http = oxmcp::http::StreamableHttp::new(Weather.into_server()?, Default::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));

    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let remote = Remote::default().client(ClientConfig::default().era(era));
        let client = connect(&url, remote).await?;
        let tools = client.list_tools().await?;
        let schema = tools[0].output_schema.clone().ok_or("no outputSchema")?;
        println!("{era:?}: outputSchema {}", serde_json::to_string(&schema)?);
        let mut args = JsonObject::new();
        args.insert("city".into(), "Oslo".into());
        let result = client.call_tool("forecast", args).await?;
        let data = result.structured_content.ok_or("no structuredContent")?;
        println!("  structuredContent {data}");
        if data["temperature"] != -3.5 {
            return Err(format!("unexpected forecast {data}").into());
        }
        client.close().await;
    }
    Ok(())
}
