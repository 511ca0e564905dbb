//! The gateway's [`Error`]: a config that cannot be served, a server that cannot be built, or
//! a reload that was refused.

/// Why a gateway could not be read or started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// TOML text that is not a gateway config: not TOML, an unknown key or a bad value (the
    /// parser's message, with the line and column).
    #[error("{0}")]
    Toml(String),
    /// A config that fails [`Config::check`](crate::Config::check).
    #[error("{0}")]
    Config(String),
    /// A [reload](crate::Gateway::reload) was refused, and nothing was changed: the gateway
    /// serves on with the upstreams it had (an upstream it would start did not connect, say).
    #[error("{0}")]
    Reload(String),
    /// The gateway's server could not be built.
    #[error(transparent)]
    Server(#[from] oxmcp_server::BuildError),
}
