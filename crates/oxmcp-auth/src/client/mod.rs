//! The OAuth 2.1 client of an MCP connection: plugged into the HTTP transport as its
//! [`Authorizer`], it answers 401 and 403 challenges by discovering the authorization server
//! and getting a token (authorization code with PKCE, or client credentials), refreshes
//! tokens, steps up scopes a bounded number of times, and keeps tokens in a [`TokenStore`].
//!
//! The rooms: `discover` (resource and authorization server metadata), `flow` (the
//! authorization code grant and client registration), `token` (token endpoint requests),
//! `agent` (the user's browser, or none), `guard` (what may be fetched and opened) and
//! `store` (the token file).

mod agent;
mod discover;
mod dpop;
mod flow;
pub mod guard;
mod lockfile;
mod prior_login;
mod store;
mod token;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use oxmcp_http::client::{Authorizer, Challenge};
use parking_lot::Mutex;
use url::Url;

pub use agent::{Headless, Loopback, UserAgent, open_browser};
pub use guard::HostPolicy;
pub use store::{Grant, RegisteredClient, TokenStore};
pub use token::SigningKey;

use crate::AuthError;
use crate::challenge::BearerChallenge;

/// How the client gets tokens.
#[derive(Debug, Clone)]
pub enum Flow {
    /// The authorization code grant with PKCE, through a user agent.
    AuthorizationCode(Arc<dyn UserAgent>),
    /// The client credentials grant (machine to machine), authenticated with the configured
    /// client secret ([`OAuthConfig::client_secret`]) or with this key (`private_key_jwt`).
    ClientCredentials(Option<SigningKey>),
    /// The JWT bearer grant (RFC 7523) with an assertion, as the configured client
    /// (workload identity federation, enterprise-managed authorization).
    JwtBearer(Assertion),
}

/// The assertion of a JWT bearer grant.
#[derive(Clone)]
pub enum Assertion {
    /// A JWT the workload already holds (workload identity federation, SEP-1933).
    Jwt(String),
    /// An Identity Assertion JWT Authorization Grant, obtained by exchanging the user's ID
    /// token at the enterprise IdP (RFC 8693; SEP-990, enterprise-managed authorization).
    IdJag {
        /// The IdP's token endpoint.
        idp_token_endpoint: String,
        /// This client's id at the IdP.
        idp_client_id: String,
        /// Its secret there, if it has one.
        idp_client_secret: Option<String>,
        /// The user's ID token from the IdP.
        id_token: String,
    },
}

impl std::fmt::Debug for Assertion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Assertion::Jwt(_) => f.write_str("Assertion::Jwt(..)"),
            Assertion::IdJag {
                idp_token_endpoint, ..
            } => f
                .debug_struct("Assertion::IdJag")
                .field("idp_token_endpoint", idp_token_endpoint)
                .finish_non_exhaustive(),
        }
    }
}

/// Settings of an [`OAuthClient`].
#[derive(Debug, Clone)]
pub struct OAuthConfig {
    /// The MCP server's URL.
    pub server: String,
    /// How tokens are obtained.
    pub flow: Flow,
    /// A client id registered beforehand (used before any other way to get one).
    pub client_id: Option<String>,
    /// Its secret, for a confidential client.
    pub client_secret: Option<String>,
    /// The HTTPS URL of this client's Client ID Metadata Document, used as its `client_id`
    /// where the authorization server accepts them (before Dynamic Client Registration).
    pub client_metadata_url: Option<String>,
    /// The name registered for this client.
    pub client_name: String,
    /// Scopes to ask for; `None`: the challenge's, else those the resource lists, else none.
    pub scopes: Option<Vec<String>>,
    /// Ask for a refresh token (`offline_access`, where the authorization server lists it).
    pub offline_access: bool,
    /// Fetch metadata from private and link-local addresses too (never from them by default;
    /// loopback is allowed when the MCP server is itself on loopback).
    pub allow_private_hosts: bool,
    /// Where tokens and registered clients are kept between runs.
    pub store: Option<TokenStore>,
    /// Authorizations allowed within [`AUTHORIZATION_WINDOW`] (step-up loops end there).
    pub max_authorizations: u32,
    /// Ask for DPoP-bound tokens (RFC 9449) where the authorization server offers them.
    pub dpop: bool,
}

