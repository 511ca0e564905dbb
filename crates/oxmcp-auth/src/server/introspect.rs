//! Opaque tokens checked by the authorization server (RFC 7662 introspection), with a short
//! cache so that a busy client does not cost one introspection per request. An answer must
//! name this server in `aud` (the MCP authorization spec: tokens not issued for this resource
//! are refused) unless [`IntrospectionConfig::accept_missing_audience`] says otherwise, and
//! the configured issuer in `iss`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use base64::Engine as _;
use futures::future::BoxFuture;
use oxmcp_http::{Identity, TokenError, TokenVerifier};
use parking_lot::Mutex;
use sha2::Digest as _;

use super::jwt::identity_of;
use crate::AuthError;

/// Settings of an [`Introspection`] verifier.
#[derive(Clone)]
pub struct IntrospectionConfig {
    /// The introspection endpoint.
    pub endpoint: String,
    /// This resource server's client id there.
    pub client_id: String,
    /// Its secret (sent with HTTP Basic).
    pub client_secret: String,
    /// Audiences accepted: an answer's `aud` must name one of these.
    pub audiences: Vec<String>,
    /// Accept an answer without `aud` (or with an empty one), for authorization servers that
    /// cannot name the audience. An answer naming only other audiences is still refused.
    /// Off by default: such a token may have been issued for another resource.
    pub accept_missing_audience: bool,
    /// The issuer an answer's `iss` must be (a trailing `/` aside); an answer without `iss`
    /// is then refused. `None`: any issuer, or none.
    pub issuer: Option<String>,
    /// How long an answer is reused (never past the token's `exp`); zero turns the cache off.
    /// A token revoked at the authorization server keeps working here for up to this long.
    pub cache_for: Duration,
    /// Most cached answers.
    pub max_cached: usize,
}

impl IntrospectionConfig {
    /// How long an answer is reused by default.
    pub const DEFAULT_CACHE_FOR: Duration = Duration::from_secs(60);

    /// Defaults for answers from `endpoint` (asked as `client_id` with `client_secret`) that
    /// must name `audience`: no issuer check, answers cached for 60 s, at most 10,000 of them.
    pub fn new(
        endpoint: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
        audience: impl Into<String>,
    ) -> Self {
        Self {
            endpoint: endpoint.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            audiences: vec![audience.into()],
            accept_missing_audience: false,
            issuer: None,
            cache_for: Self::DEFAULT_CACHE_FOR,
            max_cached: 10_000,
        }
    }
}

impl std::fmt::Debug for IntrospectionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionConfig")
            .field("endpoint", &self.endpoint)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

/// Verifies tokens by introspection.
#[derive(Debug)]
pub struct Introspection {
    config: IntrospectionConfig,
    http: reqwest::Client,
    /// SHA-256 of the token -> (identity, until).
    cache: Mutex<HashMap<[u8; 32], (Identity, Instant)>>,
}

impl Introspection {
    /// A verifier with `config`.
    ///
    /// # Errors
    /// The HTTP client cannot be built.
    pub fn new(config: IntrospectionConfig) -> Result<Self, AuthError> {
        let http = super::http_client()?;
        Ok(Self {
            config,
            http,
            cache: Mutex::new(HashMap::new()),
        })
    }

    async fn check(&self, token: &str) -> Result<Identity, TokenError> {
        let key: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
        let caching = !self.config.cache_for.is_zero();
        if caching
            && let Some((id, until)) = self.cache.lock().get(&key)
            && Instant::now() < *until
        {
            return Ok(id.clone());
        }
        let basic = base64::engine::general_purpose::STANDARD.encode(format!(
            "{}:{}",
            self.config.client_id, self.config.client_secret
        ));
        let resp = self
            .http
            .post(&self.config.endpoint)
            .header(reqwest::header::AUTHORIZATION, format!("Basic {basic}"))
            .header("accept", "application/json")
            .form(&[("token", token), ("token_type_hint", "access_token")])
            .send()
            .await
            .map_err(|e| TokenError::Unavailable(format!("introspection: {e}")))?;
        if !resp.status().is_success() {
            return Err(TokenError::Unavailable(format!(
                "introspection: HTTP {}",
                resp.status()
            )));
        }
        let answer: serde_json::Map<String, serde_json::Value> = resp
            .json()
            .await
            .map_err(|e| TokenError::Unavailable(format!("introspection answer: {e}")))?;
        if answer.get("active") != Some(&serde_json::Value::Bool(true)) {
            return Err(TokenError::Invalid("the token is not active".into()));
        }
        let (identity, exp) = self.validate(answer)?;
        if caching {
            self.remember(key, &identity, exp);
        }
        Ok(identity)
    }

