//! The gateway's configuration: [`Config`] with its [`Upstream`]s, as read from TOML (the
//! keys of `mcp.toml`) or built in code, and the checks it must pass.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{Arc, Error, SEPARATOR};

/// The gateway's settings and its upstream servers.
///
/// Deserialized from the gateway's keys of `mcp.toml` (any other key is refused; a file that
/// also holds settings of its own, as `oxmcp serve`'s `[limits]` and `[auth]`, is read into a
/// struct of its own with this one `#[serde(flatten)]`ed in), or built in code from
/// [`Config::default`]. [`Config::check`] says whether it may be served.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Config {
    /// Interval of the heartbeat `ping` to each upstream, in milliseconds (default 5000); two
    /// missed in a row mark it down and start a reconnection (or restart).
    #[serde(default = "default_heartbeat_ms")]
    pub heartbeat_ms: u64,
    /// Resource subscriptions one client session may hold through the gateway (default 100);
    /// one more is refused (-32602). All clients' subscriptions to one upstream share one
    /// upstream session, so this keeps one client from taking all of it. The gateway's
    /// server is built with it (it replaces the `max_subscriptions` of the
    /// [`ServerConfig`](oxmcp_server::ServerConfig) given to
    /// [`GatewayBuilder::server_config`](crate::GatewayBuilder::server_config)).
    #[serde(default = "default_max_subscriptions")]
    pub max_subscriptions: usize,
    /// Distinct resources one principal may hold subscriptions to per upstream, over all its
    /// sessions (default 250, a quarter of the gateway's 1,000 per upstream); one more is
    /// refused (-32602). All unauthenticated clients count as one principal. So one principal
    /// that subscribes all it can leaves room for the others.
    #[serde(default = "default_max_subscriptions_per_principal")]
    pub max_subscriptions_per_principal: usize,
    /// Requests one principal may end before their upstream answered them (cancelled, or
    /// paused for a 2026-07-28 `input_required` round) per upstream within a minute, when
    /// they leave its connection in quarantine (default 30, at least 1); past that its
    /// requests to that upstream are refused (-32000 with `data.retryAfterMs`) until the
    /// oldest leaves the minute. All unauthenticated clients count as one principal.
    #[serde(default = "default_max_interrupted_per_principal")]
    pub max_interrupted_per_principal: usize,
    /// The upstream servers (`[[upstream]]` tables).
    #[serde(default)]
    pub upstream: Vec<Upstream>,
    /// A bridge ([`Config::bridge`]), described here: one upstream whose names and URIs are
    /// exposed as they are.
    #[serde(skip)]
    pub(crate) bridge: Option<String>,
}

impl Default for Config {
    /// No upstreams yet, every setting at its default.
    fn default() -> Self {
        Config {
            heartbeat_ms: default_heartbeat_ms(),
            max_subscriptions: default_max_subscriptions(),
            max_subscriptions_per_principal: default_max_subscriptions_per_principal(),
            max_interrupted_per_principal: default_max_interrupted_per_principal(),
            upstream: Vec::new(),
            bridge: None,
        }
    }
}

impl Config {
    /// Reads the gateway's keys from TOML text, and [checks](Config::check) them.
    ///
    /// # Errors
    /// [`Error::Toml`] for text that is not TOML or holds an unknown key or a bad value,
    /// [`Error::Config`] for a config that fails [`Config::check`].
    pub fn from_toml(text: &str) -> Result<Config, Error> {
        let config: Config = toml::from_str(text).map_err(|e| Error::Toml(e.to_string()))?;
        config.check()?;
        Ok(config)
    }

    /// The gateway of a bridge: `upstream` alone, its tool and prompt names and its URIs
    /// exposed unchanged (no `NAME__` prefix, no `gateway://`), described to clients (in the
    /// server's instructions) as `what`.
    pub fn bridge(upstream: Upstream, what: impl Into<String>) -> Config {
        Config {
            upstream: vec![upstream],
            bridge: Some(what.into()),
            ..Config::default()
        }
    }

    /// What a bridge is described as; `None` for a gateway.
    pub fn bridged(&self) -> Option<&str> {
        self.bridge.as_deref()
    }

    /// Adds an upstream server.
    #[must_use]
    pub fn with_upstream(mut self, upstream: Upstream) -> Config {
        self.upstream.push(upstream);
        self
    }
}

fn default_heartbeat_ms() -> u64 {
    5000
}

fn default_max_subscriptions() -> usize {
    100
}

fn default_max_subscriptions_per_principal() -> usize {
    250
}

fn default_max_interrupted_per_principal() -> usize {
    30
}

/// `max_connections` when the file does not say: one process for a stdio server (a second
/// copy would split whatever state it keeps), four sessions for a URL.
fn default_max_connections(stdio: bool) -> usize {
    if stdio { 1 } else { 4 }
}

/// Most connections `max_connections` may ask for.
const MAX_CONNECTIONS: usize = 64;