impl OAuthConfig {
    /// Defaults for the server at `server` with `flow`.
    pub fn new(server: impl Into<String>, flow: Flow) -> Self {
        Self {
            server: server.into(),
            flow,
            client_id: None,
            client_secret: None,
            client_metadata_url: None,
            client_name: "mcp-rs".to_owned(),
            scopes: None,
            offline_access: true,
            allow_private_hosts: false,
            store: None,
            max_authorizations: 3,
            dpop: true,
        }
    }
}

/// The window in which [`OAuthConfig::max_authorizations`] counts.
pub const AUTHORIZATION_WINDOW: Duration = Duration::from_secs(300);

/// What the client holds between requests.
#[derive(Debug, Default)]
struct Held {
    grant: Option<Grant>,
    /// The scopes asked for last (step-up asks for these plus the challenged ones).
    requested: Vec<String>,
    /// Recent authorizations, for the bound.
    authorizations: Vec<Instant>,
    /// The access token a refresh was already tried for.
    refreshed_for: Option<String>,
    /// Clients registered (or chosen) per issuer in this process.
    clients: Vec<(String, RegisteredClient)>,
    /// The DPoP key, once there is one.
    dpop: Option<dpop::DpopKey>,
    /// The resource server's latest DPoP nonce.
    rs_nonce: Option<String>,
}

/// An OAuth client for one MCP server. Cheap to share; give it to the transport as
/// [`oxmcp_http::HttpClientConfig::authorizer`].
pub struct OAuthClient {
    config: OAuthConfig,
    server: Url,
    http: reqwest::Client,
    policy: HostPolicy,
    held: Mutex<Held>,
    /// One authorization at a time: concurrent challenges wait for it and reuse its token.
    authorizing: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient")
            .field("server", &self.server.as_str())
            .finish_non_exhaustive()
    }
}

impl OAuthClient {
    /// A client for `config.server`, with the grant the store holds for it, if any.
    ///
    /// # Errors
    /// A malformed server URL, an unreadable store.
    pub fn new(config: OAuthConfig) -> Result<Self, AuthError> {
        let server = Url::parse(&config.server)
            .map_err(|e| AuthError::Config(format!("server URL {:?}: {e}", config.server)))?;
        let policy = HostPolicy::for_server(&server, config.allow_private_hosts);
        let http = guard::http_client(policy)?;
        let grant = match &config.store {
            Some(s) => s.grant_for_server(&server)?,
            None => None,
        };
        Ok(Self {
            config,
            server,
            http,
            policy,
            held: Mutex::new(Held {
                grant,
                ..Held::default()
            }),
            authorizing: tokio::sync::Mutex::new(()),
        })
    }

    /// The grant held now.
    pub fn grant(&self) -> Option<Grant> {
        self.held.lock().grant.clone()
    }

    /// Gets a token now, without waiting for a request to be refused (`oxmcp login`): the
    /// server's challenge to an unauthenticated request (for its `resource_metadata` and
    /// `scope`), then discovery and the configured flow.
    ///
    /// # Errors
    /// Whatever stopped discovery or authorization.
    pub async fn authorize(&self) -> Result<Grant, AuthError> {
        let _one = self.authorizing.lock().await;
        let probe = r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#;
        let challenge = match self
            .http
            .post(self.server.clone())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(probe)
            .send()
            .await
        {
            Ok(r) if r.status() == reqwest::StatusCode::UNAUTHORIZED => {
                let headers: Vec<String> = r
                    .headers()
                    .get_all(reqwest::header::WWW_AUTHENTICATE)
                    .iter()
                    .filter_map(|v| v.to_str().ok().map(str::to_owned))
                    .collect();
                BearerChallenge::find(&headers)
            }
            _ => None,
        };
        self.run_authorization(challenge.as_ref(), None).await
    }

    /// Refreshes the access token if it has expired (or will within a minute) and a refresh
    /// token is held; does nothing otherwise.
    ///
    /// # Errors
    /// The refresh failed (the stale grant is dropped then).
    pub async fn refresh_if_expired(&self) -> Result<(), AuthError> {
        let stale = self
            .held
            .lock()
            .grant
            .as_ref()
            .is_some_and(|g| g.expired(60) && g.refresh_token.is_some());
        if stale {
            let _one = self.authorizing.lock().await;
            self.refresh().await?;
        }
        Ok(())
    }

