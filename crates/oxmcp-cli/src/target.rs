//! What the client commands talk to: a URL (Streamable HTTP; WebSocket for `ws://` and
//! `wss://`; gRPC for `grpc://` and `grpcs://`) or a command (stdio), reached through
//! oxmcp-remote with the CLI's credentials and client side.

use anyhow::Context;
use oxmcp_client::{Client, ClientConfig, ClientHandlers};
pub(crate) use oxmcp_remote::Target;

/// A connected client; it owns what its transport opened.
pub(crate) struct Connection {
    pub(crate) client: Client,
}

impl Connection {
    /// Closes the client and its child process or its HTTP session (DELETE).
    pub(crate) async fn close(self) {
        self.client.close().await;
    }
}

/// Connects to a target as the client commands do: the headers, encoding and era of `auth`,
/// and the client side of its `--sampling-cmd`, `--root` and elicitation on the terminal.
pub(crate) async fn connect(
    target: &Target,
    auth: &crate::auth::Auth,
) -> anyhow::Result<Connection> {
    connect_as(target, auth, auth.side.handlers()?).await
}

/// [`connect`] with these handlers (the client side of `auth` plus what a command adds).
pub(crate) async fn connect_as(
    target: &Target,
    auth: &crate::auth::Auth,
    handlers: ClientHandlers,
) -> anyhow::Result<Connection> {
    connect_via(target, auth, handlers, |channels| channels).await
}

/// [`connect_as`], with the transport's channels passed through `wrap` before the client
/// reads them (the inspector records every message there).
pub(crate) async fn connect_via(
    target: &Target,
    auth: &crate::auth::Auth,
    handlers: ClientHandlers,
    wrap: impl FnOnce(oxmcp_transport::Channels) -> oxmcp_transport::Channels,
) -> anyhow::Result<Connection> {
    let mut http = oxmcp_http::HttpClientConfig::default()
        .headers(auth.headers()?)
        .encoding(auth.encoding.into());
    let config = ClientConfig::default()
        .era(auth.era)
        .child(oxmcp_client::ChildConfig::default().env(oxmcp_client::ChildEnv::inherit_all()));
    if let Target::Url(url) = target
        && target.scheme().is_some_and(|s| !s.is_stream())
    {
        // Stored tokens (`oxmcp login`), unless the command gave its own Authorization.
        let explicit = http
            .headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
        if !explicit && http.authorizer.is_none() {
            http.authorizer = crate::login::stored_authorizer(url).await?;
        }
    }
    let result = match target {
        // The transport's own error as it is: the handshake's gets the context below.
        Target::Url(url) => {
            let (channels, link) = oxmcp_remote::open(url, http).await?;
            Client::connect_over(wrap(channels), link, handlers, config).await
        }
        // Spawned as `Client::spawn` does, so its errors read the same.
        Target::Command(words) => match words.split_first() {
            Some((program, args)) => {
                match oxmcp_transport::ChildProcess::spawn(program, args, config.child.clone()) {
                    Ok((child, channels)) => {
                        Client::connect_over(wrap(channels), child, handlers, config).await
                    }
                    Err(e) => Err(e.into()),
                }
            }
            None => target.connect(http, handlers, config).await,
        },
    };
    let client = result.with_context(|| format!("cannot connect to `{}`", target.describe()))?;
    Ok(Connection { client })
}

/// True for the URLs of every client transport: http(s), ws(s), grpc(s).
pub(crate) fn is_url(url: &str) -> bool {
    oxmcp_remote::Scheme::of(url).is_some()
}