/// One upstream server.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Upstream {
    /// Prefix of its tools: letters, digits, `-` and `_`, without `__` and not ending with `_`.
    /// Then `NAME__TOOL` names one upstream whatever the tool names: the first `__` in it is
    /// where NAME ends (a `__` starting inside NAME would need `__` in it, or a final `_`), so
    /// `a` with tool `_c` and `a_` with tool `c` cannot both be `a___c`.
    pub name: String,
    /// A stdio server: program and arguments (fixed here; nothing else is ever spawned).
    #[serde(default)]
    pub command: Vec<String>,
    /// Environment variables of `command`, on top of the safe set it gets from the gateway's
    /// own environment (`PATH`, `HOME`, `USER`, `LOGNAME`, `SHELL`, `TERM`, `LANG`, `LC_*`,
    /// `TZ`, `TMPDIR`); nothing else of the gateway's environment reaches it.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// A server's URL: Streamable HTTP (or legacy HTTP+SSE) for `http(s)://`, WebSocket for
    /// `ws(s)://`, gRPC for `grpc(s)://`.
    pub url: Option<String>,
    /// Protocol era to speak with it: `auto` (default: 2026-07-28 if it can, else the
    /// handshake), `legacy` or `modern`.
    #[serde(default = "auto")]
    pub era: oxmcp_client::EraChoice,
    /// Extra HTTP headers for `url`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Most connections open to it at once (default 1 for a `command`: one process, requests
    /// one at a time; 4 for a `url`): each request served by it holds one alone while it
    /// runs, so what the upstream sends meanwhile is that request's; more requests wait for a
    /// free connection. The supervised one is used first; extra ones are opened when it is
    /// busy and closed after a minute unused. Raise it for a stdio server that keeps no state
    /// between requests (each extra connection is another process); set 1 for an HTTP server
    /// that allows one session.
    #[serde(default)]
    pub max_connections: Option<usize>,
    /// Only these tools (all when empty).
    #[serde(default)]
    pub allow_tools: Vec<String>,
    /// Never these tools.
    #[serde(default)]
    pub deny_tools: Vec<String>,
    /// The gateway's own credentials for `url` (`[upstream.auth]`). A client's token is never
    /// passed upstream: the gateway authenticates as itself.
    #[serde(default)]
    pub auth: Option<UpstreamAuth>,
    /// The authorizer built from `auth`, shared by every connection to this upstream.
    #[serde(skip)]
    pub(crate) authorizer: Arc<std::sync::OnceLock<Arc<dyn oxmcp_http::client::Authorizer>>>,
}

/// How the gateway authenticates to one upstream (a `url`): give exactly one way.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct UpstreamAuth {
    /// A file holding a static bearer token.
    pub bearer_file: Option<std::path::PathBuf>,
    /// OAuth client credentials: the client id (with `client_secret_file`).
    pub client_id: Option<String>,
    /// A file holding the client secret.
    pub client_secret_file: Option<std::path::PathBuf>,
    /// Scopes to ask for with client credentials.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Use (and refresh) the tokens `oxmcp login URL` stored for this upstream.
    #[serde(default)]
    pub login: bool,
}

impl Upstream {
    /// A stdio server named `name`: `command` is its program and arguments.
    pub fn command<S: Into<String>>(
        name: impl Into<String>,
        command: impl IntoIterator<Item = S>,
    ) -> Upstream {
        Upstream::new(
            name.into(),
            command.into_iter().map(Into::into).collect(),
            None,
        )
    }

    /// A server at `url` named `name` (see [`Upstream::url`](Upstream#structfield.url)).
    pub fn url(name: impl Into<String>, url: impl Into<String>) -> Upstream {
        Upstream::new(name.into(), Vec::new(), Some(url.into()))
    }

    /// Adds an environment variable of `command`.
    #[must_use]
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Upstream {
        self.env.insert(name.into(), value.into());
        self
    }

    fn new(name: String, command: Vec<String>, url: Option<String>) -> Upstream {
        Upstream {
            name,
            command,
            env: BTreeMap::new(),
            url,
            era: auto(),
            headers: BTreeMap::new(),
            max_connections: None,
            allow_tools: Vec::new(),
            deny_tools: Vec::new(),
            auth: None,
            authorizer: Arc::default(),
        }
    }

    /// The most connections open to it at once (see the field).
    pub(crate) fn max_connections(&self) -> usize {
        self.max_connections
            .unwrap_or_else(|| default_max_connections(self.url.is_none()))
    }

    pub(super) fn allows(&self, tool: &str) -> bool {
        (self.allow_tools.is_empty() || self.allow_tools.iter().any(|t| t == tool))
            && !self.deny_tools.iter().any(|t| t == tool)
    }
}

