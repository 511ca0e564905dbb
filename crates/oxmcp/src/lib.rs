//! Model Context Protocol for Rust: the one import for servers, clients and transports.
//! Re-exports the crates of the stack; no library of ours depends on it. Imports oxmcp-auth
//! (feature `auth`), oxmcp-client (`client`), oxmcp-engine, oxmcp-gateway (`gateway`),
//! oxmcp-grpc (`grpc`), oxmcp-http (`http`), oxmcp-jsonrpc, oxmcp-proto (`http` or `grpc`),
//! oxmcp-remote (`client`), oxmcp-server (`server`), oxmcp-store (`store`), oxmcp-store-redis
//! (`redis`), oxmcp-transport, oxmcp-types and oxmcp-ws (`ws`).
//!
//! - [`types`]: the protocol model for every revision, with a per-version feature table.
//! - [`jsonrpc`]: strict JSON-RPC 2.0 messages and the transport boundary types.
//! - [`engine`]: the peer loop (ids, cancellation, progress, timeouts) and the
//!   [`engine::Serve`] trait every transport hosts.
//! - [`transport`]: stdio, child processes, in-memory connections.
//! - `server` and `client`; `server` also has the attribute macros (`server::server`,
//!   `server::tool`, `server::prompt`, `server::resource`, `server::completion`, feature
//!   `macros`) that write the builder calls for you; `remote` makes a client of a URL on the
//!   transport its scheme names, or of a command.
//! - `http` (Streamable HTTP and the legacy HTTP+SSE transport), `ws` (WebSocket) and `grpc`,
//!   each with the sides `server` and `client` turn on; `proto`, the protobuf encoding.
//! - `auth` (OAuth 2.1, both sides), `store` (the store of a scaled-out server, and
//!   `StoreTasks`, a server's tasks in it), `redis` (that store on Redis), `gateway` (one MCP
//!   server in front of several upstream servers, each supervised).
//! - [`serde`], [`serde_json`] and [`schemars`], the versions the stack uses, for tool
//!   arguments and results.
//!
//! # Features
//!
//! | feature | what it adds | default |
//! |---|---|---|
//! | `server` | `server`, `serve_stdio`; the server side of each transport turned on (`serve_http` with `http`) | yes |
//! | `client` | `client` (child processes over stdio too), `remote`; the client side of each transport turned on | yes |
//! | `macros` | the attribute macros (implies `server`) | yes |
//! | `http` | `http`, `proto` | yes |
//! | `ws` | `ws` | yes |
//! | `grpc` | `grpc`, `proto` | yes |
//! | `store` | `store`, and `StoreTasks` with `server` | yes |
//! | `auth` | `auth` | no |
//! | `redis` | `redis` (implies `store`) | no |
//! | `gateway` | `gateway` (implies `server` and `client`) | no |
//! | `otel` | W3C trace context across MCP on the sides turned on | no |
//!
//! A client-only build (`default-features = false, features = ["client", "http"]`) carries
//! no server code.
//!
//! The guide is here too, page by page: `guide` (on docs.rs).
//!
//! `serve_stdio` and `serve_http` run a server until its input ends or a signal comes;
//! `remote::connect` and `remote::supervise` make a client of a URL on any transport.
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

/// The guide, page by page (documentation only: its code blocks are fragments, not doctests).
#[cfg(all(doc, not(doctest)))]
pub mod guide;
#[cfg(all(feature = "store", feature = "server"))]
mod store_tasks;

#[cfg(all(feature = "store", feature = "server"))]
pub use store_tasks::StoreTasks;

#[cfg(feature = "auth")]
pub use oxmcp_auth as auth;
#[cfg(feature = "client")]
pub use oxmcp_client as client;
pub use oxmcp_engine as engine;
#[cfg(feature = "gateway")]
pub use oxmcp_gateway as gateway;
#[cfg(feature = "grpc")]
pub use oxmcp_grpc as grpc;
#[cfg(feature = "http")]
pub use oxmcp_http as http;
pub use oxmcp_jsonrpc as jsonrpc;
#[cfg(any(feature = "http", feature = "grpc"))]
pub use oxmcp_proto as proto;
#[cfg(feature = "client")]
pub use oxmcp_remote as remote;
#[cfg(feature = "server")]
pub use oxmcp_server as server;
#[cfg(feature = "store")]
pub use oxmcp_store as store;
#[cfg(feature = "redis")]
pub use oxmcp_store_redis as redis;
pub use oxmcp_transport as transport;
pub use oxmcp_types as types;
#[cfg(feature = "ws")]
pub use oxmcp_ws as ws;
pub use schemars;
pub use serde;
pub use serde_json;

#[cfg(feature = "server")]
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

#[cfg(all(feature = "server", feature = "http"))]
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
