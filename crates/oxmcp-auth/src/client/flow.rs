//! The grants: the authorization code with PKCE (RFC 6749 §4.1, RFC 7636, RFC 8707, RFC 9207)
//! and client credentials; and how the client gets its identity at an authorization server
//! (pre-registered, Client ID Metadata Document, Dynamic Client Registration).

use serde::Deserialize;
use url::Url;

use super::OAuthClient;
use super::agent::UserAgent;
use super::discover::Discovered;
use super::guard::check_authorization_url;
use super::store::{Grant, RegisteredClient};
use super::token::{ClientAuthentication, SigningKey, TokenRequest, pkce_challenge, random_string};
use crate::AuthError;
use crate::metadata::AuthorizationServerMetadata;

/// The token endpoint authentication method for a client with (or without) a secret, from
/// what the server supports (RFC 8414's default is `client_secret_basic`).
fn auth_method(meta: &AuthorizationServerMetadata, has_secret: bool) -> String {
    if !has_secret {
        return "none".to_owned();
    }
    let supported = meta.token_endpoint_auth_methods_supported.as_deref();
    let offers = |m: &str| supported.is_none_or(|s| s.iter().any(|x| x == m));
    if offers("client_secret_basic") {
        "client_secret_basic"
    } else if supported.is_some_and(|s| s.iter().any(|x| x == "client_secret_post")) {
        "client_secret_post"
    } else {
        "client_secret_basic"
    }
    .to_owned()
}

/// What a registration endpoint answers (RFC 7591 §3.2.1).
#[derive(Deserialize)]
struct Registered {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
}

/// Registers this client at the authorization server (RFC 7591).
async fn register(
    oauth: &OAuthClient,
    meta: &AuthorizationServerMetadata,
    endpoint: &str,
    redirect_uri: &str,
) -> Result<RegisteredClient, AuthError> {
    let url = Url::parse(endpoint)
        .map_err(|e| AuthError::Discovery(format!("registration endpoint {endpoint:?}: {e}")))?;
    oauth.policy.check(&url, "registration endpoint")?;
    let supported = meta.token_endpoint_auth_methods_supported.as_deref();
    // A public client where the server allows it; else the secret method it supports.
    let method = match supported {
        Some(s) if s.iter().any(|m| m == "none") => "none".to_owned(),
        _ => auth_method(meta, true),
    };
    let body = serde_json::json!({
        "client_name": oauth.config.client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": method,
        "application_type": "native",
    });
    let resp = oauth
        .http
        .post(url)
        .json(&body)
        .send()
        .await
        .map_err(AuthError::Http)?;
    let status = resp.status();
    if !status.is_success() {
        let text = resp.text().await.unwrap_or_default();
        let text: String = text.chars().take(300).collect();
        return Err(AuthError::Server(format!(
            "client registration refused: HTTP {status} {text}"
        )));
    }
    let r: Registered = resp
        .json()
        .await
        .map_err(|e| AuthError::Server(format!("client registration answer: {e}")))?;
    let has_secret = r.client_secret.is_some();
    Ok(RegisteredClient {
        auth_method: r.token_endpoint_auth_method.unwrap_or_else(|| {
            if has_secret {
                auth_method(meta, true)
            } else {
                "none".into()
            }
        }),
        client_id: r.client_id,
        client_secret: r.client_secret,
        redirect_uri: Some(redirect_uri.to_owned()),
    })
}

