//! MCP over Streamable HTTP (2025-03-26 to 2025-11-25 sessions and 2026-07-28 stateless
//! requests) and the 2024-11-05 HTTP+SSE transport: the server side (feature `server`, in
//! `server/`) and the client side (feature `client`, in `client/`), both on by default; the
//! client side uses nothing of the server side, so a client-only build
//! (`default-features = false, features = ["client"]`) has no axum and no hyper server. The
//! WebSocket and gRPC transports live in oxmcp-ws and oxmcp-grpc, whose servers admit their
//! connections with [`front`] and whose clients take fresh tokens with [`reauth`].
//! Imports oxmcp-engine, oxmcp-jsonrpc, oxmcp-proto, oxmcp-store, oxmcp-transport and
//! oxmcp-types; hosts any [`oxmcp_engine::Serve`].
//!
//! [`StreamableHttp`] turns a service (an `oxmcp_server::Server`, a gateway, any
//! [`oxmcp_engine::Serve`]) into an axum `Router` with one endpoint
//! (`/mcp` by default) answering POST, GET and DELETE:
//!
//! - sessions with `Mcp-Session-Id` (128 random bits from the OS), 400 without one, 404 for an
//!   unknown or ended one, DELETE to end, idle expiry;
//! - `application/json` or `text/event-stream` responses ([`ResponseMode`]); a request's
//!   notifications and server-to-client requests travel on its own POST stream, everything
//!   else on the GET stream, each message on exactly one stream;
//! - SSE priming events, `retry`, resumption with `Last-Event-ID` from a per-stream log (an
//!   [`oxmcp_store::EventLog`], in memory by default: [`StreamableHttp::with_event_log`]);
//! - `Host`/`Origin` validation (DNS-rebinding protection) on by default, `MCP-Protocol-Version`
//!   (400), `Accept` (406), `Content-Type` (415) and body size (413) checks.
//!
//! With a shared [`oxmcp_store::Store`] ([`StreamableHttp::with_store`]) several instances
//! serve the same sessions behind any load balancer.
//!
//! [`LegacySse`] serves the 2024-11-05 HTTP+SSE transport (`GET /sse`, `POST /message`), and
//! the client transport falls back to it by itself (the spec's backward-compatibility probe).
//!
//! A server on a local port and a client of it (feature `client`, on by default):
//!
//! ```
//! use oxmcp_http::{HttpClientConfig, HttpConfig, StreamableHttp};
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
//! let http = StreamableHttp::new(server, HttpConfig::default());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let url = format!("http://{}/mcp", listener.local_addr()?);
//! tokio::spawn(oxmcp_http::serve_router(listener, http.router()));
//!
//! let (channels, session) = oxmcp_http::client::connect(&url, HttpClientConfig::default())?.into_parts();
//! let handlers = oxmcp_client::ClientHandlers::new();
//! let client = oxmcp_client::Client::connect_over(channels, session, handlers, Default::default()).await?;
//! let mut args = serde_json::Map::new();
//! args.insert("message".into(), "hi".into());
//! assert_eq!(client.call_tool("echo", args).await?.content[0].as_text(), Some("hi"));
//! client.close().await;
//! # Ok(())
//! # }
//! ```

// Handlers return `Result<_, Response>`, the axum idiom; the Err size does not matter there.
#![allow(clippy::result_large_err)]

#[cfg(feature = "server")]
pub mod auth;
#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "server")]
pub mod front;
#[cfg(feature = "client")]
mod origin;
pub mod reauth;
#[cfg(feature = "server")]
mod server;
pub mod sse;
#[cfg(feature = "server")]
pub mod stats;

#[cfg(feature = "server")]
pub use auth::{
    HttpAuth, Identity, ResourceScopes, ScopePolicy, TokenError, TokenVerifier,
    canonical_resource_uri,
};
#[cfg(feature = "client")]
pub use client::{
    BodyEncoding, HttpClientConfig, HttpClientError, HttpClientHandle, HttpClientTransport,
};
#[cfg(feature = "server")]
pub use server::{
    HttpConfig, LegacySse, Principal, ResponseMode, ServeOptions, StreamableHttp, serve_router,
    serve_router_with, shutdown_on_signal,
};
