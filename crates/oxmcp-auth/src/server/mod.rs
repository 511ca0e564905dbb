//! The protected resource: token verifiers for the Streamable HTTP server's bearer
//! authentication ([`oxmcp_http::HttpAuth`]) and the Protected Resource Metadata it serves.
//!
//! - [`JwtVerifier`]: JWT access tokens against the issuer's key set.
//! - [`Introspection`]: opaque tokens by RFC 7662 introspection.
//! - [`StaticTokens`]: fixed tokens for local use.
//!
//! [`protect`] puts one of them together with the metadata into an [`oxmcp_http::HttpAuth`].

mod introspect;
mod jwt;
mod static_token;

use std::sync::Arc;

pub use introspect::{Introspection, IntrospectionConfig};
pub use jwt::{JwtConfig, JwtVerifier};
pub use oxmcp_http::{HttpAuth, ResourceScopes, ScopePolicy, TokenVerifier};
pub use static_token::StaticTokens;

use crate::AuthError;

/// The HTTP client of a verifier's own requests (keys, metadata, introspection): no
/// redirects, bounded time.
pub(crate) fn http_client() -> Result<reqwest::Client, AuthError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .map_err(AuthError::Http)
}
use crate::metadata::ProtectedResourceMetadata;

/// The protection of an MCP endpoint at `resource` (its canonical URI, e.g.
/// `https://mcp.example.com/mcp`) by `verifier`, with tokens from `authorization_servers`.
///
/// # Errors
/// A resource that is not an absolute http(s) URL.
pub fn protect(
    resource: &str,
    authorization_servers: Vec<String>,
    verifier: Arc<dyn TokenVerifier>,
    scopes: ScopePolicy,
    scopes_supported: Option<Vec<String>>,
) -> Result<HttpAuth, AuthError> {
    let url = url::Url::parse(resource)
        .map_err(|e| AuthError::Config(format!("resource {resource:?}: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(AuthError::Config(format!(
            "resource {resource:?} is not an http(s) URL"
        )));
    }
    let path = url.path().trim_end_matches('/');
    let metadata_url = format!(
        "{}/.well-known/oauth-protected-resource{path}",
        url.origin().ascii_serialization()
    );
    let metadata = ProtectedResourceMetadata {
        resource: resource.to_owned(),
        authorization_servers,
        scopes_supported,
        bearer_methods_supported: Some(vec!["header".to_owned()]),
        ..ProtectedResourceMetadata::default()
    };
    let metadata = serde_json::to_value(&metadata)
        .map_err(|e| AuthError::Config(format!("resource metadata: {e}")))?;
    Ok(HttpAuth {
        verifier,
        metadata,
        metadata_url,
        scopes,
    })
}
