//! The MCP stdio transport, and an in-memory one ([`duplex`]).
//!
//! Messages are newline-delimited JSON. Lines are limited in size (4 MiB by default); an
//! oversized line is skipped and logged, and reading goes on with the next one. A child
//! server runs in its own process group so that shutting it down reaches its children too,
//! and starts with a small safe environment (see [`mod@env`]) unless told otherwise.

pub mod child;
pub mod env;
pub mod memory;
pub mod ndjson;
pub mod stdio;

pub use child::{ChildConfig, ChildError, ChildProcess, Exit};
pub use env::{ChildEnv, Inherit};
pub use memory::duplex;
pub use ndjson::DEFAULT_MAX_LINE;
pub use stdio::{Channels, from_io, from_io_until, stdio, stdio_until};
