//! Clients of remote servers by URL, once or supervised (reconnected when the connection
//! dies).

use std::sync::Arc;

use oxmcp_client::{
    Client, ClientConfig, ClientHandlers, ConnectError, Connector, Supervised, SupervisorConfig,
};
use oxmcp_http::HttpClientConfig;

/// How to reach a remote server besides its URL.
#[derive(Clone, Default, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "", generate_private = false)]
pub struct Remote {
    /// Request headers (HTTP and the WebSocket upgrade) or call metadata (gRPC), such as
    /// `Authorization`.
    pub headers: Vec<(String, String)>,
    /// The client's handlers (sampling, elicitation, roots, events).
    pub handlers: ClientHandlers,
    /// The client's settings.
    pub client: ClientConfig,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("headers", &self.headers.len())
            .finish_non_exhaustive()
    }
}

/// Connects a client to `url` (see [`crate::Scheme`]) and runs the handshake.
///
/// # Errors
/// [`ConnectError::Transport`] when the transport cannot connect; the other variants when
/// the handshake fails.
pub async fn connect(url: &str, remote: Remote) -> Result<Client, ConnectError> {
    let Remote {
        headers,
        handlers,
        client,
    } = remote;
    let http = HttpClientConfig::default().headers(headers);
    let (channels, link) = crate::open(url, http)
        .await
        .map_err(crate::OpenError::into_connect_error)?;
    Client::connect_over(channels, link, handlers, client).await
}

/// A client of `url` that stays connected: when the connection dies (the socket closes, the
/// server stops answering pings), requests in flight fail with a closed-connection error,
/// and a new connection is made after `supervisor.backoff` (exponential, full jitter) and
/// initialized again: a legacy session starts over with a new handshake. Get the live
/// client with [`Supervised::client`], or call through [`Supervised::call`].
pub fn supervise(url: &str, remote: Remote, supervisor: SupervisorConfig) -> Supervised {
    let url = url.to_owned();
    let connector: Connector = Arc::new(move || {
        let url = url.clone();
        let remote = remote.clone();
        Box::pin(async move { connect(&url, remote).await })
    });
    Supervised::start(connector, supervisor)
}
