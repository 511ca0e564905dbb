//! `oxmcp serve`'s face of the gateway (crate oxmcp-gateway): the config file, which holds the
//! gateway's keys and `oxmcp serve`'s own (`[limits]`, `[auth]`, `store`, `instance_id`), and
//! the bridges (`oxmcp serve -- CMD`, `oxmcp serve --upstream URL`).

use anyhow::Context;
use serde::Deserialize;

pub(crate) use oxmcp_gateway::{Config, Gateway, Upstream, UpstreamAuth};

/// The configuration file (`--config mcp.toml`), or what a bridge serves.
#[derive(Debug)]
pub(crate) struct ServeFile {
    /// The gateway's keys: its settings and `[[upstream]]` tables.
    pub(crate) gateway: Config,
    /// The limits of `oxmcp serve` (`[limits]`; flags override them).
    pub(crate) limits: crate::limits::Limits,
    /// How clients of the gateway authenticate (`[auth]`; the `--auth-*` flags override it).
    pub(crate) auth: Option<crate::protect::AuthFile>,
    /// Sessions shared with other instances through this Redis URL (`--store` overrides it).
    pub(crate) store: Option<String>,
    /// This instance's name in the store (`--instance-id` overrides it).
    pub(crate) instance_id: Option<String>,
}

/// The keys of the file that are `oxmcp serve`'s own (see [`ServeFile`]); all others are the
/// gateway's.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServeKeys {
    #[serde(default)]
    limits: crate::limits::Limits,
    #[serde(default)]
    auth: Option<crate::protect::AuthFile>,
    #[serde(default)]
    store: Option<String>,
    #[serde(default)]
    instance_id: Option<String>,
}

pub(crate) const SERVE_KEYS: [&str; 4] = ["limits", "auth", "store", "instance_id"];

/// A bridge to `upstream` alone, its names unchanged, described as `what`: no file.
pub(crate) fn bridge(upstream: Upstream, what: String) -> ServeFile {
    ServeFile {
        gateway: Config::bridge(upstream, what),
        limits: crate::limits::Limits::default(),
        auth: None,
        store: None,
        instance_id: None,
    }
}

/// Reads and checks a configuration file: TOML, or a host's JSON list of servers.
pub(crate) fn load(path: &std::path::Path) -> anyhow::Result<ServeFile> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let file = if crate::mcp_servers::is_json(path, &text) {
        crate::mcp_servers::read(&text, path)
    } else {
        parse(&text).map_err(anyhow::Error::from)
    };
    let file = file.with_context(|| format!("invalid config {}", path.display()))?;
    file.gateway.check()?;
    Ok(file)
}

/// The file's text split in two: `oxmcp serve`'s keys and the gateway's, each read by its own
/// type, so that every error still points at its line in the file.
fn parse(text: &str) -> Result<ServeFile, toml::de::Error> {
    use toml::de::{DeTable, Deserializer};
    let root = DeTable::parse(text)?;
    let span = root.span();
    let mut gateway = root.into_inner();
    let mut own = DeTable::new();
    for key in SERVE_KEYS {
        if let Some((k, v)) = gateway.remove_entry(key) {
            own.insert(k, v);
        }
    }
    let with_input = |mut e: toml::de::Error| {
        e.set_input(Some(text));
        e
    };
    let own = Deserializer::from(toml::Spanned::new(span.clone(), own));
    let own = ServeKeys::deserialize(own).map_err(with_input)?;
    let gateway = Deserializer::from(toml::Spanned::new(span, gateway));
    let gateway = Config::deserialize(gateway).map_err(with_input)?;
    Ok(ServeFile {
        gateway,
        limits: own.limits,
        auth: own.auth,
        store: own.store,
        instance_id: own.instance_id,
    })
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_example_config_is_valid() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../mcp.example.toml");
        let file = super::load(std::path::Path::new(path)).expect("mcp.example.toml loads");
        assert_eq!(file.gateway.upstream.len(), 2);
        assert_eq!(file.gateway.heartbeat_ms, 5000);
        assert_eq!(file.limits.max_requests_per_session, Some(256));
    }

    #[test]
    fn unknown_keys_are_refused_at_the_top_and_in_tables() {
        for text in [
            "surprise = 1\n",
            "[[upstream]]\nname = \"a\"\ncommand = [\"x\"]\nsurprise = 1\n",
            "[limits]\nsurprise = 1\n",
        ] {
            let err = super::parse(text).expect_err(text);
            assert!(err.to_string().contains("unknown field"), "{text}: {err}");
            // Where: the line of the unknown key.
            let line = text.lines().count();
            assert!(
                err.to_string().contains(&format!("line {line}")),
                "{text}: {err}"
            );
        }
    }
}