/// This client's identity at the authorization server, in the MCP order: pre-registered,
/// then a Client ID Metadata Document, then one registered before (at this issuer only),
/// then Dynamic Client Registration.
async fn client_identity(
    oauth: &OAuthClient,
    meta: &AuthorizationServerMetadata,
    redirect_uri: &str,
) -> Result<RegisteredClient, AuthError> {
    let c = &oauth.config;
    if let Some(id) = &c.client_id {
        return Ok(RegisteredClient {
            client_id: id.clone(),
            client_secret: c.client_secret.clone(),
            auth_method: auth_method(meta, c.client_secret.is_some()),
            redirect_uri: Some(redirect_uri.to_owned()),
        });
    }
    if let (Some(url), Some(true)) = (
        &c.client_metadata_url,
        meta.client_id_metadata_document_supported,
    ) {
        return Ok(RegisteredClient {
            client_id: url.clone(),
            client_secret: None,
            auth_method: "none".to_owned(),
            redirect_uri: Some(redirect_uri.to_owned()),
        });
    }
    let known = oauth
        .held
        .lock()
        .clients
        .iter()
        .find(|(issuer, r)| {
            *issuer == meta.issuer && r.redirect_uri.as_deref() == Some(redirect_uri)
        })
        .map(|(_, r)| r.clone());
    if let Some(r) = known {
        return Ok(r);
    }
    if let Some(store) = &c.store
        && let Some(r) = store.client(&meta.issuer, redirect_uri)?
    {
        oauth
            .held
            .lock()
            .clients
            .push((meta.issuer.clone(), r.clone()));
        return Ok(r);
    }
    let Some(endpoint) = &meta.registration_endpoint else {
        return Err(AuthError::Config(format!(
            "{} offers no dynamic client registration and no client id is configured \
             (give one with --client-id)",
            meta.issuer
        )));
    };
    let r = register(oauth, meta, endpoint, redirect_uri).await?;
    if let Some(store) = &c.store {
        store
            .hold()
            .await?
            .put_client(&meta.issuer, redirect_uri, &r)?;
    }
    oauth
        .held
        .lock()
        .clients
        .push((meta.issuer.clone(), r.clone()));
    Ok(r)
}

/// Checks the authorization response: `error`, `state`, RFC 9207 `iss`; returns the code.
fn read_callback(
    callback: &str,
    state: &str,
    meta: &AuthorizationServerMetadata,
) -> Result<String, AuthError> {
    let url = Url::parse(callback)
        .map_err(|e| AuthError::Server(format!("authorization response {callback:?}: {e}")))?;
    let get = |k: &str| {
        url.query_pairs()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.into_owned())
    };
    if let Some(e) = get("error") {
        let d = get("error_description")
            .map(|d| format!(" ({d})"))
            .unwrap_or_default();
        return Err(AuthError::Server(format!("authorization refused: {e}{d}")));
    }
    if get("state").as_deref() != Some(state) {
        return Err(AuthError::Refused(
            "the authorization response's state does not match the request's".into(),
        ));
    }
    // RFC 9207: a present `iss` must be the issuer, compared as strings; one that was
    // promised must be there.
    match get("iss") {
        Some(iss) if iss != meta.issuer => {
            return Err(AuthError::Refused(format!(
                "the authorization response comes from issuer {iss:?}, not {:?} (RFC 9207)",
                meta.issuer
            )));
        }
        None if meta.authorization_response_iss_parameter_supported == Some(true) => {
            return Err(AuthError::Refused(
                "the authorization server promised an iss parameter and sent none (RFC 9207)"
                    .into(),
            ));
        }
        _ => {}
    }
    get("code").ok_or_else(|| AuthError::Server("the authorization response has no code".into()))
}

/// The parameters of an authorization request.
struct AuthorizationRequest<'a> {
    endpoint: &'a str,
    client_id: &'a str,
    redirect_uri: &'a str,
    state: &'a str,
    verifier: &'a str,
    resource: &'a str,
    scope: Option<&'a str>,
}

impl AuthorizationRequest<'_> {
    /// The URL the user agent opens (checked: http(s) only, http only to loopback).
    fn url(&self) -> Result<Url, AuthError> {
        let mut url = check_authorization_url(self.endpoint)?;
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", self.client_id)
                .append_pair("redirect_uri", self.redirect_uri)
                .append_pair("state", self.state)
                .append_pair("code_challenge", &pkce_challenge(self.verifier))
                .append_pair("code_challenge_method", "S256")
                .append_pair("resource", self.resource);
            if let Some(s) = self.scope {
                q.append_pair("scope", s);
            }
        }
        Ok(url)
    }
}

/// The DPoP key to bind the token to, where the server offers DPoP with ES256 (RFC 9449) and
/// the client wants it.
fn dpop_key(
    oauth: &OAuthClient,
    meta: &AuthorizationServerMetadata,
) -> Result<Option<super::dpop::DpopKey>, AuthError> {
    let offered = meta
        .dpop_signing_alg_values_supported
        .as_ref()
        .is_some_and(|a| a.iter().any(|x| x == "ES256"));
    if oauth.config.dpop && offered {
        oauth.dpop_key().map(Some)
    } else {
        Ok(None)
    }
}

