//! What the bench drives: a URL (Streamable HTTP; WebSocket for `ws://` and `wss://`; gRPC
//! for `grpc://` and `grpcs://`) or a command (stdio), and the SDK client's connection to it,
//! reached through oxmcp-remote.

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

/// Connects to a target with these HTTP client settings and no client capabilities. No
/// credentials: the bench sends no `Authorization` (nor reads the tokens `oxmcp login`
/// stores).
pub(crate) async fn connect_with(
    target: &Target,
    http_config: oxmcp_http::HttpClientConfig,
    era: oxmcp_client::EraChoice,
) -> anyhow::Result<Connection> {
    let config = ClientConfig::default()
        .era(era)
        .child(oxmcp_client::ChildConfig::default().env(oxmcp_client::ChildEnv::inherit_all()));
    let handlers = ClientHandlers::new();
    let result = match target {
        // The transport's own error as it is: the handshake's gets the context below.
        Target::Url(url) => {
            let (channels, link) = oxmcp_remote::open(url, http_config).await?;
            Client::connect_over(channels, link, handlers, config).await
        }
        Target::Command(_) => target.connect(http_config, handlers, config).await,
    };
    result
        .map(|client| Connection { client })
        .with_context(|| format!("cannot connect to `{}`", target.describe()))
}

/// True for the URLs of the one-connection transports: WebSocket and gRPC.
pub(crate) fn is_stream_url(url: &str) -> bool {
    oxmcp_remote::Scheme::of(url).is_some_and(oxmcp_remote::Scheme::is_stream)
}
