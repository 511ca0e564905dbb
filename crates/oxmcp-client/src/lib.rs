//! Model Context Protocol client: typed methods, handlers, retries, supervision.
//! Imports oxmcp-engine, oxmcp-jsonrpc, oxmcp-types and oxmcp-transport; runs on any transport.
//!
//! [`Client::spawn`] starts a stdio server as a child process, performs the handshake and
//! gives typed methods for every server method; [`ClientHandlers`] answers the server's
//! sampling, elicitation (with schema defaults filled in) and roots requests, and the
//! capabilities declared follow from which handlers are set. Calls to a method the server
//! did not declare fail locally with [`oxmcp_engine::CallError::Protocol`]. A spawned server
//! starts with a small safe environment, not ours ([`ChildEnv`]).
//!
//! Most programs reach a server by URL through the facade crate (`oxmcp::remote::connect`,
//! any of `http(s)://`, `ws(s)://`, `grpc(s)://`) or start one as a child process:
//!
//! ```no_run
//! use oxmcp_client::{Client, ClientConfig, ClientHandlers, EraChoice};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let config = ClientConfig::default().era(EraChoice::Auto);
//! let client = Client::spawn("oxmcp", &["serve", "--stdio"], ClientHandlers::new(), config).await?;
//! for tool in client.list_tools().await? {
//!     println!("{}: {}", tool.name, tool.description.unwrap_or_default());
//! }
//! client.close().await;
//! # Ok(()) }
//! ```
//!
//! Any transport's channels work; here an in-memory connection to a server in the same
//! process:
//!
//! ```
//! use oxmcp_client::{Client, ClientConfig, ClientHandlers};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Echo {
//!     message: String,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = oxmcp_server::Server::builder("echo", "1.0.0")
//!     .tool("echo", "Echoes the message", |_ctx, a: Echo| async move {
//!         Ok::<_, String>(a.message)
//!     })
//!     .build()?;
//! let (server_end, client_end) = oxmcp_transport::duplex();
//! tokio::spawn(async move { server.serve(server_end.incoming, server_end.outgoing).await });
//!
//! let handlers = ClientHandlers::new();
//! let client = Client::connect(client_end.incoming, client_end.outgoing, handlers, ClientConfig::default()).await?;
//! let mut args = oxmcp_types::JsonObject::new();
//! args.insert("message".into(), "hi".into());
//! let result = client.call_tool("echo", args).await?;
//! assert_eq!(result.content[0].as_text(), Some("hi"));
//! client.close().await;
//! # Ok(())
//! # }
//! ```

mod client;
mod handler;
#[cfg(feature = "otel")]
mod otel;
mod pages;
pub mod retry;
pub mod skills;
pub mod supervisor;

pub use client::{
    Client, ClientConfig, ConnectError, EraChoice, Subscription, TaskHandle, ToolCall,
    invalid_header_annotation,
};
pub use handler::{ClientHandlers, ElicitationFn, MethodFn, RootsFn, SamplingFn, ServerEvent};
pub use oxmcp_engine::{CallError, RequestOptions};
#[cfg(feature = "child")]
pub use oxmcp_transport::{ChildConfig, ChildEnv};
pub use oxmcp_transport::{Exit, Link};
pub use retry::{RetryChoice, RetryPolicy};
pub use supervisor::{Connector, Heartbeat, Status, Supervised, SupervisorConfig, SupervisorError};

/// The URL-mode elicitations a -32042 error (URL elicitation required, 2025-11-25) asks the
/// user to complete before the request is retried; `None` for any other error. Show each
/// `url` to the user (with consent), then retry after the server's
/// [`ServerEvent::ElicitationComplete`] or when the user says so.
pub fn url_elicitations(error: &CallError) -> Option<Vec<oxmcp_types::ElicitParams>> {
    let rpc = error.rpc()?;
    if rpc.code != oxmcp_jsonrpc::ErrorCode::URL_ELICITATION_REQUIRED {
        return None;
    }
    let data = rpc.data.clone()?;
    serde_json::from_value::<oxmcp_types::UrlElicitationRequired>(data)
        .ok()
        .map(|d| d.elicitations)
}
