//! Attribute macros for oxmcp servers. Each expands to calls of the server crate's
//! `ServerBuilder` (`typed_tool`, `prompt`, `resource`, `resource_template`, `completion`,
//! `complete_argument`), so validation, capabilities and both protocol eras work exactly as
//! with the builder. Use them through `oxmcp::server` (or `oxmcp_server`, feature `macros`,
//! on by default); the guide `docs/guide/macros.md` has the full reference. Imports no other
//! crate of ours (the expansions name `oxmcp_server`).
//!
//! - [`macro@server`] on an `impl T` block registers its marked functions, which share the
//!   value (`&self`, held in an `Arc`); `T` gets `into_server()` and `builder()`.
//! - [`macro@tool`], [`macro@prompt`], [`macro@resource`] and [`macro@completion`] mark
//!   functions in such a block, or turn a free `async fn` into a unit struct of the same
//!   name to pass to `ServerBuilder::add` (the function stays callable as `name::call`).
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use oxmcp::server::{Ctx, Json, server, tool};
//!
//! #[derive(Default)]
//! struct Counter {
//!     count: AtomicU64,
//! }
//!
//! #[derive(oxmcp::serde::Serialize, oxmcp::schemars::JsonSchema)]
//! #[serde(crate = "oxmcp::serde")]
//! #[schemars(crate = "oxmcp::schemars")]
//! struct Count {
//!     count: u64,
//! }
//!
//! /// Counts calls.
//! #[server(name = "counter", version = "1.0.0")]
//! impl Counter {
//!     /// Adds `by` (1 by default) and returns the new count.
//!     #[tool(idempotent = false)]
//!     async fn add(&self, _ctx: Ctx, by: Option<u64>) -> Json<Count> {
//!         let by = by.unwrap_or(1);
//!         Json(Count { count: self.count.fetch_add(by, Ordering::Relaxed) + by })
//!     }
//! }
//!
//! /// Echoes the message.
//! #[tool(read_only)]
//! async fn echo(message: String) -> String {
//!     message
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = Counter::default().builder().add(echo).build()?;
//! assert!(server.tool("add").is_some() && server.tool("echo").is_some());
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

mod attrs;
mod common;
mod completion;
mod free;
mod paths;
mod prompt;
mod resource;
mod server;
mod sig;
mod tool;

use proc_macro::TokenStream;

/// Registers the `#[tool]`, `#[prompt]`, `#[resource]` and `#[completion]` functions of an
/// inherent `impl T` block: `T` gets `impl Register` (and `Arc<T>` too), `fn builder(self)
/// -> ServerBuilder` and `fn into_server(self) -> Result<Server, BuildError>`.
///
/// Arguments (all optional): `name = "..."` and `version = "..."` (the crate's
/// `CARGO_PKG_NAME` and `CARGO_PKG_VERSION` by default), `instructions = "..."` (else the
/// block's doc comment, if any). Other items of the block are left as they are.
#[proc_macro_attribute]
pub fn server(attr: TokenStream, item: TokenStream) -> TokenStream {
    match server::expand(attr.into(), item.into()) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// A tool: name from the function (`name = "..."`), description from the doc comment
/// (`description = "..."`; one of them is required), annotations `title = "..."`,
/// `read_only`, `destructive`, `idempotent`, `open_world` (flags, or `= false`) and
/// `icons = ["https://..."]`.
///
/// Parameters: `Ctx` (the request context), then either one per argument (an input schema
/// property each, `Option<T>` ones optional, `#[serde(...)]`, `#[schemars(...)]` and
/// `#[arg(name = "...", description = "...")]` apply) or one `Args<T>` with the whole
/// arguments. Returns anything `IntoCallToolResult` (`String`, `Json<T>`...) or a
/// `Result<_, E: Display>` whose `Err` is a result with `isError: true`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    free::expand("tool", attr.into(), item.into()).into()
}

/// A prompt: name from the function (`name = "..."`), description from the doc comment
/// (`description = "..."`), `title = "..."`, `icons = [...]`. Each parameter but a `Ctx` is
/// an argument: `String` required, `Option<String>` optional, described by
/// `#[arg(description = "...")]`. Returns `String` (one user message), `Vec<PromptMessage>`,
/// `GetPromptResult`, or a `Result` of one (an `Err` is a JSON-RPC error).
#[proc_macro_attribute]
pub fn prompt(attr: TokenStream, item: TokenStream) -> TokenStream {
    free::expand("prompt", attr.into(), item.into()).into()
}

/// A resource: `#[resource("scheme://path", name = "...", mime = "...", title = "...",
/// description = "...", icons = [...])]`. A URI with `{variables}` is a template whose
/// variables bind the `String` parameters of the same names; `uri: String` gets the URI
/// read; `Ctx` the request context. Returns `String` (text), `Vec<u8>` (a blob),
/// `ReadResourceResult`, or a `Result` of one (an `Err` is a JSON-RPC error).
#[proc_macro_attribute]
pub fn resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    free::expand("resource", attr.into(), item.into()).into()
}

/// Completion. Bare: the `completion/complete` provider, `async fn(&self, [Ctx,] params:
/// CompleteParams) -> CompleteResult` (or a `Result`). With `prompt = "name"` or
/// `resource = "uri template"`, and `argument = "arg"`: the completer of that argument,
/// `async fn(&self, [Ctx,] value: String) -> Vec<String>` (or a `Result`), given the text
/// typed so far; values not starting with it are dropped, at most 100 sent. A server has
/// one form or the other.
#[proc_macro_attribute]
pub fn completion(attr: TokenStream, item: TokenStream) -> TokenStream {
    free::expand("completion", attr.into(), item.into()).into()
}
