//! How the gateway reaches an upstream at a URL: Streamable HTTP (or legacy HTTP+SSE) with the
//! gateway's own credentials for it, WebSocket or gRPC with a static token.

use std::sync::Arc;

use futures::future::BoxFuture;
use oxmcp_http::client::{Authorizer, Challenge};
use oxmcp_transport::{Channels, Link};

use super::Upstream;

/// True for the URLs of the one-connection transports: WebSocket and gRPC.
pub(crate) fn is_stream_url(url: &str) -> bool {
    ["ws://", "wss://", "grpc://", "grpcs://"]
        .iter()
        .any(|s| url.starts_with(s))
}

/// A WebSocket or gRPC connection to `upstream` at `url` (see [`is_stream_url`]), with its
/// headers (call metadata for gRPC) and its static token; gRPC envelopes in JSON.
pub(crate) async fn open_stream(
    upstream: &Upstream,
    url: &str,
) -> Result<(Channels, Box<dyn Link>), String> {
    // A static token only: OAuth upstreams are reached over Streamable HTTP.
    if upstream
        .auth
        .as_ref()
        .is_some_and(|a| a.client_id.is_some() || a.login)
    {
        return Err(format!(
            "upstream {}: OAuth (client_id, login) needs an http(s):// URL; over WebSocket and gRPC use bearer_file",
            upstream.name
        ));
    }
    let mut headers: Vec<(String, String)> = upstream.headers.clone().into_iter().collect();
    if let Some(path) = upstream.auth.as_ref().and_then(|a| a.bearer_file.as_ref()) {
        let token = std::fs::read_to_string(path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        headers.push(("authorization".into(), format!("Bearer {}", token.trim())));
    }
    if url.starts_with("grpc://") || url.starts_with("grpcs://") {
        let config = oxmcp_grpc::client::GrpcClientConfig::default()
            .headers(headers)
            .form(oxmcp_grpc::Form::Json);
        let (channels, link) = oxmcp_grpc::client::connect(url, config)
            .await
            .map_err(|e| chain(&e))?;
        return Ok((channels, Box::new(link)));
    }
    let config = oxmcp_ws::client::WsClientConfig::default().headers(headers);
    let (channels, link) = oxmcp_ws::client::connect(url, config)
        .await
        .map_err(|e| chain(&e))?;
    Ok((channels, Box::new(link)))
}

/// A Streamable HTTP (or legacy HTTP+SSE) connection to `upstream` at `url`, with its headers
/// and credentials. The client owns the session: closing it sends the DELETE.
pub(crate) async fn open_http(
    upstream: &Upstream,
    url: &str,
) -> Result<(Channels, oxmcp_http::client::HttpClientHandle), String> {
    let authorizer = authorizer(upstream, url).await?;
    let t = oxmcp_http::client::connect(
        url,
        oxmcp_http::HttpClientConfig::default()
            .headers(upstream.headers.clone().into_iter().collect())
            .authorizer(authorizer),
    )
    .map_err(|e| e.to_string())?;
    Ok(t.into_parts())
}

/// The gateway's own credentials for an HTTP upstream (built once, shared by its
/// connections): a static token, client credentials, or the tokens of `oxmcp login`.
async fn authorizer(upstream: &Upstream, url: &str) -> Result<Option<Arc<dyn Authorizer>>, String> {
    use oxmcp_auth::client::{Flow, OAuthClient, OAuthConfig, TokenStore};
    let Some(auth) = &upstream.auth else {
        return Ok(None);
    };
    if let Some(a) = upstream.authorizer.get() {
        return Ok(Some(a.clone()));
    }
    let read = |p: &std::path::Path| -> Result<String, String> {
        let t =
            std::fs::read_to_string(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
        Ok(t.trim().to_owned())
    };
    let made: Arc<dyn Authorizer> = if let Some(p) = &auth.bearer_file {
        Arc::new(StaticBearer::new(read(p)?))
    } else if let (Some(id), Some(secret)) = (&auth.client_id, &auth.client_secret_file) {
        let mut c = OAuthConfig::new(url, Flow::ClientCredentials(None));
        c.client_id = Some(id.clone());
        c.client_secret = Some(read(secret)?);
        c.scopes = (!auth.scopes.is_empty()).then(|| auth.scopes.clone());
        Arc::new(OAuthClient::new(c).map_err(|e| chain(&e))?)
    } else {
        let store = TokenStore::default_location()
            .ok_or_else(|| "no config directory for the token store".to_owned())?;
        let advice = format!("the server needs authorization: run `oxmcp login {url}`");
        Arc::new(
            OAuthClient::stored(url, store, advice)
                .await
                .map_err(|e| chain(&e))?,
        )
    };
    Ok(Some(upstream.authorizer.get_or_init(|| made).clone()))
}

/// `e` and its sources, `: ` between them.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// A fixed bearer token (an upstream's `bearer_file`); a refusal stands.
#[derive(Clone)]
pub(crate) struct StaticBearer(String);

impl StaticBearer {
    pub(crate) fn new(token: String) -> Self {
        Self(format!("Bearer {token}"))
    }
}

impl std::fmt::Debug for StaticBearer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StaticBearer(..)")
    }
}

impl Authorizer for StaticBearer {
    fn authorization(&self) -> Option<String> {
        Some(self.0.clone())
    }

    fn challenged<'a>(&'a self, _challenge: &'a Challenge) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(async { Ok(false) })
    }
}
