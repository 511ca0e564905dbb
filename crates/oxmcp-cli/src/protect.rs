//! How `oxmcp serve` protects its HTTP endpoint: bearer tokens checked as JWTs against the
//! issuer's keys (`--auth-issuer`, `--auth-audience`, optionally `--auth-jwks`), by
//! introspection (`--auth-introspection`), or against a static token file
//! (`--auth-token-file`, for local use). The `[auth]` table of the config file has the same
//! keys, plus the scopes each tool, prompt, resource or method needs. A non-loopback address
//! without protection is refused unless `--allow-unauthenticated` says so. Introspection
//! answers must name this server (`aud`, unless `--auth-accept-missing-audience`) and the
//! issuer, and are cached for `--auth-introspection-cache` (60 s; 0: never).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use oxmcp_auth::server::{
    Introspection, IntrospectionConfig, JwtConfig, JwtVerifier, ScopePolicy, StaticTokens,
    TokenVerifier, protect,
};
use serde::Deserialize;

use crate::limits::Dur;

/// The protection flags of `oxmcp serve`.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct AuthArgs {
    /// Require bearer tokens from this OAuth issuer (with --auth-audience or --auth-resource).
    #[arg(long, value_name = "URL")]
    pub(crate) auth_issuer: Option<String>,
    /// An audience tokens must name in `aud`: this server's canonical URI (RFC 8707), e.g.
    /// https://mcp.example.com/mcp, or the id the issuer knows it by (Microsoft Entra: the
    /// app's client id). Repeatable: a token naming any one of them is accepted
    /// [default: --auth-resource].
    #[arg(long = "auth-audience", value_name = "AUDIENCE")]
    pub(crate) auth_audiences: Vec<String>,
    /// This server's canonical URI as its Protected Resource Metadata (RFC 9728) names it,
    /// which clients ask tokens for [default: the first --auth-audience, else
    /// http://LISTEN/mcp].
    #[arg(long, value_name = "URL")]
    pub(crate) auth_resource: Option<String>,
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
    /// How long an introspection answer is reused (never past the token's expiry). A token
    /// revoked at the authorization server keeps working here for up to this long; 0 asks
    /// on every request [default: 60s].
    #[arg(long, value_name = "DURATION")]
    pub(crate) auth_introspection_cache: Option<Dur>,
    /// Accept introspection answers without `aud`, for authorization servers that cannot
    /// name the audience (such a token may have been issued for another resource). An
    /// answer naming other audiences only is still refused.
    #[arg(long)]
    pub(crate) auth_accept_missing_audience: bool,
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
    /// One audience or a list of them.
    audience: Option<OneOrMany>,
    /// The resource the Protected Resource Metadata names.
    resource: Option<String>,
    jwks: Option<String>,
    introspection: Option<String>,
    client_id: Option<String>,
    client_secret_file: Option<PathBuf>,
    /// How long introspection answers are reused.
    introspection_cache: Option<Dur>,
    /// Accept introspection answers without `aud`.
    #[serde(default)]
    accept_missing_audience: bool,
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

/// A string or a list of strings (`audience = "x"` or `audience = ["x", "y"]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}

/// Who tokens are for: the audiences they may name (`aud`, at least one) and the resource
/// the Protected Resource Metadata advertises.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Audience {
    accepted: Vec<String>,
    resource: Option<String>,
}

impl Audience {
    /// From the flags (`audiences`, `resource`) or else the file: without audiences, tokens
    /// must name the resource; without a resource, it is the first audience.
    fn of(audiences: Vec<String>, resource: Option<String>) -> Self {
        let accepted = match (audiences.is_empty(), &resource) {
            (true, Some(r)) => vec![r.clone()],
            _ => audiences,
        };
        let resource = resource.or_else(|| accepted.first().cloned());
        Audience { accepted, resource }
    }