    /// The DPoP key: the held grant's, else a new one (kept for later grants).
    fn dpop_key(&self) -> Result<dpop::DpopKey, AuthError> {
        let mut held = self.held.lock();
        if let Some(k) = &held.dpop {
            return Ok(k.clone());
        }
        let key = match held.grant.as_ref().and_then(|g| g.dpop_key.as_deref()) {
            Some(text) => dpop::DpopKey::import(text)?,
            None => dpop::DpopKey::generate()?,
        };
        held.dpop = Some(key.clone());
        Ok(key)
    }

    /// Takes note of a new grant: held, and stored.
    async fn keep(&self, grant: Grant) -> Result<Grant, AuthError> {
        if let Some(store) = &self.config.store {
            store.hold().await?.put_grant(&grant)?;
        }
        self.held.lock().grant = Some(grant.clone());
        Ok(grant)
    }

    /// Holds `grant` instead of the one held (its DPoP key with it).
    fn adopt(&self, grant: Grant) {
        let mut held = self.held.lock();
        if held.grant.as_ref().map(|g| &g.dpop_key) != Some(&grant.dpop_key) {
            held.dpop = None;
        }
        held.grant = Some(grant);
    }

    /// Refreshes the access token, holding the token store meanwhile so that processes
    /// sharing it refresh one at a time: when another one already refreshed the grant held
    /// here (the refresh token held is then spent, where the server rotates them), its new
    /// grant is taken instead, and refreshed only if it has expired too.
    async fn refresh(&self) -> Result<Grant, AuthError> {
        let held = self
            .held
            .lock()
            .grant
            .clone()
            .ok_or_else(|| AuthError::Server("nothing to refresh".into()))?;
        let Some(store) = &self.config.store else {
            return self.refresh_grant(held, None).await;
        };
        let hold = store.hold().await?;
        match hold.grant_for_server(&self.server)? {
            Some(stored) if stored.access_token != held.access_token => {
                self.adopt(stored.clone());
                if stored.expired(60) && stored.refresh_token.is_some() {
                    self.refresh_grant(stored, Some(&hold)).await
                } else {
                    Ok(stored)
                }
            }
            _ => self.refresh_grant(held, Some(&hold)).await,
        }
    }

