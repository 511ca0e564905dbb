//! Fixture client for the official conformance suite. The server URL is the last argument;
//! the scenario comes from `MCP_CONFORMANCE_SCENARIO`. Exits 0 when the scenario's steps
//! succeeded.

use std::process::ExitCode;

use oxmcp_client::{Client, ClientConfig, ClientHandlers};
use oxmcp_jsonrpc::ErrorObject;
use oxmcp_types::{ElicitAction, ElicitResult, JsonObject};
use serde_json::json;

type Error = Box<dyn std::error::Error>;

async fn connect(
    url: &str,
    scenario: &str,
    handlers: ClientHandlers,
) -> Result<(Client, oxmcp_http::HttpClientHandle), Error> {
    // sse-retry's mock takes any GET for the reconnection it waits for. Our standalone GET
    // stream, opened after the handshake, raced the tools/call: when it arrived after the POST,
    // the mock answered the call on it and warned that the client had neither waited `retry`
    // nor sent Last-Event-ID. Without it, the only GET is the resumption.
    let http = oxmcp_http::HttpClientConfig::default()
        .standalone_stream(scenario != "sse-retry")
        .authorizer(if scenario.starts_with("auth/") {
            Some(oauth(url, scenario)?)
        } else {
            None
        });
    let t = oxmcp_http::client::connect(url, http)?;
    let info =
        oxmcp_types::Implementation::new("mcp-rs-conformance-client", env!("CARGO_PKG_VERSION"));
    // Dual-era: 2026-07-28 when the server speaks it, else the handshake.
    let config = ClientConfig::default()
        .info(info)
        .era(oxmcp_client::EraChoice::Auto);
    let client = Client::connect(t.incoming, t.outgoing, handlers, config).await?;
    Ok((client, t.handle))
}

/// The suite's `MCP_CONFORMANCE_CONTEXT` (credentials for some auth scenarios).
fn context() -> serde_json::Value {
    std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or_default()
}

/// The OAuth client of the `auth/*` scenarios: headless authorization (the suite's
/// authorization servers approve at once), client credentials for the extension scenarios.
fn oauth(
    url: &str,
    scenario: &str,
) -> Result<std::sync::Arc<dyn oxmcp_http::client::Authorizer>, Error> {
    use oxmcp_auth::client::{Assertion, Flow, Headless, OAuthClient, OAuthConfig, SigningKey};
    let ctx = context();
    let text = |k: &str| ctx[k].as_str().map(str::to_owned);
    let flow = if scenario.starts_with("auth/client-credentials") {
        let key = match text("private_key_pem") {
            Some(pem) => {
                let alg = text("signing_algorithm").unwrap_or_else(|| "ES256".into());
                Some(SigningKey {
                    pem,
                    algorithm: alg.parse()?,
                    kid: None,
                })
            }
            None => None,
        };
        Flow::ClientCredentials(key)
    } else if let (Some(endpoint), Some(id_token)) =
        (text("idp_token_endpoint"), text("idp_id_token"))
    {
        // Enterprise-managed authorization (cross-app access): ID token -> ID-JAG -> token.
        Flow::JwtBearer(Assertion::IdJag {
            idp_token_endpoint: endpoint,
            idp_client_id: text("idp_client_id").unwrap_or_default(),
            idp_client_secret: None,
            id_token,
        })
    } else if let Some(jwt) = text("valid_jwt") {
        // Workload identity federation: the workload's own JWT.
        Flow::JwtBearer(Assertion::Jwt(jwt))
    } else {
        Flow::AuthorizationCode(std::sync::Arc::new(Headless::new(
            "http://localhost:3000/callback",
        )?))
    };
    let mut config = OAuthConfig::new(url, flow);
    config.client_id = text("client_id");
    config.client_secret = text("client_secret");
    config.client_metadata_url = Some("https://conformance-test.local/client-metadata.json".into());
    config.client_name = "mcp-rs-conformance-client".into();
    Ok(std::sync::Arc::new(OAuthClient::new(config)?))
}

