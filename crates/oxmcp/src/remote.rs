//! Clients of remote servers by URL, on the transport the scheme names, once or supervised
//! (reconnected when the connection dies).
//!
//! | scheme | transport |
//! |---|---|
//! | `http://`, `https://` | Streamable HTTP (falls back to HTTP+SSE by itself) |
//! | `ws://`, `wss://` | WebSocket, subprotocol `mcp` |
//! | `grpc://`, `grpcs://` | gRPC (`mcp.v1.Mcp/Connect`) |

use std::sync::Arc;

use oxmcp_client::{
    Client, ClientConfig, ClientHandlers, ConnectError, Connector, Supervised, SupervisorConfig,
};

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

/// Connects a client to `url` (see the module docs for the schemes) and runs the handshake.
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
    let failed = |e: &dyn std::fmt::Display| ConnectError::Transport(e.to_string());
    if url.starts_with("ws://") || url.starts_with("wss://") {
        let config = oxmcp_ws::client::WsClientConfig::default().headers(headers);
        let (channels, link) = oxmcp_ws::client::connect(url, config)
            .await
            .map_err(|e| failed(&e))?;
        return Client::connect_over(channels, link, handlers, client).await;
    }
    if url.starts_with("grpc://") || url.starts_with("grpcs://") {
        let config = oxmcp_grpc::client::GrpcClientConfig::default().headers(headers);
        let (channels, link) = oxmcp_grpc::client::connect(url, config)
            .await
            .map_err(|e| failed(&e))?;
        return Client::connect_over(channels, link, handlers, client).await;
    }
    if url.starts_with("http://") || url.starts_with("https://") {
        let config = oxmcp_http::HttpClientConfig::default().headers(headers);
        let (channels, session) = oxmcp_http::client::connect(url, config)
            .map_err(|e| failed(&e))?
            .into_parts();
        return Client::connect_over(channels, session, handlers, client).await;
    }
    Err(ConnectError::Transport(format!(
        "{url:?} is not an http(s)://, ws(s):// or grpc(s):// URL"
    )))
}

/// A client of `url` that stays connected: when the connection dies (the socket closes, the
/// server stops answering pings), requests in flight fail with
/// [`oxmcp_engine::CallError::Closed`], and a new connection is made after `supervisor.backoff`
/// (exponential, full jitter) and initialized again: a legacy session starts over with a new
/// handshake. Get the live client with [`Supervised::client`], or call through
/// [`Supervised::call`].
pub fn supervise(url: &str, remote: Remote, supervisor: SupervisorConfig) -> Supervised {
    let url = url.to_owned();
    let connector: Connector = Arc::new(move || {
        let url = url.clone();
        let remote = remote.clone();
        Box::pin(async move { connect(&url, remote).await })
    });
    Supervised::start(connector, supervisor)
}
