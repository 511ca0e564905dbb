//! An OAuth client that runs no authorization flow of its own: it uses (and refreshes) the
//! grant a token store holds, as the `oxmcp` command's client commands and the gateway's
//! `login = true` upstreams do with the tokens `oxmcp login` stored.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::{Flow, OAuthClient, OAuthConfig, TokenStore, UserAgent};
use crate::AuthError;

impl OAuthClient {
    /// A client for the MCP server at `url` with the grant `store` holds for it, refreshed
    /// now if it has expired (a failed refresh is logged and the grant dropped). When the
    /// server wants an authorization the store cannot give (no grant, a refused one, more
    /// scopes), requests fail with [`AuthError::Config`]`(advice)`: say there how to get one
    /// (`run oxmcp login URL`).
    ///
    /// # Errors
    /// A malformed server URL, an unreadable store.
    pub async fn stored(
        url: &str,
        store: TokenStore,
        advice: impl Into<String>,
    ) -> Result<Self, AuthError> {
        let agent = StoredOnly(advice.into());
        let mut config = OAuthConfig::new(url, Flow::AuthorizationCode(Arc::new(agent)));
        config.store = Some(store);
        let oauth = OAuthClient::new(config)?;
        if let Err(e) = oauth.refresh_if_expired().await {
            tracing::info!("the stored token could not be refreshed: {e}");
        }
        Ok(oauth)
    }
}

/// The agent of a client with stored grants only: an authorization that is needed ends with
/// the advice on how to get one.
#[derive(Debug)]
struct StoredOnly(String);

impl StoredOnly {
    fn advice(&self) -> AuthError {
        AuthError::Config(self.0.clone())
    }
}

impl UserAgent for StoredOnly {
    fn redirect_uri(&self) -> String {
        "http://127.0.0.1/callback".to_owned()
    }

    fn available(&self) -> Result<(), AuthError> {
        Err(self.advice())
    }

    fn authorize<'a>(&'a self, _url: &'a str) -> BoxFuture<'a, Result<String, AuthError>> {
        Box::pin(async move { Err(self.advice()) })
    }
}
