//! MCP over WebSocket: our documented custom transport (`docs/transports/websocket.md`; the
//! spec allows any transport that carries MCP's JSON-RPC messages and lifecycle unchanged).
//! This crate owns both sides of it: the server (feature `server`, [`WebSocket`], an axum
//! router admitting its connections with oxmcp-http's `front`) and the client (feature
//! `client`, [`client`], on tokio-tungstenite), both on by default; a client-only build has
//! no axum and no hyper server. Imports oxmcp-engine, oxmcp-http, oxmcp-jsonrpc and
//! oxmcp-transport; hosts any [`oxmcp_engine::Serve`].
//!
//! - The endpoint is `/ws` on the HTTP listener, with the subprotocol `mcp`. A client that
//!   names subprotocols must name `mcp`; one that names none is served too.
//! - Each text frame carries one JSON-RPC message (or a batch, where the version allows one).
//!   A binary frame closes the connection with 1003, a message over the size limit with
//!   1009, text that is not UTF-8 with 1007.
//! - One connection is one session in the legacy era (`initialize` first, then requests both
//!   ways on the same socket); 2026-07-28 requests carry their `_meta` each, and
//!   `subscriptions/listen` streams its notifications over the socket.
//! - The upgrade request passes the same Host/Origin and bearer checks as `/mcp`. The
//!   connection closes with 1008 when its token expires or is refused when verified again
//!   (`HttpConfig::token_recheck_interval`); an `oxmcp/authorize` request presents a fresh
//!   one ([`oxmcp_http::reauth`]).
//! - Both sides ping; a peer that answers no pong within two intervals is gone.
//!
//! A server on a local port, with the checks and limits of an [`oxmcp_http::HttpConfig`]:
//!
//! ```no_run
//! # #[cfg(feature = "server")]
//! # async fn run(server: impl oxmcp_engine::Serve) -> std::io::Result<()> {
//! let ws = oxmcp_ws::WebSocket::new(server, Default::default(), oxmcp_ws::WsConfig::default());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! oxmcp_http::serve_router(listener, ws.router()).await // ws://127.0.0.1:8080/ws
//! # }
//! ```

#![forbid(unsafe_code)]

#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "server")]
mod server;

#[cfg(feature = "server")]
pub use server::{WebSocket, WsConfig};

/// The subprotocol of MCP over WebSocket.
pub const SUBPROTOCOL: &str = "mcp";

/// Close codes (RFC 6455 §7.4.1).
#[cfg(feature = "server")]
pub(crate) mod close {
    /// Normal closure.
    pub(crate) const NORMAL: u16 = 1000;
    /// The server is going away (shutdown).
    pub(crate) const GOING_AWAY: u16 = 1001;
    /// A frame of a type the endpoint does not accept (binary).
    pub(crate) const UNSUPPORTED: u16 = 1003;
    /// Text that is not UTF-8.
    pub(crate) const INVALID_DATA: u16 = 1007;
    /// A policy was broken (idle too long).
    pub(crate) const POLICY: u16 = 1008;
    /// A message over the size limit.
    pub(crate) const TOO_BIG: u16 = 1009;
    /// The endpoint failed.
    pub(crate) const INTERNAL: u16 = 1011;
}
