//! The transport a URL's scheme names, opened: Streamable HTTP, WebSocket or gRPC.

use oxmcp_http::HttpClientConfig;
use oxmcp_transport::{Channels, Link};

/// The transport a URL names by its scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Scheme {
    /// `http://` or `https://`: Streamable HTTP (or the legacy HTTP+SSE transport).
    Http,
    /// `ws://` or `wss://`: WebSocket.
    WebSocket,
    /// `grpc://` or `grpcs://`: gRPC.
    Grpc,
}

impl Scheme {
    /// The transport `url` names, or `None` if its scheme is none of ours.
    pub fn of(url: &str) -> Option<Scheme> {
        let scheme = |prefixes: [&str; 2]| prefixes.iter().any(|p| url.starts_with(p));
        if scheme(["http://", "https://"]) {
            Some(Scheme::Http)
        } else if scheme(["ws://", "wss://"]) {
            Some(Scheme::WebSocket)
        } else if scheme(["grpc://", "grpcs://"]) {
            Some(Scheme::Grpc)
        } else {
            None
        }
    }

    /// True for the transports of one long-lived connection (WebSocket and gRPC), where a
    /// client's messages and the server's share one stream.
    pub fn is_stream(self) -> bool {
        matches!(self, Scheme::WebSocket | Scheme::Grpc)
    }
}

/// Why a transport could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The URL's scheme is none of ours.
    #[error("{0:?} is not an http(s)://, ws(s):// or grpc(s):// URL")]
    NotAUrl(String),
    /// An authorizer was given for a WebSocket or gRPC URL; those take a static
    /// `Authorization` header only.
    #[error(
        "{0}: an authorizer (OAuth) needs an http(s):// URL; over WebSocket and gRPC send an Authorization header"
    )]
    AuthorizerNeedsHttp(String),
    /// The Streamable HTTP client could not be made.
    #[error(transparent)]
    Http(#[from] oxmcp_http::client::HttpClientError),
    /// The WebSocket connection failed.
    #[cfg(feature = "ws")]
    #[error(transparent)]
    WebSocket(#[from] oxmcp_ws::client::WsClientError),
    /// The gRPC connection failed.
    #[cfg(feature = "grpc")]
    #[error(transparent)]
    Grpc(#[from] oxmcp_grpc::client::GrpcClientError),
    /// The URL names a transport this build leaves out (feature `ws` or `grpc`).
    #[error("{0:?} needs the `{1}` feature of oxmcp-remote")]
    NotBuiltIn(String, &'static str),
}

/// Opens the transport `url` names (see [`Scheme`]) with the settings of `http`: all of them
/// over Streamable HTTP; its request headers (call metadata for gRPC) over WebSocket and
/// gRPC, and its body encoding as the form of gRPC envelopes (WebSocket frames are JSON
/// text). An HTTP client owns its session: closing its link sends the DELETE.
///
/// # Errors
/// [`OpenError`]: a URL of no transport of ours, an authorizer for a WebSocket or gRPC URL,
/// or the transport's own failure to connect.
pub async fn open(
    url: &str,
    http: HttpClientConfig,
) -> Result<(Channels, Box<dyn Link>), OpenError> {
    let scheme = Scheme::of(url).ok_or_else(|| OpenError::NotAUrl(url.to_owned()))?;
    if scheme.is_stream() && http.authorizer.is_some() {
        return Err(OpenError::AuthorizerNeedsHttp(url.to_owned()));
    }
    match scheme {
        Scheme::Http => {
            let (channels, handle) = oxmcp_http::client::connect(url, http)?.into_parts();
            Ok((channels, Box::new(handle)))
        }
        Scheme::WebSocket => open_ws(url, http).await,
        Scheme::Grpc => open_grpc(url, http).await,
    }
}

#[cfg(feature = "ws")]
async fn open_ws(
    url: &str,
    http: HttpClientConfig,
) -> Result<(Channels, Box<dyn Link>), OpenError> {
    let config = oxmcp_ws::client::WsClientConfig::default().headers(http.headers);
    let (channels, link) = oxmcp_ws::client::connect(url, config).await?;
    Ok((channels, Box::new(link)))
}

#[cfg(not(feature = "ws"))]
async fn open_ws(url: &str, _: HttpClientConfig) -> Result<(Channels, Box<dyn Link>), OpenError> {
    Err(OpenError::NotBuiltIn(url.to_owned(), "ws"))
}

#[cfg(feature = "grpc")]
async fn open_grpc(
    url: &str,
    http: HttpClientConfig,
) -> Result<(Channels, Box<dyn Link>), OpenError> {
    use oxmcp_grpc::Form;
    let form = match http.encoding {
        oxmcp_http::BodyEncoding::Json => Form::Json,
        oxmcp_http::BodyEncoding::Protobuf => Form::Protobuf,
    };
    let config = oxmcp_grpc::client::GrpcClientConfig::default()
        .headers(http.headers)
        .form(form);
    let (channels, link) = oxmcp_grpc::client::connect(url, config).await?;
    Ok((channels, Box::new(link)))
}

#[cfg(not(feature = "grpc"))]
async fn open_grpc(url: &str, _: HttpClientConfig) -> Result<(Channels, Box<dyn Link>), OpenError> {
    Err(OpenError::NotBuiltIn(url.to_owned(), "grpc"))
}

impl OpenError {
    /// As the client's transport error: the message and its sources, `: ` between them.
    pub(crate) fn into_connect_error(self) -> oxmcp_client::ConnectError {
        let mut text = self.to_string();
        let mut source = std::error::Error::source(&self);
        while let Some(s) = source {
            text.push_str(": ");
            text.push_str(&s.to_string());
            source = s.source();
        }
        oxmcp_client::ConnectError::Transport(text)
    }
}
