//! The MCP server lists of the hosts, read as a gateway config by `oxmcp serve --config`:
//! the `mcpServers` JSON of Claude Desktop and Cursor, and VS Code's `servers`
//! (`.vscode/mcp.json`, or `mcp.servers` in its settings). Each entry becomes an upstream
//! of the same name: `command`, `args` and `env` a stdio one, `url` and `headers` a remote one
//! (`type`: `stdio`, `http`, `streamable-http` or `sse`, where given). Cursor's and VS Code's
//! `${env:NAME}`, `${userHome}`, `${workspaceFolder}` and `${pathSeparator}` are expanded;
//! what cannot be mapped (VS Code's `${input:...}` prompts, `envFile`, `cwd`, an unknown
//! `type` or key, an entry with neither `command` nor `url`) is an error naming the entry.

use std::path::Path;

use anyhow::{Context, bail};
use serde_json::{Map, Value};

use crate::gateway::{Config, ServeFile, Upstream};

/// Keys of an entry that some host writes and that do not change how the server is reached.
const IGNORED: [&str; 7] = [
    "description",
    "autoApprove",
    "alwaysAllow",
    "timeout",
    "gallery",
    "version",
    "dev",
];

/// Whether the config at `path` is JSON: a `.json` file, or text that opens with `{` (which
/// TOML never does).
pub(crate) fn is_json(path: &Path, text: &str) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
        || text.trim_start().starts_with('{')
}

/// The gateway a host's JSON server list at `path` describes (not yet checked).
pub(crate) fn read(text: &str, path: &Path) -> anyhow::Result<ServeFile> {
    let root: Value = serde_json::from_str(text).context("not JSON")?;
    let servers = servers_of(&root)?;
    let vars = Vars::for_file(path);
    let mut gateway = Config::default();
    for (name, entry) in servers {
        let upstream = upstream(name, entry, &vars).with_context(|| format!("server {name:?}"))?;
        if let Some(u) = upstream {
            gateway.upstream.push(u);
        }
    }
    Ok(ServeFile {
        gateway,
        limits: crate::limits::Limits::default(),
        auth: None,
        store: None,
        instance_id: None,
    })
}

/// The object of servers: `mcpServers` (Claude Desktop, Cursor), `servers` (VS Code's
/// `mcp.json`) or `mcp.servers` (VS Code's settings).
fn servers_of(root: &Value) -> anyhow::Result<&Map<String, Value>> {
    let Some(root) = root.as_object() else {
        bail!("expected a JSON object with `mcpServers` (or VS Code's `servers`)");
    };
    let nested = root.get("mcp").and_then(|m| m.get("servers"));
    let found: Vec<(&str, &Value)> = [
        ("mcpServers", root.get("mcpServers")),
        ("servers", root.get("servers")),
        ("mcp.servers", nested),
    ]
    .into_iter()
    .filter_map(|(k, v)| Some((k, v?)))
    .collect();
    match found.as_slice() {
        [(key, v)] => v
            .as_object()
            .with_context(|| format!("`{key}` is not an object of servers by name")),
        [] => bail!("no `mcpServers` (Claude Desktop, Cursor) or `servers` (VS Code) object"),
        _ => bail!("both `mcpServers` and `servers`: keep one list of servers"),
    }
}