impl Config {
    /// Whether this config may be served: at least 1 for `max_interrupted_per_principal`,
    /// and each upstream well named (letters, digits, `-` and `_`, no `__`, no final `_`), named
    /// once, with exactly one of `command` and `url`, 1 to 64 `max_connections`, `env` only
    /// for a command, `auth` only for a URL and with exactly one way, and environment
    /// variable names that can be set.
    ///
    /// # Errors
    /// [`Error::Config`] saying what is wrong.
    pub fn check(&self) -> Result<(), Error> {
        if self.max_interrupted_per_principal == 0 {
            return Err(invalid(
                "max_interrupted_per_principal is at least 1".into(),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for u in &self.upstream {
            u.check()?;
            if !seen.insert(u.name.as_str()) {
                return Err(invalid(format!("upstream name {:?} is used twice", u.name)));
            }
        }
        Ok(())
    }
}

impl Upstream {
    /// See [`Config::check`].
    fn check(&self) -> Result<(), Error> {
        let name = &self.name;
        let ok_chars = name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if name.is_empty() || !ok_chars || name.contains(SEPARATOR) || name.ends_with('_') {
            return Err(invalid(format!(
                "upstream name {name:?}: use letters, digits, - and _ (not {SEPARATOR}, and not _ at \
                 the end: NAME{SEPARATOR}TOOL must say where NAME ends)"
            )));
        }
        match (self.command.is_empty(), &self.url) {
            (false, None) | (true, Some(_)) => {}
            _ => {
                return Err(invalid(format!(
                    "upstream {name:?}: give exactly one of `command` and `url`"
                )));
            }
        }
        if !(1..=MAX_CONNECTIONS).contains(&self.max_connections()) {
            return Err(invalid(format!(
                "upstream {name:?}: max_connections is 1 to {MAX_CONNECTIONS}"
            )));
        }
        if self.url.is_some() && !self.env.is_empty() {
            return Err(invalid(format!(
                "upstream {name:?}: `env` is for `command` upstreams (use `headers` for a URL)"
            )));
        }
        if let Some(a) = &self.auth {
            let ways = [a.bearer_file.is_some(), a.client_id.is_some(), a.login];
            if self.url.is_none() || ways.iter().filter(|w| **w).count() != 1 {
                return Err(invalid(format!(
                    "upstream {name:?}: [upstream.auth] is for a `url` upstream and takes exactly one \
                     of bearer_file, client_id (with client_secret_file) and login = true"
                )));
            }
            if a.client_id.is_some() != a.client_secret_file.is_some() {
                return Err(invalid(format!(
                    "upstream {name:?}: client_id needs client_secret_file"
                )));
            }
        }
        let bad_env = |k: &&String| k.is_empty() || k.contains(['=', '\0']);
        if let Some(k) = self.env.keys().find(bad_env) {
            return Err(invalid(format!(
                "upstream {name:?}: {k:?} is not an environment variable name"
            )));
        }
        Ok(())
    }
}

fn invalid(message: String) -> Error {
    Error::Config(message)
}

/// An upstream's era unless its config says otherwise: whichever it speaks.
fn auto() -> oxmcp_client::EraChoice {
    oxmcp_client::EraChoice::Auto
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_example_config_is_valid() {
        // The gateway's keys of `oxmcp serve`'s example file (its `[limits]` are the CLI's).
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../mcp.example.toml");
        let text = std::fs::read_to_string(path).expect("mcp.example.toml");
        let mut table: toml::Table = toml::from_str(&text).expect("TOML");
        table.remove("limits");
        let config = super::Config::from_toml(&table.to_string()).expect("mcp.example.toml loads");
        assert_eq!(config.upstream.len(), 2);
        assert_eq!(config.heartbeat_ms, 5000);
        assert_eq!(config.upstream[0].max_connections(), 1);
        assert_eq!(config.upstream[1].max_connections(), 4);
    }

    fn load_text(text: &str) -> Result<super::Config, super::Error> {
        super::Config::from_toml(text)
    }

    #[test]
    fn upstream_names_cannot_make_one_exposed_name_twice() {
        // `a` + `__` + `_c` and `a_` + `__` + `c` are both `a___c`.
        let pair = "[[upstream]]\nname = \"a\"\ncommand = [\"x\"]\n\
                    [[upstream]]\nname = \"a_\"\ncommand = [\"y\"]\n";
        let err = load_text(pair).expect_err("a and a_ are ambiguous");
        assert!(err.to_string().contains("\"a_\""), "{err}");
        // Alone, a name ending with `_` is refused as well (it could meet `a` later).
        for bad in ["a_", "_", "a__b", "a-_"] {
            let text = format!("[[upstream]]\nname = \"{bad}\"\ncommand = [\"x\"]\n");
            assert!(load_text(&text).is_err(), "{bad:?} is refused");
        }
        for good in ["a", "_a", "a_b", "a-b", "A1", "a_b-c_d"] {
            let text = format!("[[upstream]]\nname = \"{good}\"\ncommand = [\"x\"]\n");
            assert!(load_text(&text).is_ok(), "{good:?} is accepted");
        }
    }

    #[test]
    fn a_config_built_in_code_is_checked_the_same() {
        let ok = super::Config::default()
            .with_upstream(super::Upstream::command("local", ["server", "--stdio"]))
            .with_upstream(super::Upstream::url("remote", "http://127.0.0.1:1/mcp"));
        assert!(ok.check().is_ok());
        let twice = ok.with_upstream(super::Upstream::url("local", "http://h/mcp"));
        assert!(twice.check().is_err());
        let env_on_url = super::Config::default()
            .with_upstream(super::Upstream::url("r", "http://h/mcp").with_env("A", "1"));
        assert!(env_on_url.check().is_err());
    }
}
