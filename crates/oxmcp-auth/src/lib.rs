//! OAuth 2.1 authorization for MCP, both sides. Imports oxmcp-http (the client side plugs
//! into its Streamable HTTP client, the server side into its endpoint's authentication).
//!
//! - [`client`]: what an MCP client needs to reach a protected server: discovery (RFC 9728,
//!   RFC 8414, OpenID), the authorization code grant with PKCE, client registration (Client
//!   ID Metadata Documents, RFC 7591), refresh, step-up, client credentials, SSRF guards and
//!   a token store. [`client::OAuthClient`] plugs into the Streamable HTTP client transport.
//! - [`server`]: what a protected MCP server needs: token verifiers (JWT against a JWKS,
//!   RFC 7662 introspection, static tokens) for the Streamable HTTP server's authentication.
//! - [`challenge`] and [`metadata`]: the documents and headers both sides share.
//!
//! Protecting an endpoint with static tokens (for local use; [`server::JwtVerifier`] and
//! [`server::Introspection`] check real access tokens):
//!
//! ```
//! use std::sync::Arc;
//!
//! use oxmcp_auth::server::{ScopePolicy, StaticTokens, protect};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let tokens = StaticTokens::new(vec![("s3cret".into(), "alice".into())], vec!["mcp".into()])?;
//! let auth = protect(
//!     "https://mcp.example.com/mcp",
//!     vec!["https://as.example.com".into()],
//!     Arc::new(tokens),
//!     ScopePolicy::default(),
//!     None,
//! )?;
//! let config = oxmcp_http::HttpConfig::default().auth(Some(Arc::new(auth)));
//! # let _ = config;
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]

pub mod challenge;
pub mod client;
pub mod metadata;
pub mod server;

/// The seconds since the Unix epoch.
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Why authorization failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// Discovery found no usable metadata.
    #[error("discovery: {0}")]
    Discovery(String),
    /// Something was refused for safety: an address, a scheme, a mismatched resource or
    /// issuer, a missing PKCE, a state that does not match, too many attempts.
    #[error("refused: {0}")]
    Refused(String),
    /// The authorization server refused or answered badly.
    #[error("{0}")]
    Server(String),
    /// An HTTP request failed.
    #[error("HTTP request failed: {0}")]
    Http(#[source] reqwest::Error),
    /// The token store could not be read or written.
    #[error("token store: {0}")]
    Store(String),
    /// The configuration is not usable.
    #[error("configuration: {0}")]
    Config(String),
}