    /// Uses the refresh token of `grant`; the new grant is held, and written to the store
    /// through `hold`.
    async fn refresh_grant(
        &self,
        grant: Grant,
        hold: Option<&store::Locked<'_>>,
    ) -> Result<Grant, AuthError> {
        let Some(refresh) = grant.refresh_token.clone() else {
            return Err(AuthError::Server("no refresh token".into()));
        };
        self.held.lock().refreshed_for = Some(grant.access_token.clone());
        let form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh),
            ("resource", grant.resource.clone()),
        ];
        let client = grant.client.clone();
        let key = if grant.dpop_key.is_some() {
            Some(self.dpop_key()?)
        } else {
            None
        };
        let answer = token::TokenRequest {
            endpoint: &grant.token_endpoint,
            form,
            auth: token::ClientAuthentication::Registered(&client),
            any_token_type: false,
            dpop: key.as_ref(),
        }
        .send(&self.http)
        .await;
        match answer {
            Ok(t) => {
                let scope = grant.scope.clone();
                let new = t.into_grant(grant, scope);
                if let Some(hold) = hold {
                    hold.put_grant(&new)?;
                }
                self.held.lock().grant = Some(new.clone());
                Ok(new)
            }
            Err(e) => {
                self.held.lock().grant = None;
                Err(e)
            }
        }
    }

    /// Counts an authorization against the bound.
    fn count_authorization(&self) -> Result<(), AuthError> {
        let mut held = self.held.lock();
        let now = Instant::now();
        held.authorizations
            .retain(|t| now.duration_since(*t) < AUTHORIZATION_WINDOW);
        if held.authorizations.len() >= self.config.max_authorizations as usize {
            return Err(AuthError::Refused(format!(
                "gave up after {} authorizations in a row (the server keeps refusing)",
                held.authorizations.len()
            )));
        }
        held.authorizations.push(now);
        Ok(())
    }

    /// Answers a challenge.
    async fn on_challenge(&self, challenge: &Challenge) -> Result<bool, AuthError> {
        let dpop = challenge
            .www_authenticate
            .iter()
            .find_map(|h| BearerChallenge::parse_scheme(h, "DPoP"));
        // RFC 9449 §9: the resource server wants its nonce in the proof; no new token needed.
        if let (Some(d), Some(nonce)) = (&dpop, &challenge.dpop_nonce)
            && d.error() == Some("use_dpop_nonce")
        {
            self.held.lock().rs_nonce = Some(nonce.clone());
            return Ok(true);
        }
        let bearer = BearerChallenge::find(&challenge.www_authenticate)
            .or(dpop)
            .unwrap_or_default();
        let sent = self
            .held
            .lock()
            .grant
            .as_ref()
            .map(|g| g.access_token.clone());
        let _one = self.authorizing.lock().await;
        // Another request's authorization finished while this one waited: retry with it.
        let now = self
            .held
            .lock()
            .grant
            .as_ref()
            .map(|g| g.access_token.clone());
        if now.is_some() && now != sent {
            return Ok(true);
        }
        let step_up = match challenge.status {
            401 => None,
            403 if bearer.error() == Some("insufficient_scope") => {
                Some(bearer.scopes().unwrap_or_default())
            }
            _ => return Ok(false),
        };
        if step_up.is_none() {
            let can_refresh = {
                let held = self.held.lock();
                held.grant
                    .as_ref()
                    .is_some_and(|g| g.refresh_token.is_some())
                    && held.refreshed_for != sent
            };
            if can_refresh {
                match self.refresh().await {
                    Ok(_) => return Ok(true),
                    Err(e) => {
                        tracing::info!("refreshing the token failed ({e}); authorizing again")
                    }
                }
            }
        }
        self.run_authorization(Some(&bearer), step_up).await?;
        Ok(true)
    }

    /// Discovery, then the configured flow.
    async fn run_authorization(
        &self,
        challenge: Option<&BearerChallenge>,
        step_up: Option<Vec<String>>,
    ) -> Result<Grant, AuthError> {
        if let Flow::AuthorizationCode(agent) = &self.config.flow {
            agent.available()?;
        }
        self.count_authorization()?;
        let found = discover::discover(
            &self.http,
            self.policy,
            &self.server,
            challenge.and_then(BearerChallenge::resource_metadata),
        )
        .await?;
        let scopes = self.choose_scopes(&found, challenge, step_up);
        let grant = match &self.config.flow {
            Flow::ClientCredentials(key) => {
                flow::client_credentials(self, &found, &scopes, key.as_ref()).await?
            }
            Flow::JwtBearer(assertion) => {
                flow::jwt_bearer(self, &found, &scopes, assertion).await?
            }
            Flow::AuthorizationCode(agent) => {
                flow::authorization_code(self, &found, &scopes, agent.as_ref()).await?
            }
        };
        self.keep(grant).await
    }

    /// The scopes to ask for: configured, else the challenge's, else the resource's
    /// `scopes_supported`; on step-up, those asked for before plus the challenged ones.
    fn choose_scopes(
        &self,
        found: &discover::Discovered,
        challenge: Option<&BearerChallenge>,
        step_up: Option<Vec<String>>,
    ) -> Vec<String> {
        let mut held = self.held.lock();
        let mut scopes = match (&self.config.scopes, step_up) {
            (_, Some(more)) => {
                let mut s = held.requested.clone();
                for m in more {
                    if !s.contains(&m) {
                        s.push(m);
                    }
                }
                s
            }
            (Some(configured), None) => configured.clone(),
            (None, None) => challenge
                .and_then(BearerChallenge::scopes)
                .or_else(|| {
                    found
                        .resource_metadata
                        .as_ref()
                        .and_then(|p| p.scopes_supported.clone())
                })
                .unwrap_or_default(),
        };
        scopes.retain(|s| s != "offline_access");
        held.requested.clone_from(&scopes);
        scopes
    }
}

impl Authorizer for OAuthClient {
    fn authorization(&self) -> Option<String> {
        self.held.lock().grant.as_ref().map(|g| {
            let scheme = if g.token_type.as_deref() == Some("DPoP") {
                "DPoP"
            } else {
                "Bearer"
            };
            format!("{scheme} {}", g.access_token)
        })
    }

    fn proof(&self, method: &str, url: &str) -> Option<String> {
        let (token, nonce) = {
            let held = self.held.lock();
            let g = held.grant.as_ref()?;
            if g.token_type.as_deref() != Some("DPoP") {
                return None;
            }
            (g.access_token.clone(), held.rs_nonce.clone())
        };
        let key = self.dpop_key().ok()?;
        key.proof(method, url, Some(&token), nonce.as_deref()).ok()
    }

    fn challenged<'a>(&'a self, challenge: &'a Challenge) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(async move {
            self.on_challenge(challenge).await.map_err(|e| {
                tracing::warn!("authorization failed: {e}");
                e.to_string()
            })
        })
    }
}
