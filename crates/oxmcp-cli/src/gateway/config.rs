//! The configuration file of the gateway (`mcp.toml`).

use std::collections::BTreeMap;

use anyhow::{Context, bail};
use serde::Deserialize;

use super::*;

/// The configuration file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Config {
    /// Interval of the heartbeat `ping` to each upstream, in milliseconds (default 5000); two
    /// missed in a row mark it down and start a reconnection (or restart).
    #[serde(default = "default_heartbeat_ms")]
    pub(crate) heartbeat_ms: u64,
    /// Resource subscriptions one client session may hold through the gateway (default 100);
    /// one more is refused (-32602). All clients' subscriptions to one upstream share one
    /// upstream session, so this keeps one client from taking all of it.
    #[serde(default = "default_max_subscriptions")]
    pub(crate) max_subscriptions: usize,
    /// Distinct resources one principal may hold subscriptions to per upstream, over all its
    /// sessions (default 250, a quarter of the gateway's 1,000 per upstream); one more is
    /// refused (-32602). All unauthenticated clients count as one principal. So one principal
    /// that subscribes all it can leaves room for the others.
    #[serde(default = "default_max_subscriptions_per_principal")]
    pub(crate) max_subscriptions_per_principal: usize,
    /// Requests one principal may end before their upstream answered them (cancelled, or
    /// paused for a 2026-07-28 `input_required` round) per upstream within a minute, when
    /// they leave its connection in quarantine (default 30, at least 1); past that its
    /// requests to that upstream are refused (-32000 with `data.retryAfterMs`) until the
    /// oldest leaves the minute. All unauthenticated clients count as one principal.
    #[serde(default = "default_max_interrupted_per_principal")]
    pub(crate) max_interrupted_per_principal: usize,
    /// The upstream servers (`[[upstream]]` tables).
    #[serde(default)]
    pub(crate) upstream: Vec<Upstream>,
    /// The limits of `oxmcp serve` (`[limits]`; flags override them).
    #[serde(default)]
    pub(crate) limits: crate::limits::Limits,
    /// How clients of the gateway authenticate (`[auth]`; the `--auth-*` flags override it).
    #[serde(default)]
    pub(crate) auth: Option<crate::protect::AuthFile>,
    /// Sessions shared with other instances through this Redis URL (`--store` overrides it).
    #[serde(default)]
    pub(crate) store: Option<String>,
    /// This instance's name in the store (`--instance-id` overrides it).
    #[serde(default)]
    pub(crate) instance_id: Option<String>,
    /// A bridge (`oxmcp serve -- CMD`, `oxmcp serve --upstream URL`), described here: one
    /// upstream, built in code, whose names and URIs are exposed as they are.
    #[serde(skip)]
    pub(crate) bridge: Option<String>,
}

/// The gateway of a bridge: `upstream` alone, its names unchanged.
pub(crate) fn bridge(upstream: Upstream, what: String) -> Config {
    Config {
        heartbeat_ms: default_heartbeat_ms(),
        max_subscriptions: default_max_subscriptions(),
        max_subscriptions_per_principal: default_max_subscriptions_per_principal(),
        max_interrupted_per_principal: default_max_interrupted_per_principal(),
        upstream: vec![upstream],
        limits: crate::limits::Limits::default(),
        auth: None,
        store: None,
        instance_id: None,
        bridge: Some(what),
    }
}

/// How a bridged command is named to clients (the bridge's `instructions`) and in the log:
/// its program's file name only. Its arguments, where people put API keys, are never shown.
pub(crate) fn describe_command(command: &[String]) -> String {
    let program = command.first().map_or("", String::as_str);
    let name = std::path::Path::new(program)
        .file_name()
        .map_or_else(|| program.into(), |n| n.to_string_lossy());
    format!("`{name}`")
}

/// How a bridged URL is named to clients (the bridge's `instructions`) and in the log: its
/// scheme, host and port only. User, password, path, query and fragment are never shown:
/// tokens go in all of them (`https://host/s/SECRET/mcp`).
pub(crate) fn describe_url(url: &str) -> String {
    let Ok(u) = url::Url::parse(url) else {
        return "a remote server".to_owned();
    };
    let Some(host) = u.host_str() else {
        return format!("a {} server", u.scheme());
    };
    match u.port() {
        Some(port) => format!("{}://{host}:{port}", u.scheme()),
        None => format!("{}://{host}", u.scheme()),
    }
}

