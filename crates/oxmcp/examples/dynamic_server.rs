//! Run with: cargo run -p oxmcp --example dynamic_server
//!
//! A server whose tools depend on who asks: a `ServerHandler` computes each tenant's tool
//! list per request (here from a table in memory; a database would do as well). The server
//! runs in this process; two clients, each on a connection the transport says is a
//! different tenant's (as an authentication layer in front of HTTP would), list and call.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use oxmcp::client::{Client, ClientConfig, ClientHandlers, EraChoice};
use oxmcp::engine::{Connection, Serve};
use oxmcp::jsonrpc::ErrorObject;
use oxmcp::server::dynamic::{paginate, unknown_tool};
use oxmcp::server::{Ctx, Server, ServerHandler};
use oxmcp::transport::{Exit, Link};
use oxmcp::types::{CallToolParams, CallToolResult, JsonObject, ListToolsResult, Tool};

/// Each tenant's tools, by name and reply.
struct Tenants(BTreeMap<&'static str, Vec<(&'static str, &'static str)>>);

impl Tenants {
    /// The tools the caller's tenant has: none for a caller nobody verified.
    fn tools(&self, ctx: &Ctx) -> &[(&'static str, &'static str)] {
        let tenant = ctx.principal().unwrap_or_default();
        self.0.get(tenant).map(Vec::as_slice).unwrap_or_default()
    }
}

impl ServerHandler for Tenants {
    async fn list_tools(
        &self,
        ctx: &Ctx,
        cursor: Option<String>,
    ) -> Result<ListToolsResult, ErrorObject> {
        let tools: Vec<Tool> = self
            .tools(ctx)
            .iter()
            .map(|(name, _)| {
                Tool::default()
                    .with_name((*name).to_owned())
                    .with_description(Some(format!("{name}, for this tenant")))
            })
            .collect();
        let page_size = ctx.server().config().page_size;
        let (tools, next_cursor) = paginate(&tools, cursor.as_deref(), page_size)?;
        Ok(ListToolsResult::default()
            .with_tools(tools)
            .with_next_cursor(next_cursor))
    }

    async fn call_tool(
        &self,
        ctx: Ctx,
        params: CallToolParams,
    ) -> Result<CallToolResult, ErrorObject> {
        match self.tools(&ctx).iter().find(|(n, _)| *n == params.name) {
            Some((_, reply)) => Ok(CallToolResult::text(*reply)),
            None => Err(unknown_tool(&params.name)),
        }
    }
}

/// An in-memory connection has nothing to close.
struct InMemory;

impl Link for InMemory {
    fn close(self: Box<Self>) -> Pin<Box<dyn Future<Output = Option<Exit>> + Send>> {
        Box::pin(async { None })
    }
}

/// A client on a new in-memory connection that the server takes to be `tenant`'s.
async fn connect(server: &Server, tenant: &str, era: EraChoice) -> Result<Client, String> {
    let (ours, theirs) = oxmcp::transport::duplex();
    let (server, tenant) = (server.clone(), tenant.to_owned());
    tokio::spawn(async move {
        // Served as a transport hosts it: with the principal it verified.
        let connection = Connection {
            incoming: theirs.incoming,
            outgoing: theirs.outgoing,
            config: server.config().engine.clone(),
            principal: Some(tenant),
            direct: None,
            parking: None,
            session: None,
        };
        Serve::serve(&server, connection).await;
    });
    let config = ClientConfig::default().era(era);
    Client::connect_over(ours, InMemory, ClientHandlers::new(), config)
        .await
        .map_err(|e| e.to_string())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tenants = Tenants(BTreeMap::from([
        (
            "acme",
            vec![("invoice", "invoice sent"), ("ship", "shipped")],
        ),
        ("globex", vec![("forecast", "sunny")]),
    ]));
    let server = Server::builder("dynamic-example", "1.0.0")
        .handler(tenants)
        .build()?;
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        for tenant in ["acme", "globex"] {
            let client = connect(&server, tenant, era).await?;
            let tools = client.list_tools().await?;
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            println!("{era:?} {tenant}: tools {names:?}");
            let first = names.first().copied().unwrap_or_default();
            let result = client.call_tool(first, JsonObject::new()).await?;
            let text = oxmcp::serde_json::to_value(&result.content)?;
            println!("  {first} -> {}", text[0]["text"]);
            match client.call_tool("invoice", JsonObject::new()).await {
                Ok(_) => println!("  invoice -> answered"),
                Err(e) => println!("  invoice -> {e}"),
            }
            client.close().await;
        }
    }
    Ok(())
}
