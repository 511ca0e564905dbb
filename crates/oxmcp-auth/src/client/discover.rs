//! Discovery: from the server's challenge to its Protected Resource Metadata, and from there
//! to the authorization server's metadata (with the 2025-03-26 fallbacks when there is none).

use url::Url;

use super::guard::HostPolicy;
use crate::AuthError;
use crate::metadata::{
    AuthorizationServerMetadata, ProtectedResourceMetadata, authorization_server_urls,
    canonical_resource, protected_resource_urls, resource_matches,
};

/// What discovery found for one server.
#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    /// The resource's metadata, if it publishes any (2025-06-18 and later).
    pub(crate) resource_metadata: Option<ProtectedResourceMetadata>,
    /// The `resource` to ask tokens for: the metadata's, else the server's canonical URI.
    pub(crate) resource: String,
    /// The authorization server.
    pub(crate) server: AuthorizationServerMetadata,
}

impl Discovered {
    /// A grant from this authorization server for this resource, to be filled with tokens.
    pub(crate) fn grant(
        &self,
        token_endpoint: &str,
        client: super::store::RegisteredClient,
    ) -> super::store::Grant {
        super::store::Grant {
            issuer: self.server.issuer.clone(),
            resource: self.resource.clone(),
            token_endpoint: token_endpoint.to_owned(),
            client,
            ..super::store::Grant::default()
        }
    }
}

/// The largest metadata document read.
const MAX_DOCUMENT: usize = 256 * 1024;

/// GETs a JSON document; `Ok(None)` when the server has none there (any non-2xx).
async fn fetch<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    url: &Url,
) -> Result<Option<T>, AuthError> {
    let resp = match http
        .get(url.clone())
        .header("accept", "application/json")
        .send()
        .await
    {
        Ok(r) => r,
        Err(e) if e.is_connect() || e.is_timeout() => return Ok(None),
        Err(e) => return Err(AuthError::Http(e)),
    };
    if !resp.status().is_success() {
        return Ok(None);
    }
    if resp
        .content_length()
        .is_some_and(|n| n > MAX_DOCUMENT as u64)
    {
        return Err(AuthError::Discovery(format!("{url}: document too large")));
    }
    let body = resp.bytes().await.map_err(AuthError::Http)?;
    if body.len() > MAX_DOCUMENT {
        return Err(AuthError::Discovery(format!("{url}: document too large")));
    }
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| AuthError::Discovery(format!("{url}: {e}")))
}

/// Finds the resource's metadata: the challenge's `resource_metadata` first (when it is on
/// the server's origin, or a public https URL), then the well-known URIs.
async fn resource_metadata(
    http: &reqwest::Client,
    policy: HostPolicy,
    server: &Url,
    advertised: Option<&str>,
) -> Result<Option<ProtectedResourceMetadata>, AuthError> {
    let mut candidates = Vec::new();
    if let Some(a) = advertised {
        let url = Url::parse(a)
            .map_err(|e| AuthError::Discovery(format!("resource_metadata {a:?}: {e}")))?;
        policy.check(&url, "resource metadata")?;
        candidates.push(url);
    }
    candidates.extend(protected_resource_urls(server));
    for url in candidates {
        if let Some(prm) = fetch::<ProtectedResourceMetadata>(http, &url).await? {
            return Ok(Some(prm));
        }
    }
    Ok(None)
}

/// Whether metadata's `issuer` is the issuer it was looked up for (RFC 8414 §3.3): the
/// same string, but for a trailing slash.
fn same_issuer(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// Finds the authorization server's metadata at the well-known URIs, in the MCP order, and
/// checks its issuer.
async fn authorization_server(
    http: &reqwest::Client,
    policy: HostPolicy,
    issuer: &str,
) -> Result<Option<AuthorizationServerMetadata>, AuthError> {
    let url =
        Url::parse(issuer).map_err(|e| AuthError::Discovery(format!("issuer {issuer:?}: {e}")))?;
    policy.check(&url, "authorization server")?;
    for candidate in authorization_server_urls(&url) {
        if let Some(meta) = fetch::<AuthorizationServerMetadata>(http, &candidate).await? {
            if !same_issuer(&meta.issuer, issuer) {
                return Err(AuthError::Refused(format!(
                    "the metadata at {candidate} names issuer {:?}, not {issuer:?} (RFC 8414 §3.3)",
                    meta.issuer
                )));
            }
            return Ok(Some(meta));
        }
    }
    Ok(None)
}

/// Discovery for the MCP server at `server`, after a challenge that named `advertised`.
pub(crate) async fn discover(
    http: &reqwest::Client,
    policy: HostPolicy,
    server: &Url,
    advertised: Option<&str>,
) -> Result<Discovered, AuthError> {
    let prm = resource_metadata(http, policy, server, advertised).await?;
    let Some(prm) = prm else {
        // 2025-03-26: no resource metadata; the server's origin is the authorization server,
        // with its metadata at the root or else the default endpoints.
        let origin = Url::parse(&server.origin().ascii_serialization())
            .map_err(|e| AuthError::Discovery(e.to_string()))?;
        let issuer = origin.origin().ascii_serialization();
        let meta = match authorization_server(http, policy, &issuer).await? {
            Some(m) => m,
            None => AuthorizationServerMetadata::fallback(&origin),
        };
        return Ok(Discovered {
            resource_metadata: None,
            resource: canonical_resource(server),
            server: meta,
        });
    };
    if !resource_matches(&prm.resource, server) {
        return Err(AuthError::Refused(format!(
            "the protected resource metadata is for {:?}, not for {server} (RFC 9728 §3.3)",
            prm.resource
        )));
    }
    let issuer = prm.authorization_servers.first().ok_or_else(|| {
        AuthError::Discovery("the protected resource metadata names no authorization server".into())
    })?;
    let meta = authorization_server(http, policy, issuer)
        .await?
        .ok_or_else(|| {
            AuthError::Discovery(format!(
                "no authorization server metadata for {issuer} (RFC 8414 or OpenID)"
            ))
        })?;
    Ok(Discovered {
        resource: prm.resource.clone(),
        resource_metadata: Some(prm),
        server: meta,
    })
}
