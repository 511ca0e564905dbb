//! What the client commands talk to: a URL (Streamable HTTP; WebSocket for `ws://` and
//! `wss://`; gRPC for `grpc://` and `grpcs://`) or a command (stdio).

use anyhow::{Context, bail};
use oxmcp_client::{Client, ClientConfig, ClientHandlers};

/// A server to talk to.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// Streamable HTTP endpoint.
    Url(String),
    /// A command spawned as a stdio child. It gets our whole environment, as if the user had
    /// run it from the same shell (the gateway, which runs commands for others, does not).
    Command(Vec<String>),
}

impl Target {
    /// From an optional URL and the words after `--`.
    pub(crate) fn from_parts(url: Option<String>, command: Vec<String>) -> anyhow::Result<Target> {
        match (url, command.is_empty()) {
            (Some(_), false) => bail!("give either a URL or a command after --, not both"),
            (Some(u), true)
                if u.starts_with("http://") || u.starts_with("https://") || is_stream_url(&u) =>
            {
                Ok(Target::Url(u))
            }
            (Some(u), true) => bail!(
                "{u:?} is not an http(s)://, ws(s):// or grpc(s):// URL (put a server command after --)"
            ),
            (None, false) => Ok(Target::Command(command)),
            (None, true) => bail!("no server given: pass a URL, or a command after --"),
        }
    }

    /// The URL, or the command line.
    pub(crate) fn describe(&self) -> String {
        match self {
            Target::Url(u) => u.clone(),
            Target::Command(c) => c.join(" "),
        }
    }
}

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
    let http = oxmcp_http::HttpClientConfig::default()
        .headers(auth.headers()?)
        .encoding(auth.encoding.into());
    connect_handled(target, http, auth.era, handlers).await
}

/// Connects to a target with explicit HTTP client settings and these handlers.
async fn connect_handled(
    target: &Target,
    http_config: oxmcp_http::HttpClientConfig,
    era: oxmcp_client::EraChoice,
    handlers: ClientHandlers,
) -> anyhow::Result<Connection> {
    let config = ClientConfig::default()
        .era(era)
        .child(oxmcp_client::ChildConfig::default().env(oxmcp_client::ChildEnv::inherit_all()));
    let result = match target {
        Target::Url(url) if is_stream_url(url) => {
            let (channels, link) =
                open_stream(url, http_config.headers.clone(), http_config.encoding).await?;
            Client::connect_over(channels, link, handlers, config)
                .await
                .map(|client| Connection { client })
        }
        Target::Url(url) => {
            let mut http_config = http_config;
            // Stored tokens (`oxmcp login`), unless the command gave its own Authorization.
            let explicit = http_config
                .headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
            if !explicit && http_config.authorizer.is_none() {
                http_config.authorizer = crate::login::stored_authorizer(url).await?;
            }
            let (channels, session) = oxmcp_http::client::connect(url, http_config)?.into_parts();
            Client::connect_over(channels, session, handlers, config)
                .await
                .map(|client| Connection { client })
        }
        Target::Command(words) => {
            let Some((program, args)) = words.split_first() else {
                bail!("no server command given (put it after --)");
            };
            Client::spawn(program, args, handlers, config)
                .await
                .map(|client| Connection { client })
        }
    };
    result.with_context(|| format!("cannot connect to `{}`", target.describe()))
}

/// True for the URLs of every client transport: http(s), ws(s), grpc(s).
pub(crate) fn is_url(url: &str) -> bool {
    url.starts_with("http://") || url.starts_with("https://") || is_stream_url(url)
}

/// True for the URLs of the one-connection transports: WebSocket and gRPC.
pub(crate) fn is_stream_url(url: &str) -> bool {
    ["ws://", "wss://", "grpc://", "grpcs://"]
        .iter()
        .any(|s| url.starts_with(s))
}

/// Opens a WebSocket or gRPC connection (see [`is_stream_url`]) with these request headers
/// (call metadata for gRPC). `encoding` picks the gRPC envelopes' form; WebSocket frames are
/// always JSON text.
pub(crate) async fn open_stream(
    url: &str,
    headers: Vec<(String, String)>,
    encoding: oxmcp_http::BodyEncoding,
) -> anyhow::Result<(oxmcp_transport::Channels, Box<dyn oxmcp_transport::Link>)> {
    if url.starts_with("grpc://") || url.starts_with("grpcs://") {
        let form = match encoding {
            oxmcp_http::BodyEncoding::Json => oxmcp_grpc::Form::Json,
            oxmcp_http::BodyEncoding::Protobuf => oxmcp_grpc::Form::Protobuf,
        };
        let config = oxmcp_grpc::client::GrpcClientConfig::default()
            .headers(headers)
            .form(form);
        let (channels, link) = oxmcp_grpc::client::connect(url, config).await?;
        return Ok((channels, Box::new(link)));
    }
    let config = oxmcp_ws::client::WsClientConfig::default().headers(headers);
    let (channels, link) = oxmcp_ws::client::connect(url, config).await?;
    Ok((channels, Box::new(link)))
}
