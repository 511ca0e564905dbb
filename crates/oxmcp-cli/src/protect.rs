//! How `oxmcp serve` protects its HTTP endpoint: bearer tokens checked as JWTs against the
//! issuer's keys (`--auth-issuer`, `--auth-audience`, optionally `--auth-jwks`), by
//! introspection (`--auth-introspection`), or against a static token file
//! (`--auth-token-file`, for local use). The `[auth]` table of the config file has the same
//! keys, plus the scopes each tool, prompt, resource or method needs. A non-loopback address
//! without protection is refused unless `--allow-unauthenticated` says so.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use oxmcp_auth::server::{
    Introspection, IntrospectionConfig, JwtConfig, JwtVerifier, ScopePolicy, StaticTokens,
    TokenVerifier, protect,
};
use serde::Deserialize;

/// The protection flags of `oxmcp serve`.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct AuthArgs {
    /// Require bearer tokens from this OAuth issuer (with --auth-audience).
    #[arg(long, value_name = "URL")]
    pub(crate) auth_issuer: Option<String>,
    /// This server's canonical URI, which tokens must name in `aud` (RFC 8707), e.g.
    /// https://mcp.example.com/mcp.
    #[arg(long, value_name = "URL")]
    pub(crate) auth_audience: Option<String>,
    /// Where the issuer's keys are (default: the `jwks_uri` of its metadata).
    #[arg(long, value_name = "URL", conflicts_with = "auth_introspection")]
    pub(crate) auth_jwks: Option<String>,
    /// Check (opaque) tokens at this RFC 7662 introspection endpoint instead of as JWTs.
    #[arg(long, value_name = "URL")]
    pub(crate) auth_introspection: Option<String>,
    /// This server's client id at the introspection endpoint.
    #[arg(long, value_name = "ID")]
    pub(crate) auth_client_id: Option<String>,
    /// A file holding this server's client secret for introspection.
    #[arg(long, value_name = "PATH")]
    pub(crate) auth_client_secret_file: Option<PathBuf>,
    /// Accept the tokens in this file (one per line, `TOKEN [SUBJECT]`), compared in constant
    /// time and never logged. For local use.
    #[arg(long, value_name = "PATH")]
    pub(crate) auth_token_file: Option<PathBuf>,
    /// A scope every request needs (repeatable).
    #[arg(long = "auth-scope", value_name = "SCOPE")]
    pub(crate) auth_scopes: Vec<String>,
    /// Listen on a non-loopback address without authentication (anyone who reaches it can use
    /// the server).
    #[arg(long, alias = "allow-remote")]
    pub(crate) allow_unauthenticated: bool,
}

/// The `[auth]` table of the config file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AuthFile {
    issuer: Option<String>,
    audience: Option<String>,
    jwks: Option<String>,
    introspection: Option<String>,
    client_id: Option<String>,
    client_secret_file: Option<PathBuf>,
    token_file: Option<PathBuf>,
    /// Scopes every request needs.
    #[serde(default)]
    scopes: Vec<String>,
    /// Scopes per JSON-RPC method.
    #[serde(default)]
    methods: HashMap<String, Vec<String>>,
    /// Scopes per tool.
    #[serde(default)]
    tools: HashMap<String, Vec<String>>,
    /// Scopes per prompt.
    #[serde(default)]
    prompts: HashMap<String, Vec<String>>,
    /// Scopes per resource URI.
    #[serde(default)]
    resources: HashMap<String, Vec<String>>,
}

fn read_secret(path: &std::path::Path) -> anyhow::Result<String> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let secret = text.trim();
    if secret.is_empty() {
        bail!("{} is empty", path.display());
    }
    Ok(secret.to_owned())
}

impl AuthArgs {
    /// The protection the flags and the file's `[auth]` ask for (flags win); `None` when
    /// neither asks for any.
    pub(crate) fn build(
        &self,
        file: Option<&AuthFile>,
        listen: std::net::SocketAddr,
    ) -> anyhow::Result<Option<oxmcp_http::HttpAuth>> {
        let f = file.cloned().unwrap_or_default();
        let issuer = self.auth_issuer.clone().or(f.issuer);
        let audience = self.auth_audience.clone().or(f.audience);
        let jwks = self.auth_jwks.clone().or(f.jwks);
        let introspection = self.auth_introspection.clone().or(f.introspection);
        let client_id = self.auth_client_id.clone().or(f.client_id);
        let secret_file = self
            .auth_client_secret_file
            .clone()
            .or(f.client_secret_file);
        let token_file = self.auth_token_file.clone().or(f.token_file);
        let mut all = f.scopes;
        all.extend(self.auth_scopes.iter().cloned());
        let scopes = ScopePolicy::default()
            .all(all.clone())
            .methods(f.methods)
            .tools(f.tools)
            .prompts(f.prompts)
            .resources(f.resources);
        let verifier: Arc<dyn TokenVerifier> = match (&token_file, &issuer) {
            (Some(path), _) => Arc::new(StaticTokens::from_file(path, all.clone())?),
            (None, Some(issuer)) => {
                let Some(audience) = &audience else {
                    bail!("--auth-issuer needs --auth-audience (this server's canonical URI)");
                };
                match &introspection {
                    Some(endpoint) => {
                        let (Some(id), Some(secret)) = (&client_id, &secret_file) else {
                            bail!(
                                "--auth-introspection needs --auth-client-id and \
                                 --auth-client-secret-file"
                            );
                        };
                        Arc::new(Introspection::new(IntrospectionConfig {
                            endpoint: endpoint.clone(),
                            client_id: id.clone(),
                            client_secret: read_secret(secret)?,
                            audiences: vec![audience.clone()],
                            issuer: Some(issuer.clone()),
                            cache_for: std::time::Duration::from_secs(60),
                            max_cached: 10_000,
                        })?)
                    }
                    None => {
                        let mut c = JwtConfig::new(issuer.clone(), audience.clone());
                        c.jwks_url = jwks;
                        Arc::new(JwtVerifier::new(c)?)
                    }
                }
            }
            (None, None) => {
                if audience.is_some() || introspection.is_some() || jwks.is_some() {
                    bail!("token checks need --auth-issuer (or --auth-token-file)");
                }
                return Ok(None);
            }
        };
        let resource = audience.unwrap_or_else(|| format!("http://{listen}/mcp"));
        let servers: Vec<String> = issuer.into_iter().collect();
        let supported = (!all.is_empty()).then(|| all.clone());
        Ok(Some(protect(
            &resource, servers, verifier, scopes, supported,
        )?))
    }
}