/// The authorization code grant with PKCE S256.
pub(super) async fn authorization_code(
    oauth: &OAuthClient,
    found: &Discovered,
    scopes: &[String],
    agent: &dyn UserAgent,
) -> Result<Grant, AuthError> {
    let meta = &found.server;
    let pkce = meta
        .code_challenge_methods_supported
        .as_ref()
        .is_some_and(|m| m.iter().any(|x| x == "S256"));
    if !pkce {
        return Err(AuthError::Refused(format!(
            "{} does not support PKCE with S256 (code_challenge_methods_supported)",
            meta.issuer
        )));
    }
    let authorize = meta.authorization_endpoint.as_ref().ok_or_else(|| {
        AuthError::Discovery(format!("{} lists no authorization endpoint", meta.issuer))
    })?;
    let token_endpoint = token_endpoint(oauth, meta)?;
    let redirect_uri = agent.redirect_uri();
    // Codes are only ever sent back to loopback or over https.
    check_authorization_url(&redirect_uri).map_err(|_| {
        AuthError::Config(format!(
            "redirect URI {redirect_uri:?}: https or loopback only"
        ))
    })?;
    let client = client_identity(oauth, meta, &redirect_uri).await?;
    let mut scope = scopes.to_vec();
    if oauth.config.offline_access && meta.offers_scope("offline_access") {
        scope.push("offline_access".to_owned());
    }
    let scope = (!scope.is_empty()).then(|| scope.join(" "));
    let (state, verifier) = (random_string(), random_string());
    let url = AuthorizationRequest {
        endpoint: authorize,
        client_id: &client.client_id,
        redirect_uri: &redirect_uri,
        state: &state,
        verifier: &verifier,
        resource: &found.resource,
        scope: scope.as_deref(),
    }
    .url()?;
    let callback = agent.authorize_within(url.as_str(), oauth.policy).await?;
    let code = read_callback(&callback, &state, meta)?;
    let form = vec![
        ("grant_type", "authorization_code".to_owned()),
        ("code", code),
        ("redirect_uri", redirect_uri),
        ("code_verifier", verifier),
        ("resource", found.resource.clone()),
    ];
    let dpop = dpop_key(oauth, meta)?;
    let answer = TokenRequest {
        endpoint: token_endpoint,
        form,
        auth: ClientAuthentication::Registered(&client),
        any_token_type: false,
        dpop: dpop.as_ref(),
    }
    .send(&oauth.http)
    .await?;
    let base = Grant {
        dpop_key: dpop.as_ref().map(super::dpop::DpopKey::export),
        ..found.grant(token_endpoint, client)
    };
    Ok(answer.into_grant(base, scope))
}

/// The client credentials grant, with the configured secret or a signed assertion.
pub(super) async fn client_credentials(
    oauth: &OAuthClient,
    found: &Discovered,
    scopes: &[String],
    key: Option<&SigningKey>,
) -> Result<Grant, AuthError> {
    let meta = &found.server;
    let token_endpoint = token_endpoint(oauth, meta)?;
    let client_id = oauth.config.client_id.clone().ok_or_else(|| {
        AuthError::Config("the client credentials grant needs a client id".into())
    })?;
    let scope = (!scopes.is_empty()).then(|| scopes.join(" "));
    let mut form = vec![
        ("grant_type", "client_credentials".to_owned()),
        ("resource", found.resource.clone()),
    ];
    if let Some(s) = &scope {
        form.push(("scope", s.clone()));
    }
    let client = RegisteredClient {
        client_id: client_id.clone(),
        client_secret: oauth.config.client_secret.clone(),
        auth_method: if key.is_some() {
            "private_key_jwt".to_owned()
        } else {
            auth_method(meta, oauth.config.client_secret.is_some())
        },
        redirect_uri: None,
    };
    let auth = match key {
        Some(key) => ClientAuthentication::Assertion {
            client_id: &client_id,
            key,
            issuer: &meta.issuer,
        },
        None => ClientAuthentication::Registered(&client),
    };
    let answer = TokenRequest {
        endpoint: token_endpoint,
        form,
        auth,
        any_token_type: false,
        dpop: None,
    }
    .send(&oauth.http)
    .await?;
    let base = found.grant(token_endpoint, client);
    Ok(answer.into_grant(base, scope))
}