    /// Caches an accepted answer for `cache_for`, never past the token's `exp`.
    fn remember(&self, key: [u8; 32], identity: &Identity, exp: Option<u64>) {
        let now = crate::unix_now();
        let mut ttl = self.config.cache_for;
        if let Some(e) = exp {
            ttl = ttl.min(Duration::from_secs(e.saturating_sub(now)));
        }
        let mut cache = self.cache.lock();
        if cache.len() >= self.config.max_cached {
            let now = Instant::now();
            cache.retain(|_, (_, until)| *until > now);
            if cache.len() >= self.config.max_cached {
                cache.clear();
            }
        }
        cache.insert(key, (identity.clone(), Instant::now() + ttl));
    }

    /// Checks an active introspection answer (expiry, issuer, audience, subject); the
    /// identity and the token's `exp`.
    fn validate(
        &self,
        answer: serde_json::Map<String, serde_json::Value>,
    ) -> Result<(Identity, Option<u64>), TokenError> {
        let now = crate::unix_now();
        let exp = answer.get("exp").and_then(serde_json::Value::as_u64);
        if exp.is_some_and(|e| e <= now) {
            return Err(TokenError::Invalid("the token has expired".into()));
        }
        let issuer = self.check_issuer(answer.get("iss"))?;
        self.check_audience(answer.get("aud"))?;
        let identity = identity_of(answer, issuer)?;
        Ok((identity, exp))
    }

    /// The issuer vouching for the answer: the configured one, which `iss` must name, else
    /// the answer's `iss` if any.
    fn check_issuer(&self, iss: Option<&serde_json::Value>) -> Result<Option<String>, TokenError> {
        let iss = match iss {
            None => None,
            Some(serde_json::Value::String(s)) => Some(s.as_str()),
            Some(_) => {
                return Err(TokenError::Invalid(
                    "the token's iss is not a string".into(),
                ));
            }
        };
        let Some(want) = &self.config.issuer else {
            return Ok(iss.map(str::to_owned));
        };
        match iss {
            Some(iss) if want.trim_end_matches('/') == iss.trim_end_matches('/') => {
                Ok(Some(want.clone()))
            }
            Some(_) => Err(TokenError::Invalid(
                "the token is from another issuer".into(),
            )),
            None => Err(TokenError::Invalid(
                "the introspection answer names no issuer (iss)".into(),
            )),
        }
    }

    /// `aud` names this server (or, when allowed, is absent).
    fn check_audience(&self, aud: Option<&serde_json::Value>) -> Result<(), TokenError> {
        let audiences: Vec<&str> = match aud {
            None => Vec::new(),
            Some(serde_json::Value::String(a)) => vec![a.as_str()],
            Some(serde_json::Value::Array(a)) => {
                let names: Vec<&str> = a.iter().filter_map(|v| v.as_str()).collect();
                if names.len() != a.len() {
                    return Err(TokenError::Invalid("the token's aud is malformed".into()));
                }
                names
            }
            Some(_) => return Err(TokenError::Invalid("the token's aud is malformed".into())),
        };
        if audiences.is_empty() {
            return if self.config.accept_missing_audience {
                Ok(())
            } else {
                Err(TokenError::Invalid(
                    "the token names no audience (aud); this server requires its own".into(),
                ))
            };
        }
        if audiences
            .iter()
            .any(|a| self.config.audiences.iter().any(|w| w == a))
        {
            Ok(())
        } else {
            Err(TokenError::Invalid(
                "the token is for another audience".into(),
            ))
        }
    }
}

impl TokenVerifier for Introspection {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Identity, TokenError>> {
        Box::pin(self.check(token))
    }
}
