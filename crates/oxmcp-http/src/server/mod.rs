//! The server side (feature `server`): the Streamable HTTP endpoint ([`StreamableHttp`]: POST,
//! GET, DELETE, 2026-07-28 stateless requests, legacy ones without sessions), the legacy HTTP+SSE endpoint, who may come in
//! (admission, Host/Origin, per-client limits, tokens and their leases), how answers go out
//! (JSON bodies, SSE streams, the protobuf encoding, replies and refusals), the HTTP sessions
//! and their streams, and the session backend they use (`backend`): this instance only, or
//! several instances over a shared store (`scale_out`). The WebSocket and gRPC servers of
//! oxmcp-ws and oxmcp-grpc admit their connections with the parts that `crate::front` makes
//! public. Nothing in `crate::client` imports this module.

pub(crate) mod admission;
pub(crate) mod backend;
pub(crate) mod clients;
pub(crate) mod config;
pub(crate) mod direct;
pub(crate) mod endpoint;
pub(crate) mod get;
pub(crate) mod guard;
pub(crate) mod hangup;
pub(crate) mod header_match;
pub(crate) mod lease;
pub(crate) mod legacy;
pub(crate) mod listener;
pub(crate) mod log_span;
pub(crate) mod one_request;
pub(crate) mod post;
pub(crate) mod protobuf;
pub(crate) mod refusal;
pub(crate) mod replies;
pub(crate) mod resource_scopes;
pub(crate) mod scale_out;
pub(crate) mod session;
pub(crate) mod sessionless;
pub(crate) mod sse_stream;
pub(crate) mod stateless;

pub use clients::Principal;
pub use config::{HttpConfig, ResponseMode};
pub use endpoint::StreamableHttp;
pub use legacy::LegacySse;
pub use listener::{ServeOptions, serve_router, serve_router_with, shutdown_on_signal};

/// Client-supplied text for a log line: at most 200 characters, printed with `{:?}` so that
/// control characters and line breaks are escaped and cannot forge log lines.
pub(crate) fn loggable(text: &str) -> &str {
    match text.char_indices().nth(200) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}