/// The JWT bearer grant (RFC 7523 §2.1) with `assertion`, or with an Identity Assertion JWT
/// Authorization Grant obtained first by token exchange at the enterprise IdP (RFC 8693,
/// SEP-990). A refused grant is not retried with another grant type.
pub(super) async fn jwt_bearer(
    oauth: &OAuthClient,
    found: &Discovered,
    scopes: &[String],
    assertion: &super::Assertion,
) -> Result<Grant, AuthError> {
    let meta = &found.server;
    let token_endpoint = token_endpoint(oauth, meta)?;
    let scope = (!scopes.is_empty()).then(|| scopes.join(" "));
    let jwt = match assertion {
        super::Assertion::Jwt(jwt) => jwt.clone(),
        super::Assertion::IdJag {
            idp_token_endpoint,
            idp_client_id,
            idp_client_secret,
            id_token,
        } => {
            let idp_client = RegisteredClient {
                client_id: idp_client_id.clone(),
                client_secret: idp_client_secret.clone(),
                auth_method: if idp_client_secret.is_some() {
                    "client_secret_basic".to_owned()
                } else {
                    "none".to_owned()
                },
                redirect_uri: None,
            };
            id_jag(
                oauth,
                found,
                scope.as_deref(),
                idp_token_endpoint,
                &idp_client,
                id_token,
            )
            .await?
        }
    };
    let client_id = oauth
        .config
        .client_id
        .clone()
        .ok_or_else(|| AuthError::Config("the JWT bearer grant needs a client id".into()))?;
    let client = RegisteredClient {
        client_id,
        client_secret: oauth.config.client_secret.clone(),
        auth_method: auth_method(meta, oauth.config.client_secret.is_some()),
        redirect_uri: None,
    };
    let mut form = vec![
        (
            "grant_type",
            "urn:ietf:params:oauth:grant-type:jwt-bearer".to_owned(),
        ),
        ("assertion", jwt),
        ("resource", found.resource.clone()),
    ];
    if let Some(s) = &scope {
        form.push(("scope", s.clone()));
    }
    let answer = TokenRequest {
        endpoint: token_endpoint,
        form,
        auth: ClientAuthentication::Registered(&client),
        any_token_type: false,
        dpop: None,
    }
    .send(&oauth.http)
    .await?;
    let base = found.grant(token_endpoint, client);
    Ok(answer.into_grant(base, scope))
}

/// Exchanges the user's ID token at the enterprise IdP for an ID-JAG naming the authorization
/// server and the resource (RFC 8693; SEP-990).
async fn id_jag(
    oauth: &OAuthClient,
    found: &Discovered,
    scope: Option<&str>,
    idp_token_endpoint: &str,
    idp_client: &RegisteredClient,
    id_token: &str,
) -> Result<String, AuthError> {
    let idp = Url::parse(idp_token_endpoint).map_err(|e| {
        AuthError::Config(format!("IdP token endpoint {idp_token_endpoint:?}: {e}"))
    })?;
    oauth.policy.check(&idp, "IdP token endpoint")?;
    let mut form = vec![
        (
            "grant_type",
            "urn:ietf:params:oauth:grant-type:token-exchange".to_owned(),
        ),
        (
            "requested_token_type",
            "urn:ietf:params:oauth:token-type:id-jag".to_owned(),
        ),
        ("subject_token", id_token.to_owned()),
        (
            "subject_token_type",
            "urn:ietf:params:oauth:token-type:id_token".to_owned(),
        ),
        ("audience", found.server.issuer.clone()),
        ("resource", found.resource.clone()),
    ];
    if let Some(s) = scope {
        form.push(("scope", s.to_owned()));
    }
    let answer = TokenRequest {
        endpoint: idp_token_endpoint,
        form,
        auth: ClientAuthentication::Registered(idp_client),
        any_token_type: true,
        dpop: None,
    }
    .send(&oauth.http)
    .await?;
    Ok(answer.access_token)
}

/// The authorization server's token endpoint, checked against the host policy.
fn token_endpoint<'a>(
    oauth: &OAuthClient,
    meta: &'a AuthorizationServerMetadata,
) -> Result<&'a String, AuthError> {
    let endpoint = meta
        .token_endpoint
        .as_ref()
        .ok_or_else(|| AuthError::Discovery(format!("{} lists no token endpoint", meta.issuer)))?;
    let url = Url::parse(endpoint)
        .map_err(|e| AuthError::Discovery(format!("token endpoint {endpoint:?}: {e}")))?;
    oauth.policy.check(&url, "token endpoint")?;
    Ok(endpoint)
}
