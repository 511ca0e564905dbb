//! Opaque tokens checked by the authorization server (RFC 7662 introspection), with a short
//! cache so that a busy client does not cost one introspection per request.

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
    /// Audiences accepted: an answer with an `aud` must name one of these.
    pub audiences: Vec<String>,
    /// The issuer an answer's `iss`, when present, must be.
    pub issuer: Option<String>,
    /// How long an answer is reused (never past the token's `exp`).
    pub cache_for: Duration,
    /// Most cached answers.
    pub max_cached: usize,
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
        if let Some((id, until)) = self.cache.lock().get(&key)
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
        Ok(identity)
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
        if let (Some(want), Some(iss)) = (
            &self.config.issuer,
            answer.get("iss").and_then(|v| v.as_str()),
        ) && want.trim_end_matches('/') != iss.trim_end_matches('/')
        {
            return Err(TokenError::Invalid(
                "the token is from another issuer".into(),
            ));
        }
        let audiences: Vec<&str> = match answer.get("aud") {
            Some(serde_json::Value::String(a)) => vec![a.as_str()],
            Some(serde_json::Value::Array(a)) => a.iter().filter_map(|v| v.as_str()).collect(),
            _ => Vec::new(),
        };
        if !audiences.is_empty()
            && !audiences
                .iter()
                .any(|a| self.config.audiences.iter().any(|w| w == a))
        {
            return Err(TokenError::Invalid(
                "the token is for another audience".into(),
            ));
        }
        let identity = identity_of(answer);
        if identity.subject.is_empty() {
            return Err(TokenError::Invalid(
                "the introspection answer has no sub".into(),
            ));
        }
        Ok((identity, exp))
    }
}

impl TokenVerifier for Introspection {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Identity, TokenError>> {
        Box::pin(self.check(token))
    }
}