pub(super) fn default_heartbeat_ms() -> u64 {
    5000
}

pub(super) fn default_max_subscriptions() -> usize {
    100
}

pub(super) fn default_max_subscriptions_per_principal() -> usize {
    250
}

pub(super) fn default_max_interrupted_per_principal() -> usize {
    30
}

/// `max_connections` when the file does not say: one process for a stdio server (a second
/// copy would split whatever state it keeps), four sessions for a URL.
pub(super) fn default_max_connections(stdio: bool) -> usize {
    if stdio { 1 } else { 4 }
}

/// Most connections `max_connections` may ask for.
const MAX_CONNECTIONS: usize = 64;

/// One upstream server.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Upstream {
    /// Prefix of its tools: letters, digits, `-` and `_`, without `__` and not ending with `_`.
    /// Then `NAME__TOOL` names one upstream whatever the tool names: the first `__` in it is
    /// where NAME ends (a `__` starting inside NAME would need `__` in it, or a final `_`), so
    /// `a` with tool `_c` and `a_` with tool `c` cannot both be `a___c`.
    pub(crate) name: String,
    /// A stdio server: program and arguments (fixed here; nothing else is ever spawned).
    #[serde(default)]
    pub(crate) command: Vec<String>,
    /// Environment variables of `command`, on top of the safe set it gets from the gateway's
    /// own environment (`PATH`, `HOME`, `USER`, `LOGNAME`, `SHELL`, `TERM`, `LANG`, `LC_*`,
    /// `TZ`, `TMPDIR`); nothing else of the gateway's environment reaches it.
    #[serde(default)]
    pub(crate) env: BTreeMap<String, String>,
    /// A Streamable HTTP (or legacy HTTP+SSE) server.
    pub(crate) url: Option<String>,
    /// Protocol era to speak with it: `auto` (default: 2026-07-28 if it can, else the
    /// handshake), `legacy` or `modern`.
    #[serde(default = "auto")]
    pub(crate) era: oxmcp_client::EraChoice,
    /// Extra HTTP headers for `url`.
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
    /// Most connections open to it at once (default 1 for a `command`: one process, requests
    /// one at a time; 4 for a `url`): each request served by it holds one alone while it
    /// runs, so what the upstream sends meanwhile is that request's; more requests wait for a
    /// free connection. The supervised one is used first; extra ones are opened when it is
    /// busy and closed after a minute unused. Raise it for a stdio server that keeps no state
    /// between requests (each extra connection is another process); set 1 for an HTTP server
    /// that allows one session.
    #[serde(default)]
    max_connections: Option<usize>,
    /// Only these tools (all when empty).
    #[serde(default)]
    pub(crate) allow_tools: Vec<String>,
    /// Never these tools.
    #[serde(default)]
    pub(crate) deny_tools: Vec<String>,
    /// The gateway's own credentials for `url` (`[upstream.auth]`). A client's token is never
    /// passed upstream: the gateway authenticates as itself.
    #[serde(default)]
    pub(crate) auth: Option<UpstreamAuth>,
    /// The authorizer built from `auth`, shared by every connection to this upstream.
    #[serde(skip)]
    pub(crate) authorizer: Arc<std::sync::OnceLock<Arc<dyn oxmcp_http::client::Authorizer>>>,
}

/// How the gateway authenticates to one upstream: give exactly one way.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct UpstreamAuth {
    /// A file holding a static bearer token.
    pub(crate) bearer_file: Option<std::path::PathBuf>,
    /// OAuth client credentials: the client id (with `client_secret_file`).
    pub(crate) client_id: Option<String>,
    /// A file holding the client secret.
    pub(crate) client_secret_file: Option<std::path::PathBuf>,
    /// Scopes to ask for with client credentials.
    #[serde(default)]
    pub(crate) scopes: Vec<String>,
    /// Use (and refresh) the tokens `oxmcp login URL` stored for this upstream.
    #[serde(default)]
    pub(crate) login: bool,
}

