//! JWT access tokens checked against the issuer's published keys (JWKS): signature with an
//! asymmetric algorithm only (never `none`, never HMAC, so a public key cannot be used as an
//! HMAC secret), issuer, audience (this server's canonical URI, RFC 8707, or its id at the
//! issuer), `exp` and `nbf` with a small leeway. The key set is cached, and fetched again
//! when a token names a key id it does not have (at most once per
//! [`JwtConfig::min_refetch`]).

use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use oxmcp_http::{Identity, TokenError, TokenVerifier};

use crate::AuthError;

/// Settings of a [`JwtVerifier`].
#[derive(Debug, Clone)]
pub struct JwtConfig {
    /// The issuer tokens must name (`iss`).
    pub issuer: String,
    /// Audiences accepted (`aud`; a token naming any one of them passes): this server's
    /// canonical URI, or the id its issuer knows it by (Microsoft Entra: the app's client id).
    pub audiences: Vec<String>,
    /// Where the keys are; `None`: the `jwks_uri` of the issuer's metadata.
    pub jwks_url: Option<String>,
    /// Accepted algorithms (asymmetric only; HMAC and `none` are always refused).
    pub algorithms: Vec<Algorithm>,
    /// Clock skew allowed on `exp` and `nbf`.
    pub leeway: Duration,
    /// How long fetched keys are used before they are fetched again.
    pub cache_for: Duration,
    /// The shortest time between two fetches for unknown key ids (so a stream of tokens with
    /// made-up `kid`s cannot make the server hammer the issuer).
    pub min_refetch: Duration,
}

impl JwtConfig {
    /// Defaults for tokens of `issuer` meant for `audience`.
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            audiences: vec![audience.into()],
            jwks_url: None,
            algorithms: vec![
                Algorithm::RS256,
                Algorithm::RS384,
                Algorithm::RS512,
                Algorithm::PS256,
                Algorithm::PS384,
                Algorithm::PS512,
                Algorithm::ES256,
                Algorithm::ES384,
                Algorithm::EdDSA,
            ],
            leeway: Duration::from_secs(60),
            cache_for: Duration::from_secs(600),
            min_refetch: Duration::from_secs(10),
        }
    }
}

#[derive(Default)]
struct Keys {
    set: Option<JwkSet>,
    fetched: Option<Instant>,
    jwks_url: Option<String>,
}

/// Verifies JWT access tokens (see the module documentation).
pub struct JwtVerifier {
    config: JwtConfig,
    http: reqwest::Client,
    keys: tokio::sync::Mutex<Keys>,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.config.issuer)
            .field("audiences", &self.config.audiences)
            .finish_non_exhaustive()
    }
}

fn is_asymmetric(a: Algorithm) -> bool {
    !matches!(a, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512)
}

impl JwtVerifier {
    /// A verifier with `config`.
    ///
    /// # Errors
    /// An HMAC algorithm in the list, or an HTTP client that cannot be built.
    pub fn new(config: JwtConfig) -> Result<Self, AuthError> {
        if config.algorithms.iter().any(|a| !is_asymmetric(*a)) || config.algorithms.is_empty() {
            return Err(AuthError::Config(
                "JWT algorithms must be asymmetric (RS*, PS*, ES*, EdDSA)".into(),
            ));
        }
        let http = super::http_client()?;
        Ok(Self {
            keys: tokio::sync::Mutex::new(Keys {
                jwks_url: config.jwks_url.clone(),
                ..Keys::default()
            }),
            config,
            http,
        })
    }

    /// The JWKS URL: configured, else from the issuer's metadata.
    async fn jwks_url(&self, keys: &mut Keys) -> Result<String, TokenError> {
        if let Some(u) = &keys.jwks_url {
            return Ok(u.clone());
        }
        let issuer = url::Url::parse(&self.config.issuer)
            .map_err(|e| TokenError::Unavailable(format!("issuer URL: {e}")))?;
        for candidate in crate::metadata::authorization_server_urls(&issuer) {
            let Ok(resp) = self.http.get(candidate).send().await else {
                continue;
            };
            if !resp.status().is_success() {
                continue;
            }
            let meta: crate::metadata::AuthorizationServerMetadata = resp
                .json()
                .await
                .map_err(|e| TokenError::Unavailable(format!("issuer metadata: {e}")))?;
            if let Some(u) = meta.jwks_uri {
                keys.jwks_url = Some(u.clone());
                return Ok(u);
            }
        }
        Err(TokenError::Unavailable(format!(
            "no jwks_uri in the metadata of {}",
            self.config.issuer
        )))
    }