/// The upstream of one entry; `None` for an entry marked `"disabled": true`.
fn upstream(name: &str, entry: &Value, vars: &Vars) -> anyhow::Result<Option<Upstream>> {
    let Some(entry) = entry.as_object() else {
        bail!("expected an object with `command` or `url`");
    };
    if entry.get("disabled").and_then(Value::as_bool) == Some(true) {
        return Ok(None);
    }
    for key in entry.keys() {
        match key.as_str() {
            "type" | "command" | "args" | "env" | "url" | "headers" | "disabled" => {}
            "envFile" | "cwd" => bail!(
                "`{key}` cannot be mapped: give the variables in `env` and absolute paths \
                 (the gateway runs the command in its own directory)"
            ),
            k if IGNORED.contains(&k) => {}
            k => bail!("unknown key `{k}`"),
        }
    }
    let kind = match entry.get("type") {
        None => None,
        Some(Value::String(t)) => Some(t.as_str()),
        Some(other) => bail!("`type` must be a string, not {other}"),
    };
    let command = string(entry, "command", vars)?;
    let url = string(entry, "url", vars)?;
    let remote = match (kind, &command, &url) {
        (Some("stdio"), _, _) => false,
        (Some("http" | "streamable-http" | "streamableHttp" | "sse"), _, _) => true,
        (Some(t), _, _) => bail!("unknown `type` {t:?} (stdio, http or sse)"),
        (None, Some(_), None) => false,
        (None, None, Some(_)) => true,
        (None, Some(_), Some(_)) => bail!("both `command` and `url`: give one"),
        (None, None, None) => bail!("neither `command` (a stdio server) nor `url` (a remote one)"),
    };
    if remote {
        let Some(url) = url else {
            bail!("a remote server (`type` {kind:?}) needs `url`");
        };
        if command.is_some() || entry.contains_key("args") || entry.contains_key("env") {
            bail!("`command`, `args` and `env` are for stdio servers, not one with `url`");
        }
        let mut u = Upstream::url(name, url);
        u.headers = strings(entry, "headers", vars)?;
        return Ok(Some(u));
    }
    let Some(program) = command else {
        bail!("a stdio server needs `command`");
    };
    if url.is_some() || entry.contains_key("headers") {
        bail!("`url` and `headers` are for remote servers, not one with `command`");
    }
    let mut argv = vec![program];
    argv.extend(list(entry, "args", vars)?);
    let mut u = Upstream::command(name, argv);
    u.env = strings(entry, "env", vars)?;
    Ok(Some(u))
}

/// The string at `key`, expanded; `None` when absent.
fn string(entry: &Map<String, Value>, key: &str, vars: &Vars) -> anyhow::Result<Option<String>> {
    match entry.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => vars.expand(s).map(Some).with_context(|| format!("`{key}`")),
        Some(other) => bail!("`{key}` must be a string, not {other}"),
    }
}

/// The list of strings at `key`, expanded; empty when absent.
fn list(entry: &Map<String, Value>, key: &str, vars: &Vars) -> anyhow::Result<Vec<String>> {
    let Some(v) = entry.get(key) else {
        return Ok(Vec::new());
    };
    let Some(items) = v.as_array() else {
        bail!("`{key}` must be a list of strings");
    };
    items
        .iter()
        .map(|i| match i {
            Value::String(s) => vars.expand(s).with_context(|| format!("`{key}`")),
            other => bail!("`{key}` must be a list of strings, not one holding {other}"),
        })
        .collect()
}

/// The object of strings at `key` (`env`, `headers`), values expanded; empty when absent.
fn strings(
    entry: &Map<String, Value>,
    key: &str,
    vars: &Vars,
) -> anyhow::Result<std::collections::BTreeMap<String, String>> {
    let Some(v) = entry.get(key) else {
        return Ok(Default::default());
    };
    let Some(map) = v.as_object() else {
        bail!("`{key}` must be an object of strings");
    };
    map.iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((
                k.clone(),
                vars.expand(s).with_context(|| format!("`{key}.{k}`"))?,
            )),
            other => bail!("`{key}.{k}` must be a string, not {other}"),
        })
        .collect()
}

/// What `${...}` variables stand for (Cursor's and VS Code's).
struct Vars {
    /// The workspace folder: the parent of `.vscode` or `.cursor` for a file in one, else the
    /// file's own folder.
    workspace: String,
    /// `HOME`, if set.
    home: Option<String>,
}