    /// The resource the metadata names: a URL (the default: `http://LISTEN/mcp`).
    fn resource(&self, listen: std::net::SocketAddr) -> anyhow::Result<String> {
        let Some(resource) = &self.resource else {
            return Ok(format!("http://{listen}/mcp"));
        };
        if !(resource.starts_with("https://") || resource.starts_with("http://")) {
            bail!(
                "the resource {resource:?} is not an http(s) URL: when the audience is not this \
                 server's URL (Microsoft Entra: the app's client id), give the URL with \
                 --auth-resource"
            );
        }
        Ok(resource.clone())
    }
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

/// The introspection settings the flags and the file ask for.
struct IntrospectionArgs {
    endpoint: String,
    client_id: Option<String>,
    secret_file: Option<PathBuf>,
    cache: Option<Dur>,
    accept_missing_audience: bool,
}

impl IntrospectionArgs {
    /// The verifier for tokens of `issuer` meant for one of `audiences`.
    fn verifier(self, issuer: &str, audiences: &[String]) -> anyhow::Result<Introspection> {
        let (Some(id), Some(secret)) = (self.client_id, self.secret_file) else {
            bail!("--auth-introspection needs --auth-client-id and --auth-client-secret-file");
        };
        let mut config = IntrospectionConfig::new(self.endpoint, id, read_secret(&secret)?, "");
        config.audiences = audiences.to_vec();
        config.issuer = Some(issuer.to_owned());
        config.accept_missing_audience = self.accept_missing_audience;
        if let Some(Dur(d)) = self.cache {
            config.cache_for = d;
        }
        Ok(Introspection::new(config)?)
    }
}

impl AuthArgs {
    /// The introspection settings, if introspection is asked for; an error for its settings
    /// without it.
    fn introspection(&self, f: &AuthFile) -> anyhow::Result<Option<IntrospectionArgs>> {
        let cache = self.auth_introspection_cache.or(f.introspection_cache);
        let accept_missing_audience =
            self.auth_accept_missing_audience || f.accept_missing_audience;
        let Some(endpoint) = self.auth_introspection.clone().or(f.introspection.clone()) else {
            if cache.is_some() || accept_missing_audience {
                bail!(
                    "--auth-introspection-cache and --auth-accept-missing-audience apply to \
                     introspection: add --auth-introspection"
                );
            }
            return Ok(None);
        };
        Ok(Some(IntrospectionArgs {
            endpoint,
            client_id: self.auth_client_id.clone().or(f.client_id.clone()),
            secret_file: self
                .auth_client_secret_file
                .clone()
                .or(f.client_secret_file.clone()),
            cache,
            accept_missing_audience,
        }))
    }

