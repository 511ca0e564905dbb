//! Where tokens are kept between runs: one JSON file (mode 0600) keyed by issuer and
//! resource, so a token is only ever sent to the resource it was issued for.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::lockfile::{self, FileLock};
use crate::AuthError;

/// What an authorization produced, as kept in the store.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Grant {
    /// The authorization server that issued it.
    pub issuer: String,
    /// The resource (MCP server) it was issued for.
    pub resource: String,
    /// The access token.
    pub access_token: String,
    /// The refresh token, if one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires (Unix seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scopes granted (or requested, when the server did not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The token endpoint, for refreshing.
    pub token_endpoint: String,
    /// `DPoP` for a sender-constrained token (RFC 9449), else bearer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_type: Option<String>,
    /// The DPoP key the token is bound to (PKCS#8, base64url).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<String>,
    /// The client the grant belongs to.
    pub client: RegisteredClient,
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant")
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl Grant {
    /// Whether the access token has expired, or will within `margin` seconds.
    pub fn expired(&self, margin: u64) -> bool {
        self.expires_at.is_some_and(|t| t <= now() + margin)
    }
}

/// A client identity at one authorization server.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RegisteredClient {
    /// The client id.
    pub client_id: String,
    /// Its secret, for confidential clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// How it authenticates at the token endpoint: `client_secret_basic`,
    /// `client_secret_post` or `none`.
    pub auth_method: String,
    /// The redirect URI it was registered with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
}

impl std::fmt::Debug for RegisteredClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredClient")
            .field("client_id", &self.client_id)
            .field("auth_method", &self.auth_method)
            .finish_non_exhaustive()
    }
}

/// The seconds since the Unix epoch.
pub(crate) fn now() -> u64 {
    crate::unix_now()
}

#[derive(Default, Serialize, Deserialize)]
struct File {
    #[serde(default)]
    grants: BTreeMap<String, Grant>,
    /// Clients registered dynamically, by issuer and redirect URI.
    #[serde(default)]
    clients: BTreeMap<String, RegisteredClient>,
}

/// The token file. Reads go to disk each time (another `oxmcp` process may have refreshed a
/// token meanwhile). Each change is one read-modify-write under an exclusive lock (`PATH.lock`
/// beside the file, a `flock` other processes honour too; Unix only), waiting up to a minute
/// for another writer, and replaces the file atomically through a new temporary file of mode
/// 0600 (never a file or symlink already there). A symbolic link as the file (or as its lock
/// file) is refused, not followed: reads and writes fail with [`AuthError::Store`].
#[derive(Debug, Clone)]
pub struct TokenStore {
    path: PathBuf,
}

/// The store held exclusively: what is read and written through it is one read-modify-write.
#[derive(Debug)]
pub(crate) struct Locked<'a> {
    store: &'a TokenStore,
    _lock: FileLock,
}

impl Locked<'_> {
    /// See [`TokenStore::grant_for_server`].
    pub(crate) fn grant_for_server(&self, server: &url::Url) -> Result<Option<Grant>, AuthError> {
        self.store.grant_for_server(server)
    }

    /// See [`TokenStore::put_grant`].
    pub(crate) fn put_grant(&self, grant: &Grant) -> Result<(), AuthError> {
        let mut file = self.store.read()?;
        file.grants.retain(|_, g| g.resource != grant.resource);
        file.grants.insert(
            TokenStore::key(&grant.issuer, &grant.resource),
            grant.clone(),
        );
        self.store.write(&file)
    }

    /// See [`TokenStore::put_client`].
    pub(crate) fn put_client(
        &self,
        issuer: &str,
        redirect_uri: &str,
        client: &RegisteredClient,
    ) -> Result<(), AuthError> {
        let mut file = self.store.read()?;
        file.clients
            .insert(TokenStore::key(issuer, redirect_uri), client.clone());
        self.store.write(&file)
    }
}

