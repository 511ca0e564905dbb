//! Token endpoint requests: the authorization code exchange, refresh, client credentials
//! (a secret or a `private_key_jwt` assertion), and the client authentication each carries.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde::Deserialize;
use sha2::Digest as _;

use super::store::{Grant, RegisteredClient, now};
use crate::AuthError;

/// A token endpoint's successful answer (RFC 6749 §5.1).
#[derive(Deserialize)]
pub(crate) struct TokenResponse {
    pub(crate) access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

/// A token endpoint's error (RFC 6749 §5.2).
#[derive(Deserialize)]
struct ErrorResponse {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

/// A private key that signs `private_key_jwt` client assertions (RFC 7523).
#[derive(Clone)]
pub struct SigningKey {
    /// The key, PEM (PKCS#8 for EC keys, PKCS#1 or PKCS#8 for RSA).
    pub pem: String,
    /// The algorithm: ES256, ES384, RS256, PS256...
    pub algorithm: jsonwebtoken::Algorithm,
    /// The key id put in the assertion's header, if any.
    pub kid: Option<String>,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("algorithm", &self.algorithm)
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A signed assertion for `client_id` at the authorization server `audience` (its issuer).
    pub(crate) fn assertion(&self, client_id: &str, audience: &str) -> Result<String, AuthError> {
        use jsonwebtoken::{Algorithm as A, EncodingKey};
        let key = match self.algorithm {
            A::ES256 | A::ES384 => EncodingKey::from_ec_pem(self.pem.as_bytes()),
            A::EdDSA => EncodingKey::from_ed_pem(self.pem.as_bytes()),
            _ => EncodingKey::from_rsa_pem(self.pem.as_bytes()),
        }
        .map_err(|e| AuthError::Config(format!("the client's private key: {e}")))?;
        let mut header = jsonwebtoken::Header::new(self.algorithm);
        header.kid.clone_from(&self.kid);
        let iat = now();
        let claims = serde_json::json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": iat,
            "exp": iat + 300,
            "jti": random_string(),
        });
        jsonwebtoken::encode(&header, &claims, &key)
            .map_err(|e| AuthError::Config(format!("signing the client assertion: {e}")))
    }
}

/// 32 random bytes, base64url: states, PKCE verifiers, assertion ids.
pub(crate) fn random_string() -> String {
    let mut bytes = [0u8; 32];
    // The OS generator does not fail on the platforms we support; if it did, a zeroed
    // buffer would make every state the same, so stop instead.
    if getrandom::fill(&mut bytes).is_err() {
        std::process::abort();
    }
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The PKCE S256 challenge of a verifier (RFC 7636 §4.2).
pub(crate) fn pkce_challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()))
}

/// How a client authenticates one token request.
pub(crate) enum ClientAuthentication<'a> {
    /// `client_secret_basic`, `client_secret_post` or `none`, from the registration.
    Registered(&'a RegisteredClient),
    /// `private_key_jwt` for this client id, audience the issuer.
    Assertion {
        client_id: &'a str,
        key: &'a SigningKey,
        issuer: &'a str,
    },
}

/// One token request: its form and where it goes.
pub(crate) struct TokenRequest<'a> {
    pub(crate) endpoint: &'a str,
    pub(crate) form: Vec<(&'static str, String)>,
    pub(crate) auth: ClientAuthentication<'a>,
    /// Accept any `token_type` (a token exchange issues assertions, `N_A`), not only Bearer.
    pub(crate) any_token_type: bool,
    /// Ask for a token bound to this key (DPoP).
    pub(crate) dpop: Option<&'a super::dpop::DpopKey>,
}

