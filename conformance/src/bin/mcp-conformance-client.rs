//! Fixture client for the official conformance suite. The server URL is the last argument;
//! the scenario comes from `MCP_CONFORMANCE_SCENARIO`. Exits 0 when the scenario's steps
//! succeeded.

use std::process::ExitCode;

use mcp_client::{Client, ClientConfig, ClientHandlers};
use mcp_jsonrpc::ErrorObject;
use mcp_types::{ElicitAction, ElicitResult, JsonObject};
use serde_json::json;

type Error = Box<dyn std::error::Error>;

async fn connect(
    url: &str,
    handlers: ClientHandlers,
) -> Result<(Client, mcp_http::HttpClientHandle), Error> {
    let t = mcp_http::client::connect(url, mcp_http::HttpClientConfig::default())?;
    let info =
        mcp_types::Implementation::new("mcp-rs-conformance-client", env!("CARGO_PKG_VERSION"));
    // Dual-era: 2026-07-28 when the server speaks it, else the handshake.
    let config = ClientConfig {
        info,
        era: mcp_client::EraChoice::Auto,
        ..ClientConfig::default()
    };
    let client = Client::connect(t.incoming, t.outgoing, handlers, config).await?;
    Ok((client, t.handle))
}

fn args(v: serde_json::Value) -> JsonObject {
    v.as_object().cloned().unwrap_or_default()
}

async fn run(scenario: &str, url: &str) -> Result<(), Error> {
    let mut handlers = ClientHandlers::new();
    if scenario == "elicitation-sep1034-client-defaults" {
        // Accept with nothing filled in: the library adds the schema's defaults.
        handlers = handlers.elicitation(|_| async {
            Ok::<_, ErrorObject>(ElicitResult {
                result_type: None,
                action: ElicitAction::Accept,
                content: Some(JsonObject::new()),
                meta: None,
                extra: JsonObject::new(),
            })
        });
    }
    let (client, handle) = connect(url, handlers).await?;
    let outcome: Result<(), Error> = async {
        match scenario {
            "initialize" => {
                client.list_tools().await?;
            }
            "tools_call" => {
                client.list_tools().await?;
                let r = client
                    .call_tool("add_numbers", args(json!({"a": 5, "b": 3})))
                    .await?;
                if r.failed() {
                    return Err("add_numbers failed".into());
                }
            }
            "elicitation-sep1034-client-defaults" => {
                client.list_tools().await?;
                client
                    .call_tool("test_client_elicitation_defaults", JsonObject::new())
                    .await?;
            }
            "sse-retry" => {
                client.list_tools().await?;
                client
                    .call_tool("test_reconnection", JsonObject::new())
                    .await?;
            }
            other => return Err(format!("scenario {other} is not supported by this client").into()),
        }
        Ok(())
    }
    .await;
    client.close().await;
    handle.close().await;
    outcome
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let Some(url) = std::env::args()
        .next_back()
        .filter(|a| a.starts_with("http"))
    else {
        eprintln!(
            "usage: mcp-conformance-client <server URL> (scenario in MCP_CONFORMANCE_SCENARIO)"
        );
        return ExitCode::FAILURE;
    };
    match run(&scenario, &url).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{scenario}: {e}");
            ExitCode::FAILURE
        }
    }
}