impl Vars {
    fn for_file(path: &Path) -> Self {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
        let dir = path.parent().unwrap_or(Path::new("/"));
        let in_host_dir = dir
            .file_name()
            .is_some_and(|n| n == ".vscode" || n == ".cursor");
        let workspace = match (in_host_dir, dir.parent()) {
            (true, Some(parent)) => parent,
            _ => dir,
        };
        Vars {
            workspace: workspace.to_string_lossy().into_owned(),
            home: std::env::var("HOME").ok(),
        }
    }

    /// `text` with its variables replaced; an error for one that cannot be.
    fn expand(&self, text: &str) -> anyhow::Result<String> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let Some(len) = rest[start..].find('}') else {
                bail!("an unclosed `${{` in {text:?}");
            };
            let var = &rest[start + 2..start + len];
            out.push_str(&self.value(var)?);
            rest = &rest[start + len + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    fn value(&self, var: &str) -> anyhow::Result<String> {
        if let Some(name) = var.strip_prefix("env:") {
            return std::env::var(name)
                .with_context(|| format!("`${{env:{name}}}`: {name} is not set here"));
        }
        if var.starts_with("input:") {
            bail!(
                "`${{{var}}}` is a VS Code prompt, which a gateway cannot show: write the value \
                 in, or take it from the environment with `${{env:NAME}}`"
            );
        }
        match var {
            "userHome" => self.home.clone().context("`${userHome}`: HOME is not set"),
            "workspaceFolder" => Ok(self.workspace.clone()),
            "pathSeparator" | "/" => Ok(std::path::MAIN_SEPARATOR.to_string()),
            _ => bail!("unknown variable `${{{var}}}`"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    /// The upstreams of `v` read as `dir/mcp.json`, or the error with its causes.
    fn read_at(v: &serde_json::Value, path: &str) -> Result<Vec<super::Upstream>, String> {
        super::read(&v.to_string(), Path::new(path))
            .map(|f| f.gateway.upstream)
            .map_err(|e| format!("{e:#}"))
    }

    fn read(v: &serde_json::Value) -> Result<Vec<super::Upstream>, String> {
        read_at(v, "/srv/mcp.json")
    }

    #[test]
    fn claude_cursor_and_vscode_lists_map_to_upstreams() {
        let claude = json!({"mcpServers": {
            "files": {"command": "npx", "args": ["-y", "server-files", "/tmp"], "env": {"A": "1"}},
            "remote": {"url": "https://mcp.example.com/mcp", "headers": {"X-Key": "k"}},
            "off": {"command": "x", "disabled": true},
        }, "globalShortcut": "Ctrl+Space"});
        let ups = read(&claude).unwrap();
        assert_eq!(ups.len(), 2, "the disabled entry is left out");
        let files = ups.iter().find(|u| u.name == "files").unwrap();
        assert_eq!(files.command, ["npx", "-y", "server-files", "/tmp"]);
        assert_eq!(files.env["A"], "1");
        assert!(files.url.is_none());
        let remote = ups.iter().find(|u| u.name == "remote").unwrap();
        assert_eq!(remote.url.as_deref(), Some("https://mcp.example.com/mcp"));
        assert_eq!(remote.headers["X-Key"], "k");
        assert!(remote.command.is_empty());

        let vscode = json!({"inputs": [], "servers": {
            "gh": {"type": "http", "url": "https://api.example.com/mcp"},
            "old": {"type": "sse", "url": "https://old.example.com/sse"},
            "local": {"type": "stdio", "command": "${workspaceFolder}/bin/server"},
        }});
        let ups = read_at(&vscode, "/work/proj/.vscode/mcp.json").unwrap();
        let local = ups.iter().find(|u| u.name == "local").unwrap();
        assert_eq!(local.command, ["/work/proj/bin/server"]);
        assert_eq!(ups.iter().filter(|u| u.url.is_some()).count(), 2);
        let settings = json!({"mcp": {"servers": {"s": {"command": "srv"}}}});
        assert_eq!(read(&settings).unwrap()[0].command, ["srv"]);
    }

    #[test]
    fn what_cannot_be_mapped_is_an_error_naming_the_entry() {
        let cases = [
            (
                json!({"mcpServers": {"nothing": {"args": ["x"]}}}),
                "neither `command`",
            ),
            (
                json!({"servers": {"prompted": {"command": "srv", "env": {"KEY": "${input:api-key}"}}}}),
                "${input:api-key}",
            ),
            (
                json!({"servers": {"weird": {"type": "carrier-pigeon", "url": "x"}}}),
                "unknown `type`",
            ),
            (
                json!({"mcpServers": {"both": {"command": "a", "url": "http://h/mcp"}}}),
                "both",
            ),
            (
                json!({"mcpServers": {"typed": {"type": "stdio", "url": "http://h/mcp"}}}),
                "needs `command`",
            ),
            (
                json!({"mcpServers": {"envurl": {"url": "http://h/mcp", "env": {"A": "1"}}}}),
                "stdio servers",
            ),
            (
                json!({"mcpServers": {"dir": {"command": "a", "cwd": "/x"}}}),
                "`cwd`",
            ),
            (
                json!({"servers": {"dotenv": {"command": "a", "envFile": ".env"}}}),
                "`envFile`",
            ),
            (
                json!({"mcpServers": {"extra": {"command": "a", "surprise": 1}}}),
                "unknown key `surprise`",
            ),
            (
                json!({"mcpServers": {"argnum": {"command": "a", "args": [1]}}}),
                "list of strings",
            ),
            (
                json!({"mcpServers": {"var": {"command": "${nope}"}}}),
                "unknown variable",
            ),
            (
                json!({"mcpServers": {"unset": {"command": "a", "args": ["${env:OXMCP_SURELY_UNSET_VAR}"]}}}),
                "OXMCP_SURELY_UNSET_VAR is not set",
            ),
            (json!({"mcpServers": {"str": "npx"}}), "expected an object"),
        ];
        for (file, says) in cases {
            let err = read(&file).expect_err(&file.to_string());
            let entry = file
                .as_object()
                .and_then(|o| o.values().next())
                .and_then(|s| s.as_object())
                .and_then(|s| s.keys().next().cloned())
                .unwrap();
            assert!(err.contains(&format!("server \"{entry}\"")), "{err}");
            assert!(err.contains(says), "{file}: {err}");
        }
        for (file, says) in [
            (json!([]), "expected a JSON object"),
            (json!({"other": {}}), "no `mcpServers`"),
            (json!({"mcpServers": {}, "servers": {}}), "keep one"),
            (json!({"mcpServers": []}), "not an object"),
        ] {
            let err = read(&file).expect_err(&file.to_string());
            assert!(err.contains(says), "{file}: {err}");
        }
    }

    #[test]
    fn variables_expand_from_the_environment_and_the_home() {
        let vars = super::Vars {
            workspace: "/w".into(),
            home: Some("/home/u".into()),
        };
        assert_eq!(vars.expand("${userHome}/x${/}y").unwrap(), "/home/u/x/y");
        assert_eq!(vars.expand("plain $HOME {}").unwrap(), "plain $HOME {}");
        assert!(vars.expand("${userHome").is_err());
        let path = std::env::var("PATH").unwrap();
        assert_eq!(vars.expand("p=${env:PATH}").unwrap(), format!("p={path}"));
    }

    #[test]
    fn json_is_told_from_toml_by_extension_or_content() {
        assert!(super::is_json(Path::new("a.json"), ""));
        assert!(super::is_json(
            Path::new("mcp.conf"),
            "\n  {\"mcpServers\": {}}"
        ));
        assert!(!super::is_json(Path::new("mcp.toml"), "[[upstream]]\n"));
    }
}