impl TokenRequest<'_> {
    /// Sends it: the token endpoint's answer, refused unless it is a success with a token
    /// type this client can use.
    pub(crate) async fn send(mut self, http: &reqwest::Client) -> Result<TokenResponse, AuthError> {
        let basic = self.authenticate()?;
        let (status, body) = self.exchange(http, basic.as_deref()).await?;
        if !status.is_success() {
            return Err(match serde_json::from_slice::<ErrorResponse>(&body) {
                Ok(e) => AuthError::Server(format!(
                    "token request refused: {}{}",
                    e.error,
                    e.error_description
                        .map(|d| format!(" ({d})"))
                        .unwrap_or_default()
                )),
                Err(_) => AuthError::Server(format!("token request refused: HTTP {status}")),
            });
        }
        let token: TokenResponse = serde_json::from_slice(&body)
            .map_err(|e| AuthError::Server(format!("token response: {e}")))?;
        if let (Some(t), false) = (&token.token_type, self.any_token_type) {
            let dpop = self.dpop.is_some() && t.eq_ignore_ascii_case("dpop");
            if !t.eq_ignore_ascii_case("bearer") && !dpop {
                return Err(AuthError::Server(format!(
                    "token type {t:?} is not supported (Bearer only)"
                )));
            }
        }
        Ok(token)
    }

    /// Adds the client's authentication to the form; returns the `Authorization` header of
    /// `client_secret_basic`.
    fn authenticate(&mut self) -> Result<Option<String>, AuthError> {
        let mut basic = None;
        match &self.auth {
            ClientAuthentication::Registered(c) => match c.auth_method.as_str() {
                "client_secret_basic" => {
                    // RFC 6749 §2.3.1: both parts form-urlencoded before base64.
                    let enc = |s: &str| {
                        url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>()
                    };
                    let secret = c.client_secret.as_deref().unwrap_or_default();
                    basic = Some(format!(
                        "Basic {}",
                        STANDARD.encode(format!("{}:{}", enc(&c.client_id), enc(secret)))
                    ));
                }
                "client_secret_post" => {
                    self.form.push(("client_id", c.client_id.clone()));
                    let secret = c.client_secret.clone().unwrap_or_default();
                    self.form.push(("client_secret", secret));
                }
                _ => self.form.push(("client_id", c.client_id.clone())),
            },
            ClientAuthentication::Assertion {
                client_id,
                key,
                issuer,
            } => {
                self.form.push(("client_id", (*client_id).to_owned()));
                self.form.push((
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_owned(),
                ));
                self.form
                    .push(("client_assertion", key.assertion(client_id, issuer)?));
            }
        }
        Ok(basic)
    }

    /// POSTs the form (with a DPoP proof, once more with the server's nonce if it asks for
    /// one, RFC 9449 §8); the status and body of the answer.
    async fn exchange(
        &self,
        http: &reqwest::Client,
        basic: Option<&str>,
    ) -> Result<(reqwest::StatusCode, bytes::Bytes), AuthError> {
        let mut nonce: Option<String> = None;
        loop {
            let mut req = http
                .post(self.endpoint)
                .header("accept", "application/json")
                .form(&self.form);
            if let Some(b) = basic {
                req = req.header(reqwest::header::AUTHORIZATION, b);
            }
            if let Some(key) = self.dpop {
                req = req.header(
                    "dpop",
                    key.proof("POST", self.endpoint, None, nonce.as_deref())?,
                );
            }
            let resp = req.send().await.map_err(AuthError::Http)?;
            let status = resp.status();
            let new_nonce = resp
                .headers()
                .get("dpop-nonce")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body = resp.bytes().await.map_err(AuthError::Http)?;
            let wants_nonce = status == reqwest::StatusCode::BAD_REQUEST
                && serde_json::from_slice::<ErrorResponse>(&body)
                    .is_ok_and(|e| e.error == "use_dpop_nonce");
            match new_nonce {
                Some(n) if wants_nonce && self.dpop.is_some() && nonce.is_none() => nonce = Some(n),
                _ => return Ok((status, body)),
            }
        }
    }
}

impl TokenResponse {
    /// The grant it makes, replacing `previous` (whose refresh token is kept if the server
    /// did not rotate it).
    pub(crate) fn into_grant(self, base: Grant, requested_scope: Option<String>) -> Grant {
        Grant {
            access_token: self.access_token,
            refresh_token: self.refresh_token.or(base.refresh_token.clone()),
            expires_at: self.expires_in.map(|s| now() + s),
            token_type: self
                .token_type
                .filter(|t| t.eq_ignore_ascii_case("dpop"))
                .map(|_| "DPoP".to_owned())
                .or(base.token_type.clone()),
            scope: self.scope.or(requested_scope).or(base.scope.clone()),
            ..base
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_matches_rfc7636_appendix_b() {
        assert_eq!(
            pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        let a = random_string();
        assert_eq!(a.len(), 43);
        assert_ne!(a, random_string());
    }
}