/// `tools/list` when the server declares tools; a server without them is not an error.
async fn list_tools_if_offered(client: &Client) -> Result<(), Error> {
    if client.server_capabilities().tools.is_some() {
        client.list_tools().await?;
    }
    Ok(())
}

fn args(v: serde_json::Value) -> JsonObject {
    v.as_object().cloned().unwrap_or_default()
}

async fn run(scenario: &str, url: &str) -> Result<(), Error> {
    let mut handlers = ClientHandlers::new();
    if scenario == "sep-2322-client-request-state" {
        handlers = handlers.elicitation(|_| async {
            let mut content = JsonObject::new();
            content.insert("confirmed".into(), json!(true));
            Ok::<_, ErrorObject>(
                ElicitResult::cancel()
                    .with_action(ElicitAction::Accept)
                    .with_content(Some(content)),
            )
        });
    }
    if scenario == "elicitation-sep1034-client-defaults" {
        // Accept with nothing filled in: the library adds the schema's defaults.
        handlers = handlers.elicitation(|_| async {
            Ok::<_, ErrorObject>(
                ElicitResult::cancel()
                    .with_action(ElicitAction::Accept)
                    .with_content(Some(JsonObject::new())),
            )
        });
    }
    if scenario.starts_with("sep-2640-client-") {
        let id = oxmcp_types::skills::EXTENSION_ID;
        handlers = handlers.extension(id, JsonObject::new());
    }
    let (client, handle) = connect(url, scenario, handlers).await?;
    let outcome: Result<(), Error> = async {
        match scenario {
            // The mock declares no capabilities: connect, list what is offered, close.
            "initialize" => {
                list_tools_if_offered(&client).await?;
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
            "json-schema-2020-12-preservation" => {
                // Round-trip the focal tool's schema, untouched, through the echo tool.
                let tools = client.list_tools().await?;
                let focal = tools
                    .iter()
                    .find(|t| t.name == "json_schema_2020_12_tool")
                    .ok_or("the focal tool is not listed")?;
                let schema = serde_json::Value::Object(focal.input_schema.clone());
                client
                    .call_tool("json_schema_echo", args(json!({ "schema": schema })))
                    .await?;
            }
            "sep-2322-client-request-state" => {
                client.list_tools().await?;
                // Each call's input rounds are handled by the client; errors of the mock's
                // odd tools are not this client's failures.
                for tool in ["test_mrtr_echo_state", "test_mrtr_no_state"] {
                    let _ = client.call_tool(tool, JsonObject::new()).await;
                }
                let (a, b) = tokio::join!(
                    client.call_tool("test_mrtr_unrelated", JsonObject::new()),
                    client.call_tool("test_mrtr_no_result_type", JsonObject::new())
                );
                drop((a, b));
            }
            "http-custom-headers" => {
                client.list_tools().await?;
                let context: serde_json::Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
                    .ok()
                    .and_then(|c| serde_json::from_str(&c).ok())
                    .unwrap_or_default();
                for call in context["toolCalls"].as_array().cloned().unwrap_or_default() {
                    let name = call["name"].as_str().unwrap_or_default();
                    let _ = client
                        .call_tool(name, args(call["arguments"].clone()))
                        .await;
                }
            }
            "http-invalid-tool-headers" => {
                // Tools with invalid x-mcp-header annotations are left out by list_tools.
                for t in client.list_tools().await? {
                    let _ = client.call_tool(&t.name, JsonObject::new()).await;
                }
            }
            _ if scenario.starts_with("sep-2640-client-") => {
                mcp_conformance::skills::client(&client, scenario).await?;
            }
            // Authorized: list, then call the test tool (step-up scenarios gate the call).
            _ if scenario.starts_with("auth/") => {
                client.list_tools().await?;
                let r = client.call_tool("test-tool", JsonObject::new()).await?;
                if r.failed() {
                    return Err("test-tool failed".into());
                }
            }
            // Scenarios that only need a working connection and a listing.
            _ => {
                list_tools_if_offered(&client).await?;
            }
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
