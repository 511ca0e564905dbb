//! A server to talk to: a URL or a command, as the `oxmcp` command, the gateway and the load
//! generator take one.

use oxmcp_client::{Client, ClientConfig, ClientHandlers, ConnectError};
use oxmcp_http::HttpClientConfig;

use crate::Scheme;

/// A server to talk to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A URL of one of the transports of [`Scheme`].
    Url(String),
    /// A command (program and arguments) spawned as a stdio child.
    Command(Vec<String>),
}

/// Why a URL and a command do not make a [`Target`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TargetError {
    /// Both were given.
    #[error("give either a URL or a command after --, not both")]
    Both,
    /// Neither was given.
    #[error("no server given: pass a URL, or a command after --")]
    Neither,
    /// The URL's scheme is none of ours.
    #[error(
        "{0:?} is not an http(s)://, ws(s):// or grpc(s):// URL (put a server command after --)"
    )]
    NotAUrl(String),
}

impl Target {
    /// From an optional URL and a command line (empty for none): exactly one of them.
    ///
    /// # Errors
    /// [`TargetError`] for both, neither, or a URL of no transport of ours.
    pub fn from_parts(url: Option<String>, command: Vec<String>) -> Result<Target, TargetError> {
        match (url, command.is_empty()) {
            (Some(_), false) => Err(TargetError::Both),
            (Some(u), true) if Scheme::of(&u).is_some() => Ok(Target::Url(u)),
            (Some(u), true) => Err(TargetError::NotAUrl(u)),
            (None, false) => Ok(Target::Command(command)),
            (None, true) => Err(TargetError::Neither),
        }
    }

    /// The URL, or the command line.
    pub fn describe(&self) -> String {
        match self {
            Target::Url(u) => u.clone(),
            Target::Command(c) => c.join(" "),
        }
    }

    /// The transport of a URL target (`None` for a command).
    pub fn scheme(&self) -> Option<Scheme> {
        match self {
            Target::Url(u) => Scheme::of(u),
            Target::Command(_) => None,
        }
    }

    /// Connects a client and runs the handshake: a URL's transport opened with `http` (see
    /// [`crate::open`]), a command spawned with the child settings of `config`.
    ///
    /// # Errors
    /// [`ConnectError::Transport`] when the transport cannot be opened or the command not
    /// spawned; the other variants when the handshake fails.
    pub async fn connect(
        &self,
        http: HttpClientConfig,
        handlers: ClientHandlers,
        config: ClientConfig,
    ) -> Result<Client, ConnectError> {
        match self {
            Target::Url(url) => {
                let (channels, link) = crate::open(url, http)
                    .await
                    .map_err(crate::OpenError::into_connect_error)?;
                Client::connect_over(channels, link, handlers, config).await
            }
            Target::Command(words) => {
                let Some((program, args)) = words.split_first() else {
                    return Err(ConnectError::Transport(
                        "no server command given (put it after --)".into(),
                    ));
                };
                Client::spawn(program, args, handlers, config).await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Target, TargetError};
    use crate::Scheme;

    #[test]
    fn a_url_or_a_command_exactly() {
        let words = |w: &[&str]| w.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        for (url, scheme) in [
            ("http://h/mcp", Scheme::Http),
            ("https://h/mcp", Scheme::Http),
            ("ws://h/mcp", Scheme::WebSocket),
            ("wss://h/mcp", Scheme::WebSocket),
            ("grpc://h:1", Scheme::Grpc),
            ("grpcs://h:1", Scheme::Grpc),
        ] {
            let t = Target::from_parts(Some(url.into()), vec![]).unwrap();
            assert_eq!(t.scheme(), Some(scheme));
            assert_eq!(t.describe(), url);
        }
        let t = Target::from_parts(None, words(&["srv", "--stdio"])).unwrap();
        assert_eq!((t.scheme(), t.describe()), (None, "srv --stdio".into()));
        assert_eq!(
            Target::from_parts(Some("ftp://h".into()), vec![]),
            Err(TargetError::NotAUrl("ftp://h".into()))
        );
        assert_eq!(
            Target::from_parts(Some("http://h".into()), words(&["srv"])),
            Err(TargetError::Both)
        );
        assert_eq!(Target::from_parts(None, vec![]), Err(TargetError::Neither));
    }

    #[tokio::test]
    async fn an_authorizer_needs_http_and_other_schemes_are_refused() {
        use std::future::Future;
        use std::pin::Pin;

        #[derive(Debug)]
        struct Never;
        impl oxmcp_http::client::Authorizer for Never {
            fn authorization(&self) -> Option<String> {
                None
            }
            fn challenged<'a>(
                &'a self,
                _: &'a oxmcp_http::client::Challenge,
            ) -> Pin<Box<dyn Future<Output = Result<bool, String>> + Send + 'a>> {
                Box::pin(async { Ok(false) })
            }
        }
        let with = || {
            oxmcp_http::HttpClientConfig::default()
                .authorizer(Some(std::sync::Arc::new(Never)
                    as std::sync::Arc<dyn oxmcp_http::client::Authorizer>))
        };
        for url in ["ws://127.0.0.1:9/mcp", "grpc://127.0.0.1:9"] {
            let e = crate::open(url, with()).await.err().unwrap();
            assert!(matches!(e, crate::OpenError::AuthorizerNeedsHttp(_)), "{e}");
        }
        let e = crate::open("ftp://h", with()).await.err().unwrap();
        assert_eq!(
            e.to_string(),
            "\"ftp://h\" is not an http(s)://, ws(s):// or grpc(s):// URL"
        );
    }
}
