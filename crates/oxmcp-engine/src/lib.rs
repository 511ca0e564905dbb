//! The JSON-RPC peer loop shared by every MCP server and client over every transport, and the
//! [`Serve`] trait transports host. Imports oxmcp-jsonrpc and oxmcp-types; knows no MCP results.
//!
//! A transport turns bytes into frames (one JSON text each) on an `mpsc` channel and writes
//! the encoded lines it receives on another. [`run`] drives one connection: responses go to
//! waiting callers, `notifications/cancelled` aborts handlers, `notifications/progress`
//! reaches the request that asked for it, other notifications go to the [`Service`] in
//! arrival order, and requests run concurrently up to a bound.
//!
//! A batch (protocol 2025-03-26) is handled entry by entry exactly as the same messages sent
//! one by one: its requests take their ids, count against the bounds and can be cancelled.
//! Its answer is one array, sent when all of them are done, without the cancelled ones.
//!
//! [`Peer`] is the sending half: typed requests with timeouts (reset by progress, capped in
//! total) that send `notifications/cancelled` when they give up.

mod connection;
mod error;
mod options;
mod outbox;
mod peer;
mod serve;
mod service;

pub use connection::run;
pub use error::CallError;
pub use options::{EngineConfig, ProgressCallback, RequestOptions};
pub use peer::Peer;
pub use serve::{Connection, Identity, Serve};
pub use service::{HandlerResult, RequestContext, Service};