impl TokenStore {
    /// A store in the file at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The default store: `$MCP_CONFIG_DIR/tokens.json`, else
    /// `$XDG_CONFIG_HOME/oxmcp/tokens.json`, else `~/.config/oxmcp/tokens.json`.
    pub fn default_location() -> Option<Self> {
        let dir = std::env::var_os("MCP_CONFIG_DIR")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("XDG_CONFIG_HOME")
                    .filter(|d| !d.is_empty())
                    .map(|d| PathBuf::from(d).join("oxmcp"))
            })
            .or_else(|| {
                std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config").join("oxmcp"))
            })?;
        Some(Self::new(dir.join("tokens.json")))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn key(issuer: &str, resource: &str) -> String {
        format!("{issuer} {resource}")
    }

    /// Holds the store, waiting (without blocking the runtime) for another writer.
    pub(crate) async fn hold(&self) -> Result<Locked<'_>, AuthError> {
        Ok(Locked {
            store: self,
            _lock: lockfile::lock(&self.path).await?,
        })
    }

    /// Holds the store, waiting (blocking the thread) for another writer.
    fn hold_blocking(&self) -> Result<Locked<'_>, AuthError> {
        Ok(Locked {
            store: self,
            _lock: lockfile::lock_blocking(&self.path)?,
        })
    }

    fn read(&self) -> Result<File, AuthError> {
        match lockfile::read(&self.path)? {
            Some(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| AuthError::Store(format!("{}: {e}", self.path.display()))),
            None => Ok(File::default()),
        }
    }

    /// Writes the file; only under the lock (see [`Locked`]).
    fn write(&self, file: &File) -> Result<(), AuthError> {
        let text = serde_json::to_vec_pretty(file)
            .map_err(|e| AuthError::Store(format!("encoding the store: {e}")))?;
        lockfile::replace(&self.path, &text)
    }

    /// The grant for `resource` (from whichever issuer issued it).
    ///
    /// # Errors
    /// An unreadable or malformed file.
    pub fn grant_for(&self, resource: &str) -> Result<Option<Grant>, AuthError> {
        Ok(self
            .read()?
            .grants
            .into_values()
            .find(|g| g.resource == resource))
    }

    /// The grant for the MCP server at `server`: one whose resource is that server (the
    /// same origin, the server's path at or below the resource's).
    ///
    /// # Errors
    /// An unreadable or malformed file.
    pub fn grant_for_server(&self, server: &url::Url) -> Result<Option<Grant>, AuthError> {
        Ok(self
            .read()?
            .grants
            .into_values()
            .find(|g| crate::metadata::resource_matches(&g.resource, server)))
    }

    /// Removes the grants for the MCP server at `server`; returns how many there were.
    ///
    /// # Errors
    /// The file cannot be read or written, or another writer held it for a minute.
    pub fn remove_server(&self, server: &url::Url) -> Result<usize, AuthError> {
        let _held = self.hold_blocking()?;
        let mut file = self.read()?;
        let before = file.grants.len();
        file.grants
            .retain(|_, g| !crate::metadata::resource_matches(&g.resource, server));
        let removed = before - file.grants.len();
        if removed > 0 {
            self.write(&file)?;
        }
        Ok(removed)
    }

    /// Keeps a grant (replacing any other grant for the same resource).
    ///
    /// # Errors
    /// The file cannot be read or written, or another writer held it for a minute.
    pub fn put_grant(&self, grant: &Grant) -> Result<(), AuthError> {
        self.hold_blocking()?.put_grant(grant)
    }

    /// Removes the grants for `resource`; returns how many there were.
    ///
    /// # Errors
    /// The file cannot be read or written, or another writer held it for a minute.
    pub fn remove(&self, resource: &str) -> Result<usize, AuthError> {
        let _held = self.hold_blocking()?;
        let mut file = self.read()?;
        let before = file.grants.len();
        file.grants.retain(|_, g| g.resource != resource);
        let removed = before - file.grants.len();
        if removed > 0 {
            self.write(&file)?;
        }
        Ok(removed)
    }

    /// A client registered at `issuer` for `redirect_uri`.
    ///
    /// # Errors
    /// An unreadable or malformed file.
    pub fn client(
        &self,
        issuer: &str,
        redirect_uri: &str,
    ) -> Result<Option<RegisteredClient>, AuthError> {
        Ok(self
            .read()?
            .clients
            .remove(&Self::key(issuer, redirect_uri)))
    }

    /// Keeps a client registered at `issuer`.
    ///
    /// # Errors
    /// The file cannot be read or written, or another writer held it for a minute.
    pub fn put_client(
        &self,
        issuer: &str,
        redirect_uri: &str,
        client: &RegisteredClient,
    ) -> Result<(), AuthError> {
        self.hold_blocking()?
            .put_client(issuer, redirect_uri, client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_are_kept_per_resource_with_mode_0600() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::new(dir.path().join("sub").join("tokens.json"));
        assert!(store.grant_for("https://a.example/mcp").unwrap().is_none());
        let g = Grant {
            issuer: "https://as.example".into(),
            resource: "https://a.example/mcp".into(),
            access_token: "secret-token".into(),
            token_endpoint: "https://as.example/token".into(),
            ..Grant::default()
        };
        store.put_grant(&g).unwrap();
        assert_eq!(
            store.grant_for("https://a.example/mcp").unwrap(),
            Some(g.clone())
        );
        assert!(store.grant_for("https://b.example/mcp").unwrap().is_none());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(store.path())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(!format!("{g:?}").contains("secret-token"), "never in Debug");
        assert_eq!(store.remove("https://a.example/mcp").unwrap(), 1);
        assert!(store.grant_for("https://a.example/mcp").unwrap().is_none());
    }
}
