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
//!
//! A service that answers `ping`, driven over channels (a transport would own the other
//! ends):
//!
//! ```
//! use std::sync::Arc;
//!
//! use futures::future::BoxFuture;
//! use oxmcp_engine::{EngineConfig, HandlerResult, Peer, RequestContext, Service};
//! use oxmcp_jsonrpc::{Notification, Request, to_raw};
//! use tokio::sync::mpsc;
//!
//! struct Pong;
//!
//! impl Service for Pong {
//!     fn call(&self, _req: Request, _ctx: RequestContext) -> BoxFuture<'static, HandlerResult> {
//!         Box::pin(async { Ok(to_raw(&serde_json::json!({})).expect("serializable")) })
//!     }
//!     fn notify(&self, _n: Notification, _peer: &Peer) {}
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let (to_engine, incoming) = mpsc::channel(16);
//! let (outgoing, mut from_engine) = mpsc::channel(16);
//! tokio::spawn(oxmcp_engine::run(Peer::new(outgoing), incoming, Arc::new(Pong), EngineConfig::default()));
//!
//! let request = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_vec();
//! to_engine.send(request.into()).await.expect("engine running");
//! let answer = from_engine.recv().await.expect("an answer");
//! assert_eq!(answer.line(), Some(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
//! # }
//! ```

mod connection;
mod direct;
mod error;
mod feeder;
mod options;
mod outbox;
mod park;
mod peer;
mod running;
mod serve;
mod service;

pub use connection::{run, run_with};
pub use direct::{Direct, DirectAnswer, DirectCall, DirectSlot};
pub use error::CallError;
pub use feeder::{Fed, Feeder};
pub use options::{EngineConfig, ProgressCallback, RequestOptions};
pub use park::{ParkSlot, ParkedState};
pub use peer::Peer;
pub use serve::{Connection, Identity, Serve};
pub use service::{HandlerResult, RequestContext, Service};
