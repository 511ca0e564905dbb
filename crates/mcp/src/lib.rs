//! Model Context Protocol for Rust: one import for servers, clients and transports.
//!
//! - [`types`]: the protocol model for every revision, with a per-version feature table.
//! - [`jsonrpc`]: strict JSON-RPC 2.0 messages.
//! - [`engine`]: the peer loop (ids, cancellation, progress, timeouts).
//! - [`transport`]: stdio and child processes.
//! - [`server`] and [`client`].

pub use mcp_client as client;
pub use mcp_engine as engine;
pub use mcp_jsonrpc as jsonrpc;
pub use mcp_server as server;
pub use mcp_transport as transport;
pub use mcp_types as types;
