//! Model Context Protocol client: typed methods, handlers, retries, supervision.
//! Imports mcp-engine, mcp-jsonrpc, mcp-types and mcp-transport; runs on any transport.
//!
//! [`Client::spawn`] starts a stdio server as a child process, performs the handshake and
//! gives typed methods for every server method; [`ClientHandlers`] answers the server's
//! sampling, elicitation (with schema defaults filled in) and roots requests, and the
//! capabilities declared follow from which handlers are set. Calls to a method the server
//! did not declare fail locally with [`mcp_engine::CallError::Protocol`]. A spawned server
//! starts with a small safe environment, not ours ([`ChildEnv`]).

mod client;
mod handler;
mod pages;
pub mod retry;
pub mod supervisor;

pub use client::{
    Client, ClientConfig, ConnectError, EraChoice, Subscription, invalid_header_annotation,
};
pub use handler::{ClientHandlers, ElicitationFn, RootsFn, SamplingFn, ServerEvent};
pub use mcp_engine::{CallError, RequestOptions};
#[cfg(feature = "child")]
pub use mcp_transport::{ChildConfig, ChildEnv};
pub use mcp_transport::{Exit, Link};
pub use retry::{RetryChoice, RetryPolicy};
pub use supervisor::{Connector, Heartbeat, Status, Supervised, SupervisorConfig, SupervisorError};
