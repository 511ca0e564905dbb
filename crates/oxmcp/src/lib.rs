//! Model Context Protocol for Rust: the one import for servers, clients and transports.
//! Re-exports the crates of the stack; no library of ours depends on it. Imports oxmcp-client,
//! oxmcp-engine, oxmcp-gateway (feature `gateway`), oxmcp-grpc, oxmcp-http, oxmcp-jsonrpc,
//! oxmcp-remote, oxmcp-server, oxmcp-store, oxmcp-transport, oxmcp-types and oxmcp-ws.
//!
//! - [`types`]: the protocol model for every revision, with a per-version feature table.
//! - [`jsonrpc`]: strict JSON-RPC 2.0 messages and the transport boundary types.
//! - [`engine`]: the peer loop (ids, cancellation, progress, timeouts) and the
//!   [`engine::Serve`] trait every transport hosts.
//! - [`transport`]: stdio, child processes, in-memory connections.
//! - [`http`]: Streamable HTTP and the legacy HTTP+SSE transport, server and client (and,
//!   as before, [`ws`] and [`grpc`] again under `http::ws` and `http::grpc`).
//! - [`ws`] and [`grpc`]: MCP over WebSocket and over gRPC, server and client.
//! - [`server`] and [`client`]; [`server`] also has the attribute macros
//!   ([`server::server`], [`server::tool`], [`server::prompt`], [`server::resource`],
//!   [`server::completion`]) that write the builder calls for you.
//! - [`serde`], [`serde_json`] and [`schemars`], the versions the stack uses, for tool
//!   arguments and results.
//!
//! - `gateway` (feature `gateway`): one MCP server in front of several upstream servers
//!   (stdio commands and URLs), each supervised: the `oxmcp-gateway` crate.
//!
//! [`StoreTasks`] keeps a server's tasks in a shared [`oxmcp_store::Store`] (Redis).
//!
//! The guide is here too, page by page: [`guide`].
//!
//! [`serve_stdio`] and [`serve_http`] run a server until its input ends or a signal comes;
//! [`remote::connect`] and [`remote::supervise`] make a client of a URL on any transport.
//!
//! A server written with the macros and a client, in one process over an in-memory
//! connection (over stdio the server would run with `oxmcp::serve_stdio(&server)`, over HTTP
//! with `oxmcp::serve_http`, and the client would be `oxmcp::remote::connect(url, ..)` or
//! `Client::spawn`):
//!
//! ```
//! use oxmcp::client::{Client, ClientConfig, ClientHandlers};
//! use oxmcp::server::server;
//!
//! struct Calc;
//!
//! #[server(name = "calc", version = "1.0.0")]
//! impl Calc {
//!     /// Adds two numbers.
//!     #[tool]
//!     async fn add(&self, a: i64, b: i64) -> String {
//!         (a + b).to_string()
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = Calc.into_server()?;
//! let (server_end, client_end) = oxmcp::transport::duplex();
//! tokio::spawn(async move { server.serve(server_end.incoming, server_end.outgoing).await });
//!
//! let client = Client::connect(
//!     client_end.incoming,
//!     client_end.outgoing,
//!     ClientHandlers::new(),
//!     ClientConfig::default(),
//! )
//! .await?;
//! assert_eq!(client.list_tools().await?[0].name, "add");
//! let mut args = oxmcp::types::JsonObject::new();
//! args.insert("a".into(), 2.into());
//! args.insert("b".into(), 3.into());
//! let result = client.call_tool("add", args).await?;
//! assert_eq!(result.content[0].as_text(), Some("5"));
//! client.close().await;
//! # Ok(())
//! # }
//! ```

/// The guide, page by page (documentation only).
#[cfg(doc)]
pub mod guide;
mod store_tasks;

pub use store_tasks::StoreTasks;

pub use oxmcp_client as client;
pub use oxmcp_engine as engine;
#[cfg(feature = "gateway")]
pub use oxmcp_gateway as gateway;
pub use oxmcp_grpc as grpc;
pub use oxmcp_jsonrpc as jsonrpc;
pub use oxmcp_remote as remote;
pub use oxmcp_server as server;
pub use oxmcp_transport as transport;
pub use oxmcp_types as types;
pub use oxmcp_ws as ws;
pub use schemars;

/// Streamable HTTP and the legacy HTTP+SSE transport: the `oxmcp-http` crate, with the
/// WebSocket and gRPC servers and clients at the paths they had when they lived in it
/// (`http::WebSocket`, `http::ws::client`, `http::Grpc`, `http::grpc::split`...).
pub mod http {
    pub use oxmcp_grpc as grpc;
    pub use oxmcp_grpc::Grpc;
    pub use oxmcp_http::*;
    pub use oxmcp_ws as ws;
    pub use oxmcp_ws::{WebSocket, WsConfig};
}
pub use serde;
pub use serde_json;

/// Serves `server` on stdin and stdout until stdin ends, then waits until every answer has
/// been written out (the last one included).
///
/// # Errors
/// An I/O error if the writer could not finish.
pub async fn serve_stdio(server: &oxmcp_server::Server) -> std::io::Result<()> {
    let (io, writer) = oxmcp_transport::stdio(oxmcp_transport::DEFAULT_MAX_LINE);
    server.serve(io.incoming, io.outgoing).await;
    writer.await.map_err(std::io::Error::other)
}

/// Serves `server` over Streamable HTTP at `http://ADDR/mcp` (with the legacy HTTP+SSE
/// transport at `/sse` and `/message`) until SIGTERM or Ctrl-C, with the default settings
/// and limits of [`http::HttpConfig`]; requests in flight are answered before it returns.
/// 2026-07-28 `Mcp-Param-*` headers are checked against the server's tools.
///
/// # Errors
/// An I/O error if `addr` cannot be bound or serving fails.
pub async fn serve_http(
    server: oxmcp_server::Server,
    addr: impl tokio::net::ToSocketAddrs,
) -> std::io::Result<()> {
    let shutdown = oxmcp_http::shutdown_on_signal();
    let config = oxmcp_http::HttpConfig::default().shutdown(shutdown.clone());
    let legacy = oxmcp_http::LegacySse::new(server.clone(), config.clone());
    let tools = server.clone();
    let streamable =
        oxmcp_http::StreamableHttp::new(server, config).with_param_headers(move |name| {
            tools
                .tool(name)
                .map(|t| t.header_params())
                .unwrap_or_default()
        });
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let app = streamable.router().merge(legacy.router());
    let options = oxmcp_http::ServeOptions::default();
    oxmcp_http::serve_router_with(listener, app, options, shutdown.cancelled_owned()).await
}
