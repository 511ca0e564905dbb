//! Run with: cargo run -p oxmcp --example gateway
//!
//! A gateway written in code: a `ServerHandler` that answers with an upstream server's tools
//! under a prefix and forwards calls to it through a client. (The `oxmcp serve --config`
//! gateway does this for many upstreams, with supervision, retries and the other lists.)
//! The upstream and the gateway both run in this process on 127.0.0.1.

use oxmcp::client::Client;
use oxmcp::engine::CallError;
use oxmcp::jsonrpc::ErrorObject;
use oxmcp::remote::{Remote, connect};
use oxmcp::server::dynamic::unknown_tool;
use oxmcp::server::{Ctx, Server, ServerHandler, tool};
use oxmcp::types::{CallToolParams, CallToolResult, JsonObject, ListToolsResult};

/// Shouts the message back.
#[tool]
async fn shout(message: String) -> String {
    message.to_uppercase()
}

/// Serves `server` over Streamable HTTP on a free port and returns its URL.
async fn serve(server: Server) -> std::io::Result<String> {
    let http = oxmcp::http::StreamableHttp::new(server, Default::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));
    Ok(url)
}

/// The upstream's tools, as `up__NAME`.
struct Gateway {
    upstream: Client,
}

const PREFIX: &str = "up__";

fn upstream_error(e: CallError) -> ErrorObject {
    match e {
        CallError::Rpc(e) => e,
        other => ErrorObject::internal(format!("upstream: {other}")),
    }
}

impl ServerHandler for Gateway {
    async fn list_tools(
        &self,
        _ctx: &Ctx,
        _cursor: Option<String>,
    ) -> Result<ListToolsResult, ErrorObject> {
        let tools = self.upstream.list_tools().await.map_err(upstream_error)?;
        let tools = tools
            .into_iter()
            .map(|t| {
                let name = format!("{PREFIX}{}", t.name);
                t.with_name(name)
            })
            .collect();
        Ok(ListToolsResult::default().with_tools(tools))
    }

    async fn call_tool(
        &self,
        _ctx: Ctx,
        params: CallToolParams,
    ) -> Result<CallToolResult, ErrorObject> {
        let Some(name) = params.name.strip_prefix(PREFIX) else {
            return Err(unknown_tool(&params.name));
        };
        let args = params.arguments.unwrap_or_default();
        self.upstream
            .call_tool(name, args)
            .await
            .map_err(upstream_error)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let upstream_url = serve(Server::builder("upstream", "1.0.0").add(shout).build()?).await?;
    let upstream = connect(&upstream_url, Remote::default()).await?;
    let gateway = Server::builder("gateway", "1.0.0")
        .handler(Gateway { upstream })
        .build()?;
    let gateway_url = serve(gateway).await?;

    let client = connect(&gateway_url, Remote::default()).await?;
    let names: Vec<String> = client
        .list_tools()
        .await?
        .into_iter()
        .map(|t| t.name)
        .collect();
    println!("the gateway lists {names:?}");
    let mut args = JsonObject::new();
    args.insert("message".into(), "hello".into());
    let r = client.call_tool("up__shout", args).await?;
    let text = serde_json::to_value(&r.content)?[0]["text"].clone();
    println!("up__shout(hello) = {text}");
    if names != ["up__shout"] || text != "HELLO" {
        return Err("the gateway should list and forward the upstream's tool".into());
    }
    client.close().await;
    Ok(())
}
