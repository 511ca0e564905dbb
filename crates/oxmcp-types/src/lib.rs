//! Model Context Protocol wire types for every revision, one superset model.
//! Owns the protocol model and the version feature table; imports no other crate of ours.
//!
//! Protocol types only: no I/O, no transports. Each struct keeps fields it does not model in
//! `extra`, so a newer peer's fields survive a round trip. Differences between revisions live
//! in [`ProtocolVersion`] and its [`Feature`] table.
//!
//! ```
//! use oxmcp_types::{ProtocolVersion, Feature, methods::{CallTool, Request}};
//! assert!(ProtocolVersion::V2025_03_26.has(Feature::Batching));
//! assert_eq!(CallTool::METHOD, "tools/call");
//! ```

pub mod common;
pub mod completion;
pub mod content;
pub mod elicitation;
pub mod lifecycle;
pub mod logging;
pub mod methods;
pub mod modern;
pub mod notifications;
pub mod prompts;
pub mod request_meta;
pub mod resources;
pub mod roots;
pub mod sampling;
#[cfg(feature = "skills")]
pub mod skills;
pub mod tasks;
pub mod tools;
pub mod trace;
mod verbatim;
pub mod version;
mod wire;

pub use common::*;
pub use completion::*;
pub use content::*;
pub use elicitation::*;
pub use lifecycle::*;
pub use logging::*;
pub use modern::*;
pub use notifications::*;
pub use prompts::*;
pub use request_meta::RequestMeta;
pub use resources::*;
pub use roots::*;
pub use sampling::*;
pub use tasks::*;
pub use tools::*;
pub use trace::TraceContext;
pub use version::{Feature, ProtocolVersion, UnknownVersion};
