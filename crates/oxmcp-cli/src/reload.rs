//! The gateway `oxmcp serve` runs, and its reload: with `--config FILE`, a SIGHUP (unix) reads
//! FILE again and the gateway serves its upstreams as it now says them (added, removed,
//! restarted; the others left alone, clients keeping their sessions: see
//! [`Gateway::reload`]), or refuses a file it cannot serve and serves on with the old one.
//! Each SIGHUP prints one line on stderr: what changed, or why the file was refused.
//! `oxmcp serve`'s own keys (`[limits]`, `[auth]`, `store`, `instance_id`) are read at start
//! only: a change to them is reported as not applied until a restart, and otherwise ignored.

use std::path::{Path, PathBuf};

use oxmcp_server::{Server, ServerConfig};
use tokio::task::JoinHandle;

use crate::gateway::{self, Gateway, SERVE_KEYS, ServeFile};
use crate::limits::Limits;

/// The gateway `oxmcp serve` runs (none for the demo server), and its SIGHUP watcher.
#[derive(Default)]
pub(crate) struct Running {
    gateway: Option<Gateway>,
    watcher: Option<JoinHandle<()>>,
}

impl Running {
    /// The health of the gateway's upstreams as they are at each call (none for the demo).
    pub(crate) fn health(&self) -> crate::operate::UpstreamHealth {
        let gateway = self.gateway.clone();
        std::sync::Arc::new(move || {
            gateway
                .as_ref()
                .map(Gateway::upstream_health)
                .unwrap_or_default()
        })
    }

    /// Stops reloading, then every upstream (stdio children get the full close-TERM-KILL
    /// sequence).
    pub(crate) async fn stop(self) {
        if let Some(watcher) = self.watcher {
            watcher.abort();
        }
        if let Some(gateway) = self.gateway {
            gateway.stop().await;
        }
    }
}

/// Starts the gateway of `file`, its server built with `server_config`: `--max-subscriptions`
/// (or `[limits]`) overrides the file's `max_subscriptions`. With the `path` it was read from,
/// a SIGHUP reloads it from there (one that comes while the upstreams connect waits for them).
pub(crate) async fn start(
    file: ServeFile,
    path: Option<&Path>,
    limits: &Limits,
    server_config: ServerConfig,
) -> anyhow::Result<(Server, Running)> {
    let hangups = path.and_then(|_| hangups());
    let mut config = file.gateway;
    if let Some(n) = limits.max_subscriptions {
        config.max_subscriptions = n;
    }
    let gateway = Gateway::builder(config)
        .server_config(server_config)
        .start()
        .await?;
    let watcher = path.zip(hangups).map(|(path, hangups)| {
        let reloader = Reloader {
            path: path.to_owned(),
            gateway: gateway.clone(),
            max_subscriptions: limits.max_subscriptions,
            own_keys: own_keys(path),
        };
        tokio::spawn(reloader.run(hangups))
    });
    let server = gateway.server().clone();
    let running = Running {
        gateway: Some(gateway),
        watcher,
    };
    Ok((server, running))
}

/// SIGHUPs, from now on (on unix; `None` elsewhere, or if they cannot be listened for).
#[cfg(unix)]
type Hangups = tokio::signal::unix::Signal;
#[cfg(not(unix))]
type Hangups = std::convert::Infallible;

#[cfg(unix)]
fn hangups() -> Option<Hangups> {
    use tokio::signal::unix::{SignalKind, signal};
    signal(SignalKind::hangup())
        .map_err(|e| tracing::warn!("cannot listen for SIGHUP, so no reloads: {e}"))
        .ok()
}

#[cfg(not(unix))]
fn hangups() -> Option<Hangups> {
    None
}

/// What a reload needs: the file, the gateway, what overrides the file, and `oxmcp serve`'s
/// own keys as the process started with them.
struct Reloader {
    path: PathBuf,
    gateway: Gateway,
    /// `--max-subscriptions` (or `[limits]` at start): wins over the file's.
    max_subscriptions: Option<usize>,
    own_keys: toml::Table,
}

impl Reloader {
    /// Reloads on each SIGHUP, printing one line each.
    #[cfg(unix)]
    async fn run(self, mut hangups: Hangups) {
        while hangups.recv().await.is_some() {
            eprintln!("oxmcp: {}", self.reload().await);
        }
    }

    #[cfg(not(unix))]
    async fn run(self, hangups: Hangups) {
        match hangups {}
    }

    /// Reloads the gateway from the file: what changed, or why nothing did.
    async fn reload(&self) -> String {
        let shown = self.path.display();
        let refused = |why: String| {
            tracing::warn!("reload of {shown} refused: {why}");
            format!("reload of {shown} refused, still serving the previous config: {why}")
        };
        let file = match gateway::load(&self.path) {
            Ok(file) => file,
            Err(e) => return refused(one_line(&format!("{e:#}"))),
        };
        let mut config = file.gateway;
        if let Some(n) = self.max_subscriptions {
            config.max_subscriptions = n;
        }
        let mut report = match self.gateway.reload(config).await {
            Ok(report) => report,
            Err(e) => return refused(e.to_string()),
        };
        let now = own_keys(&self.path);
        for key in SERVE_KEYS {
            if self.own_keys.get(key) != now.get(key) {
                report.not_applied.push(key.to_owned());
            }
        }
        if !report.not_applied.is_empty() {
            let keys = report.not_applied.join(", ");
            tracing::warn!("reload of {shown}: changed, but not applied until a restart: {keys}");
        }
        format!("reloaded {shown}: {report}")
    }
}

/// An error on one line: a TOML error's lines without the excerpt of the file it shows
/// (`TOML parse error at line 6, column 1: unknown field ...`).
fn one_line(text: &str) -> String {
    let excerpt = |line: &str| {
        let line = line
            .trim_start()
            .trim_start_matches(|c: char| c.is_ascii_digit());
        line.trim_start().starts_with('|')
    };
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|line| !line.is_empty() && !excerpt(line))
        .collect();
    lines.join(": ")
}

/// `oxmcp serve`'s own keys of the file at `path`, as TOML (none for a file that is not TOML).
fn own_keys(path: &Path) -> toml::Table {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut table: toml::Table = text.parse().unwrap_or_default();
    table.retain(|key, _| SERVE_KEYS.contains(&key));
    table
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_toml_error_is_told_on_one_line() {
        let text = "[[upstream]]\nname = \"a\"\ncommand = [\"x\"]\nsurprise = 1\n";
        let path = std::env::temp_dir().join(format!("oxmcp-one-line-{}.toml", std::process::id()));
        std::fs::write(&path, text).unwrap();
        let error = crate::gateway::load(&path).map(|_| ()).unwrap_err();
        let _ = std::fs::remove_file(&path);
        let line = super::one_line(&format!("{error:#}"));
        assert!(!line.contains('\n') && !line.contains('|'), "{line}");
        assert!(
            line.contains("TOML parse error at line 4, column 1: unknown field `surprise`"),
            "{line}"
        );
    }
}
