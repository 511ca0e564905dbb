//! The MCP stdio transport, child processes (feature `child`), an in-memory one ([`duplex`])
//! and the [`Link`] a connection closes. Imports oxmcp-jsonrpc only; knows nothing of MCP.
//!
//! Messages are newline-delimited JSON. Lines are limited in size (4 MiB by default); an
//! oversized line is skipped and logged, and reading goes on with the next one. A child
//! server runs in its own process group so that shutting it down reaches its children too,
//! and starts with a small safe environment (see [`mod@env`]) unless told otherwise. Its exit
//! is watched, not only the end of its output: one that exits on its own has its group ended,
//! is reaped (never the other way round: a reaped child's group id may be reused) and the
//! connection's input is closed (see [`ChildProcess`]).
//!
//! ```
//! use oxmcp_jsonrpc::Inbound;
//! use tokio::io::AsyncWriteExt;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! // Any reader and writer: here one end of an in-memory pipe, the other end playing the peer.
//! let (mut peer, ours) = tokio::io::duplex(4096);
//! let (read, write) = tokio::io::split(ours);
//! let (mut channels, _writer) = oxmcp_transport::from_io(read, write, oxmcp_transport::DEFAULT_MAX_LINE);
//!
//! peer.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n").await.expect("written");
//! match channels.incoming.recv().await {
//!     Some(Inbound::Frame(frame)) => assert_eq!(frame, br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
//!     other => panic!("unexpected {other:?}"),
//! }
//! # }
//! ```

#[cfg(feature = "child")]
pub mod child;
#[cfg(feature = "child")]
pub mod env;
pub mod link;
pub mod memory;
pub mod ndjson;
pub mod stdio;

#[cfg(feature = "child")]
pub use child::{ChildConfig, ChildError, ChildProcess};
#[cfg(feature = "child")]
pub use env::{ChildEnv, Inherit};
pub use link::{Exit, Link};
pub use memory::duplex;
pub use ndjson::DEFAULT_MAX_LINE;
pub use stdio::{Channels, from_io, from_io_until, stdio, stdio_until};