impl Upstream {
    /// The upstream of a bridge: a command (with these environment variables) or a URL.
    pub(crate) fn bridged(
        command: Vec<String>,
        env: BTreeMap<String, String>,
        url: Option<String>,
    ) -> Upstream {
        Upstream {
            name: "upstream".into(),
            command,
            env,
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

/// Reads and checks a configuration file.
pub(crate) fn load(path: &std::path::Path) -> anyhow::Result<Config> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let config: Config =
        toml::from_str(&text).with_context(|| format!("invalid config {}", path.display()))?;
    if config.max_interrupted_per_principal == 0 {
        bail!("max_interrupted_per_principal is at least 1");
    }
    let mut seen = std::collections::HashSet::new();
    for u in &config.upstream {
        let ok_chars = u
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if u.name.is_empty() || !ok_chars || u.name.contains(SEPARATOR) || u.name.ends_with('_') {
            bail!(
                "upstream name {:?}: use letters, digits, - and _ (not {SEPARATOR}, and not _ at \
                 the end: NAME{SEPARATOR}TOOL must say where NAME ends)",
                u.name
            );
        }
        if !seen.insert(u.name.clone()) {
            bail!("upstream name {:?} is used twice", u.name);
        }
        match (u.command.is_empty(), &u.url) {
            (false, None) | (true, Some(_)) => {}
            _ => bail!(
                "upstream {:?}: give exactly one of `command` and `url`",
                u.name
            ),
        }
        if !(1..=MAX_CONNECTIONS).contains(&u.max_connections()) {
            bail!(
                "upstream {:?}: max_connections is 1 to {MAX_CONNECTIONS}",
                u.name
            );
        }
        if u.url.is_some() && !u.env.is_empty() {
            bail!(
                "upstream {:?}: `env` is for `command` upstreams (use `headers` for a URL)",
                u.name
            );
        }
        if let Some(a) = &u.auth {
            let ways = [a.bearer_file.is_some(), a.client_id.is_some(), a.login];
            if u.url.is_none() || ways.iter().filter(|w| **w).count() != 1 {
                bail!(
                    "upstream {:?}: [upstream.auth] is for a `url` upstream and takes exactly one \
                     of bearer_file, client_id (with client_secret_file) and login = true",
                    u.name
                );
            }
            if a.client_id.is_some() != a.client_secret_file.is_some() {
                bail!("upstream {:?}: client_id needs client_secret_file", u.name);
            }
        }
        if let Some(k) = u
            .env
            .keys()
            .find(|k| k.is_empty() || k.contains(['=', '\0']))
        {
            bail!(
                "upstream {:?}: {k:?} is not an environment variable name",
                u.name
            );
        }
    }
    Ok(config)
}

/// An upstream's era unless its config says otherwise: whichever it speaks.
fn auto() -> oxmcp_client::EraChoice {
    oxmcp_client::EraChoice::Auto
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_example_config_is_valid() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../mcp.example.toml");
        let config = super::load(std::path::Path::new(path)).expect("mcp.example.toml loads");
        assert_eq!(config.upstream.len(), 2);
        assert_eq!(config.heartbeat_ms, 5000);
        assert_eq!(config.limits.max_requests_per_session, Some(256));
    }

    /// Loads `text` as a config file.
    fn load_text(tag: &str, text: &str) -> anyhow::Result<super::Config> {
        let dir = std::env::temp_dir().join(format!("mcp-config-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("mcp.toml");
        std::fs::write(&path, text).expect("write config");
        let loaded = super::load(&path);
        let _ = std::fs::remove_dir_all(&dir);
        loaded
    }

    #[test]
    fn upstream_names_cannot_make_one_exposed_name_twice() {
        // `a` + `__` + `_c` and `a_` + `__` + `c` are both `a___c`.
        let pair = "[[upstream]]\nname = \"a\"\ncommand = [\"x\"]\n\
                    [[upstream]]\nname = \"a_\"\ncommand = [\"y\"]\n";
        let err = load_text("pair", pair).expect_err("a and a_ are ambiguous");
        assert!(format!("{err:#}").contains("\"a_\""), "{err:#}");
        // Alone, a name ending with `_` is refused as well (it could meet `a` later).
        for bad in ["a_", "_", "a__b", "a-_"] {
            let text = format!("[[upstream]]\nname = \"{bad}\"\ncommand = [\"x\"]\n");
            assert!(load_text("bad", &text).is_err(), "{bad:?} is refused");
        }
        for good in ["a", "_a", "a_b", "a-b", "A1", "a_b-c_d"] {
            let text = format!("[[upstream]]\nname = \"{good}\"\ncommand = [\"x\"]\n");
            assert!(load_text("good", &text).is_ok(), "{good:?} is accepted");
        }
    }
}