    /// Fetches the key set.
    async fn fetch(&self, keys: &mut Keys) -> Result<(), TokenError> {
        let url = self.jwks_url(keys).await?;
        keys.fetched = Some(Instant::now());
        let resp = self
            .http
            .get(&url)
            .send()
            .await
            .map_err(|e| TokenError::Unavailable(format!("fetching {url}: {e}")))?;
        if !resp.status().is_success() {
            return Err(TokenError::Unavailable(format!(
                "fetching {url}: HTTP {}",
                resp.status()
            )));
        }
        let set: JwkSet = resp
            .json()
            .await
            .map_err(|e| TokenError::Unavailable(format!("the key set at {url}: {e}")))?;
        keys.set = Some(set);
        Ok(())
    }

    /// The key for `kid` (or the only key, when the token names none).
    async fn key(&self, kid: Option<&str>) -> Result<DecodingKey, TokenError> {
        let mut keys = self.keys.lock().await;
        let stale = keys
            .fetched
            .is_none_or(|t| t.elapsed() >= self.config.cache_for);
        if (keys.set.is_none() || stale)
            && let Err(e) = self.fetch(&mut keys).await
        {
            // A stale set still serves while the issuer is unreachable.
            if keys.set.is_none() {
                return Err(e);
            }
            tracing::warn!("keeping the cached key set: {e}");
        }
        let find = |keys: &Keys| {
            let set = keys.set.as_ref()?;
            match kid {
                Some(k) => set.find(k).cloned(),
                None if set.keys.len() == 1 => set.keys.first().cloned(),
                None => None,
            }
        };
        let jwk = match find(&keys) {
            Some(j) => j,
            None => {
                let may_refetch = keys
                    .fetched
                    .is_none_or(|t| t.elapsed() >= self.config.min_refetch);
                if kid.is_none() || !may_refetch {
                    return Err(TokenError::Invalid("unknown signing key".into()));
                }
                self.fetch(&mut keys).await?;
                find(&keys).ok_or_else(|| TokenError::Invalid("unknown signing key".into()))?
            }
        };
        DecodingKey::from_jwk(&jwk).map_err(|e| TokenError::Invalid(format!("signing key: {e}")))
    }

    async fn check(&self, token: &str) -> Result<Identity, TokenError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| TokenError::Invalid(format!("not a JWT: {e}")))?;
        if !self.config.algorithms.contains(&header.alg) {
            return Err(TokenError::Invalid(format!(
                "algorithm {:?} is not accepted",
                header.alg
            )));
        }
        let key = self.key(header.kid.as_deref()).await?;
        let mut v = Validation::new(header.alg);
        v.set_issuer(&[&self.config.issuer]);
        v.set_audience(&self.config.audiences);
        v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        v.leeway = self.config.leeway.as_secs();
        v.validate_nbf = true;
        let data =
            jsonwebtoken::decode::<serde_json::Map<String, serde_json::Value>>(token, &key, &v)
                .map_err(|e| TokenError::Invalid(e.to_string()))?;
        // `iss` was checked to be exactly the configured issuer.
        identity_of(data.claims, Some(self.config.issuer.clone()))
    }
}

/// An identity from token claims (a JWT's, or an introspection answer) vouched for by
/// `issuer`: `sub`, `scope` (a space-separated string) or `scp` (an array), `client_id` or
/// `azp`.
///
/// # Errors
/// `sub` is missing, not a string, or empty: the caller could not be told apart from others.
pub(crate) fn identity_of(
    claims: serde_json::Map<String, serde_json::Value>,
    issuer: Option<String>,
) -> Result<Identity, TokenError> {
    let subject = match claims.get("sub") {
        Some(serde_json::Value::String(s)) if !s.is_empty() => s.clone(),
        Some(serde_json::Value::String(_)) => {
            return Err(TokenError::Invalid("the token's sub is empty".into()));
        }
        Some(_) => {
            return Err(TokenError::Invalid(
                "the token's sub is not a string".into(),
            ));
        }
        None => return Err(TokenError::Invalid("the token has no sub".into())),
    };
    let text = |k: &str| claims.get(k).and_then(|v| v.as_str()).map(str::to_owned);
    let scopes = match (claims.get("scope"), claims.get("scp")) {
        (Some(serde_json::Value::String(s)), _) => {
            s.split_whitespace().map(str::to_owned).collect()
        }
        (_, Some(serde_json::Value::Array(a))) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        (_, Some(serde_json::Value::String(s))) => {
            s.split_whitespace().map(str::to_owned).collect()
        }
        _ => Vec::new(),
    };
    Ok(Identity {
        subject,
        issuer,
        client_id: text("client_id").or_else(|| text("azp")),
        scopes,
        claims,
    })
}

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Identity, TokenError>> {
        Box::pin(self.check(token))
    }
}