    /// The protection the flags and the file's `[auth]` ask for (flags win); `None` when
    /// neither asks for any.
    pub(crate) fn build(
        &self,
        file: Option<&AuthFile>,
        listen: std::net::SocketAddr,
    ) -> anyhow::Result<Option<oxmcp_http::HttpAuth>> {
        let f = file.cloned().unwrap_or_default();
        let introspection = self.introspection(&f)?;
        let issuer = self.auth_issuer.clone().or(f.issuer);
        let audiences = if self.auth_audiences.is_empty() {
            f.audience.map(OneOrMany::into_vec).unwrap_or_default()
        } else {
            self.auth_audiences.clone()
        };
        let audience = Audience::of(audiences, self.auth_resource.clone().or(f.resource));
        let jwks = self.auth_jwks.clone().or(f.jwks);
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
                if audience.accepted.is_empty() {
                    bail!(
                        "--auth-issuer needs --auth-audience or --auth-resource (this server's \
                         canonical URI)"
                    );
                }
                match introspection {
                    Some(i) => Arc::new(i.verifier(issuer, &audience.accepted)?),
                    None => {
                        let mut c = JwtConfig::new(issuer.clone(), "");
                        c.audiences = audience.accepted.clone();
                        c.jwks_url = jwks;
                        Arc::new(JwtVerifier::new(c)?)
                    }
                }
            }
            (None, None) => {
                if audience.resource.is_some() || introspection.is_some() || jwks.is_some() {
                    bail!("token checks need --auth-issuer (or --auth-token-file)");
                }
                return Ok(None);
            }
        };
        let resource = audience.resource(listen)?;
        let servers: Vec<String> = issuer.into_iter().collect();
        let supported = (!all.is_empty()).then(|| all.clone());
        Ok(Some(protect(
            &resource, servers, verifier, scopes, supported,
        )?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn introspection_settings_come_from_flags_or_the_file_and_need_introspection() {
        let file: AuthFile = toml::from_str(
            "introspection = \"https://as.example/introspect\"\n\
             introspection_cache = \"0\"\naccept_missing_audience = true\n",
        )
        .unwrap();
        let i = AuthArgs::default().introspection(&file).unwrap().unwrap();
        assert_eq!(i.cache, Some(Dur(std::time::Duration::ZERO)));
        assert!(i.accept_missing_audience);
        let flags = AuthArgs {
            auth_introspection_cache: Some(Dur(std::time::Duration::from_secs(5))),
            ..AuthArgs::default()
        };
        let i = flags.introspection(&file).unwrap().unwrap();
        assert_eq!(
            i.cache,
            Some(Dur(std::time::Duration::from_secs(5))),
            "flags win"
        );
        assert!(flags.introspection(&AuthFile::default()).is_err());
        let relaxed = AuthArgs {
            auth_accept_missing_audience: true,
            ..AuthArgs::default()
        };
        assert!(relaxed.introspection(&AuthFile::default()).is_err());
        assert!(
            AuthArgs::default()
                .introspection(&AuthFile::default())
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn the_resource_and_the_audiences_default_to_each_other() {
        let listen: std::net::SocketAddr = "127.0.0.1:9000".parse().unwrap();
        let url = "https://mcp.example.com/mcp".to_owned();
        let guid = "6f1c2b9e-0000-4000-8000-000000000001".to_owned();
        // Today's behaviour: the one audience is also the resource.
        let a = Audience::of(vec![url.clone()], None);
        assert_eq!(a.accepted, std::slice::from_ref(&url));
        assert_eq!(a.resource(listen).unwrap(), url);
        // Only a resource: tokens must name it.
        let a = Audience::of(Vec::new(), Some(url.clone()));
        assert_eq!(a.accepted, std::slice::from_ref(&url));
        // Both (Microsoft Entra): the client id in tokens, the URL in the metadata.
        let a = Audience::of(vec![guid.clone(), url.clone()], Some(url.clone()));
        assert_eq!(a.accepted, [guid.clone(), url.clone()]);
        assert_eq!(a.resource(listen).unwrap(), url);
        // A client id alone cannot be advertised as the resource: the error says what to add.
        let err = Audience::of(vec![guid], None).resource(listen).unwrap_err();
        assert!(err.to_string().contains("--auth-resource"), "{err}");
        // Neither: the metadata names the listening address, and no token can be checked.
        let a = Audience::of(Vec::new(), None);
        assert!(a.accepted.is_empty());
        assert_eq!(a.resource(listen).unwrap(), "http://127.0.0.1:9000/mcp");
    }

    #[test]
    fn the_file_takes_one_audience_or_a_list_and_a_resource() {
        let file: AuthFile = toml::from_str(
            "issuer = \"https://as.example\"\naudience = [\"a\", \"b\"]\n\
             resource = \"https://mcp.example.com/mcp\"\n",
        )
        .unwrap();
        let audiences = file.audience.clone().map(OneOrMany::into_vec).unwrap();
        assert_eq!(audiences, ["a", "b"]);
        assert_eq!(
            file.resource.as_deref(),
            Some("https://mcp.example.com/mcp")
        );
        let file: AuthFile = toml::from_str("audience = \"a\"\n").unwrap();
        assert_eq!(file.audience.map(OneOrMany::into_vec).unwrap(), ["a"]);
        assert!(toml::from_str::<AuthFile>("audience = 1\n").is_err());
    }
}
