//! The documents of OAuth discovery: Protected Resource Metadata (RFC 9728) and
//! Authorization Server Metadata (RFC 8414 / OpenID Connect Discovery), and where to find them.

use serde::{Deserialize, Serialize};
use url::Url;

/// Protected Resource Metadata (RFC 9728 §2).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProtectedResourceMetadata {
    /// The resource identifier: the MCP server's canonical URI.
    pub resource: String,
    /// Issuers of the authorization servers that issue tokens for it.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// Scopes the resource knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// How tokens may be presented: always `["header"]` here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_methods_supported: Option<Vec<String>>,
    /// Where the resource's keys are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_uri: Option<String>,
    /// A name for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
    /// Documentation for developers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_documentation: Option<String>,
}

/// Authorization Server Metadata (RFC 8414 §2), the fields an MCP client or resource uses.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AuthorizationServerMetadata {
    /// The issuer identifier.
    pub issuer: String,
    /// Where the user authorizes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_endpoint: Option<String>,
    /// Where codes and refresh tokens become access tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
    /// Dynamic Client Registration (RFC 7591).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_endpoint: Option<String>,
    /// The issuer's signing keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_uri: Option<String>,
    /// Token introspection (RFC 7662).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub introspection_endpoint: Option<String>,
    /// Scopes the server issues.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// Grant types (default `authorization_code`, `implicit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_types_supported: Option<Vec<String>>,
    /// Client authentication methods at the token endpoint (default `client_secret_basic`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// PKCE methods; a client refuses a server that does not list `S256`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// Client ID Metadata Documents are accepted as `client_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id_metadata_document_supported: Option<bool>,
    /// DPoP proof algorithms the server accepts (RFC 9449 §5.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// RFC 9207: the authorization response carries `iss`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_response_iss_parameter_supported: Option<bool>,
}

impl AuthorizationServerMetadata {
    /// The endpoints a 2025-03-26 client falls back to when the server publishes no metadata:
    /// `/authorize`, `/token` and `/register` at the origin.
    pub fn fallback(origin: &Url) -> Self {
        let base = origin.origin().ascii_serialization();
        Self {
            issuer: base.clone(),
            authorization_endpoint: Some(format!("{base}/authorize")),
            token_endpoint: Some(format!("{base}/token")),
            registration_endpoint: Some(format!("{base}/register")),
            code_challenge_methods_supported: Some(vec!["S256".to_owned()]),
            ..Self::default()
        }
    }

    /// Whether `scope` is listed in `scopes_supported`.
    pub fn offers_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|x| x == scope))
    }
}

/// Where a resource's metadata may be, in the order a client tries them: path-inserted
/// (`/.well-known/oauth-protected-resource/<path>`), then at the root.
pub fn protected_resource_urls(server: &Url) -> Vec<Url> {
    let mut out = Vec::new();
    let path = server.path().trim_end_matches('/');
    let mut at = |p: &str| {
        let mut u = server.clone();
        u.set_path(p);
        u.set_query(None);
        u.set_fragment(None);
        out.push(u);
    };
    if !path.is_empty() {
        at(&format!("/.well-known/oauth-protected-resource{path}"));
    }
    at("/.well-known/oauth-protected-resource");
    out
}

/// Where an issuer's metadata may be, in the MCP order: for an issuer with a path, RFC 8414
/// path insertion, OpenID path insertion, OpenID path appending; without one, RFC 8414 then
/// OpenID.
pub fn authorization_server_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/').to_owned();
    let with = |p: String| {
        let mut u = issuer.clone();
        u.set_path(&p);
        u.set_query(None);
        u.set_fragment(None);
        u
    };
    if path.is_empty() {
        vec![
            with("/.well-known/oauth-authorization-server".to_owned()),
            with("/.well-known/openid-configuration".to_owned()),
        ]
    } else {
        vec![
            with(format!("/.well-known/oauth-authorization-server{path}")),
            with(format!("/.well-known/openid-configuration{path}")),
            with(format!("{path}/.well-known/openid-configuration")),
        ]
    }
}

/// Whether a Protected Resource Metadata `resource` may stand for the MCP server at
/// `server` (RFC 9728 §3.3): the same origin, and the server's path at or below the
/// resource's.
pub fn resource_matches(resource: &str, server: &Url) -> bool {
    let Ok(r) = Url::parse(resource) else {
        return false;
    };
    if r.origin() != server.origin() || r.fragment().is_some() {
        return false;
    }
    let rp = r.path().trim_end_matches('/');
    let sp = server.path().trim_end_matches('/');
    sp == rp || sp.starts_with(&format!("{rp}/"))
}

/// The canonical URI of a resource (RFC 8707, MCP): lower-case scheme and host, no fragment,
/// no trailing slash on the path (and none added to a bare origin).
pub fn canonical_resource(server: &Url) -> String {
    let mut s = server.origin().ascii_serialization();
    let path = server.path().trim_end_matches('/');
    s.push_str(path);
    if let Some(q) = server.query() {
        s.push('?');
        s.push_str(q);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn discovery_orders() {
        let prm: Vec<String> = protected_resource_urls(&u("https://a.example/public/mcp"))
            .iter()
            .map(Url::to_string)
            .collect();
        assert_eq!(
            prm,
            [
                "https://a.example/.well-known/oauth-protected-resource/public/mcp",
                "https://a.example/.well-known/oauth-protected-resource"
            ]
        );
        let with_path: Vec<String> = authorization_server_urls(&u("https://as.example/tenant1"))
            .iter()
            .map(Url::to_string)
            .collect();
        assert_eq!(
            with_path,
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration"
            ]
        );
        assert_eq!(authorization_server_urls(&u("https://as.example")).len(), 2);
    }

    #[test]
    fn resources_match_by_origin_and_path_prefix() {
        let server = u("https://a.example/mcp");
        assert!(resource_matches("https://a.example/mcp", &server));
        assert!(resource_matches("https://a.example", &server));
        assert!(resource_matches("https://A.example/", &server));
        assert!(!resource_matches("https://evil.example.com/mcp", &server));
        assert!(!resource_matches("https://a.example/other", &server));
        assert!(!resource_matches("https://a.example/mc", &server));
        assert!(!resource_matches("http://a.example/mcp", &server));
        assert_eq!(
            canonical_resource(&u("HTTPS://A.Example:443/mcp/")),
            "https://a.example/mcp"
        );
        assert_eq!(
            canonical_resource(&u("http://localhost:3000")),
            "http://localhost:3000"
        );
    }
}
