//! `oxmcp login URL` (the browser flow, tokens kept in the token store), `oxmcp logout URL`, and
//! the stored tokens every client command uses for an HTTP server (refreshed as needed).

use std::sync::Arc;

use anyhow::{Context, bail};
use oxmcp_auth::client::{Flow, Loopback, OAuthClient, OAuthConfig, TokenStore, UserAgent};

/// The arguments of `oxmcp login`.
#[derive(Debug, clap::Args)]
pub(crate) struct LoginArgs {
    /// The MCP server's URL.
    pub(crate) url: String,
    /// Do not try to open a browser: print the URL to open.
    #[arg(long)]
    pub(crate) no_browser: bool,
    /// A client id registered beforehand with the authorization server.
    #[arg(long)]
    pub(crate) client_id: Option<String>,
    /// A file holding that client's secret.
    #[arg(long, value_name = "PATH", requires = "client_id")]
    pub(crate) client_secret_file: Option<std::path::PathBuf>,
    /// The HTTPS URL of this client's metadata document, used as its client id where the
    /// authorization server accepts them.
    #[arg(long, value_name = "URL")]
    pub(crate) client_metadata_url: Option<String>,
    /// A scope to ask for (repeatable; default: what the server asks for).
    #[arg(long = "scope")]
    pub(crate) scopes: Vec<String>,
    /// The loopback port the browser is sent back to (default: any free port).
    #[arg(long, default_value_t = 0)]
    pub(crate) port: u16,
    /// Allow metadata and endpoints on private and link-local addresses.
    #[arg(long)]
    pub(crate) allow_private_hosts: bool,
}

fn store() -> anyhow::Result<TokenStore> {
    TokenStore::default_location()
        .context("no config directory: set MCP_CONFIG_DIR, XDG_CONFIG_HOME or HOME")
}

fn check_url(url: &str) -> anyhow::Result<url::Url> {
    let u = url::Url::parse(url).with_context(|| format!("{url:?} is not a URL"))?;
    if !matches!(u.scheme(), "http" | "https") {
        bail!("{url:?} is not an http:// or https:// URL");
    }
    Ok(u)
}

/// `oxmcp login URL`.
pub(crate) async fn login(args: LoginArgs) -> anyhow::Result<()> {
    check_url(&args.url)?;
    let agent = Loopback::bind(args.port, !args.no_browser).await?;
    login_with(args, Arc::new(agent)).await
}

/// `oxmcp login`, with `agent` showing the authorization page to the user (the inspector
/// shows it on its own page).
pub(crate) async fn login_with(args: LoginArgs, agent: Arc<dyn UserAgent>) -> anyhow::Result<()> {
    check_url(&args.url)?;
    let store = store()?;
    let mut config = OAuthConfig::new(&args.url, Flow::AuthorizationCode(agent));
    config.client_id = args.client_id;
    config.client_secret = args
        .client_secret_file
        .map(|p| {
            std::fs::read_to_string(&p)
                .with_context(|| format!("cannot read {}", p.display()))
                .map(|s| s.trim().to_owned())
        })
        .transpose()?;
    config.client_metadata_url = args.client_metadata_url;
    config.client_name = "mcp (mcp-rs command line)".to_owned();
    config.scopes = (!args.scopes.is_empty()).then_some(args.scopes);
    config.allow_private_hosts = args.allow_private_hosts;
    config.store = Some(store.clone());
    config.max_authorizations = 1;
    let oauth = OAuthClient::new(config)?;
    let grant = oauth
        .authorize()
        .await
        .with_context(|| format!("cannot log in to {}", args.url))?;
    eprintln!(
        "oxmcp: logged in to {} (issuer {}{}); tokens kept in {}",
        grant.resource,
        grant.issuer,
        grant
            .scope
            .as_deref()
            .map(|s| format!(", scope {s:?}"))
            .unwrap_or_default(),
        store.path().display()
    );
    Ok(())
}

/// `oxmcp logout URL`.
pub(crate) fn logout(url: &str) -> anyhow::Result<()> {
    let u = check_url(url)?;
    let store = store()?;
    match store.remove_server(&u)? {
        0 => eprintln!("oxmcp: no stored tokens for {url}"),
        n => eprintln!("oxmcp: removed {n} stored token(s) for {url}"),
    }
    Ok(())
}

/// The authorizer of a client command for `url`: the stored grant (refreshed when it has
/// expired), and the advice to run `oxmcp login` when the server wants one there is not (there
/// is no browser flow in `oxmcp tools` and the like).
pub(crate) async fn stored_authorizer(
    url: &str,
) -> anyhow::Result<Option<Arc<dyn oxmcp_http::client::Authorizer>>> {
    let Some(store) = TokenStore::default_location() else {
        return Ok(None);
    };
    let advice = format!("the server needs authorization: run `oxmcp login {url}`");
    let oauth = OAuthClient::stored(url, store, advice).await?;
    Ok(Some(Arc::new(oauth)))
}
