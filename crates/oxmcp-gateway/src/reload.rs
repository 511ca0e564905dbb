//! [`Gateway::reload`]: a new [`Config`] served in place of the running one, upstream by
//! upstream, while clients keep their sessions; what it did, as a [`ReloadReport`].
//!
//! Upstreams are matched by name. A name only in the new config is *added*, one only in the
//! old is *removed*, one whose settings differ in any way (or whose credential files now read
//! differently: a rotated token) is *restarted*, the others are left running as they are.
//! Everything the reload starts (added and restarted upstreams) must connect first: if one
//! does not, within [`FIRST_CONNECTION`], the whole reload is refused, what it started is
//! stopped again, and the gateway serves on exactly as before. Only then is anything swapped:
//! the removed and replaced upstreams are stopped (a child gets the close-TERM-KILL sequence),
//! the new ones' lists read, and clients are told which lists changed (`list_changed`).

use std::collections::BTreeMap;
use std::fmt;

use super::{
    Config, Entry, Error, FIRST_CONNECTION, Gateway, Set, Started, Upstream, announce, connected,
    follow, launch, running::secrets,
};

/// What a [reload](Gateway::reload) changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReloadReport {
    /// Upstreams started: their names are new (in the new config's order).
    pub added: Vec<String>,
    /// Upstreams stopped: their names are gone.
    pub removed: Vec<String>,
    /// Upstreams stopped and started again with their new settings: some setting of theirs
    /// changed, or what one of their credential files holds.
    pub restarted: Vec<String>,
    /// Upstreams left running as they were.
    pub unchanged: Vec<String>,
    /// Gateway settings that changed but do not apply to what keeps running:
    /// `max_subscriptions` (the server's, fixed when it was built; the gateway goes on with
    /// the old value until it is started again) and `heartbeat_ms` (the upstreams left running
    /// keep theirs; those this reload starts use the new one).
    /// `max_subscriptions_per_principal` and `max_interrupted_per_principal` always apply at
    /// once, to every upstream, from the next request on.
    pub not_applied: Vec<String>,
}

impl fmt::Display for ReloadReport {
    /// `added a, b; removed c; restarted d` (or `no upstream changed`), then which settings
    /// were not applied.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = [
            ("added", &self.added),
            ("removed", &self.removed),
            ("restarted", &self.restarted),
        ]
        .into_iter()
        .filter(|(_, names)| !names.is_empty())
        .map(|(what, names)| format!("{what} {}", names.join(", ")))
        .collect();
        if parts.is_empty() {
            f.write_str("no upstream changed")?;
        } else {
            f.write_str(&parts.join("; "))?;
        }
        if !self.not_applied.is_empty() {
            let keys = self.not_applied.join(", ");
            write!(f, "; not applied until a restart: {keys}")?;
        }
        Ok(())
    }
}

/// Which upstreams a reload adds, removes, restarts and leaves alone.
#[derive(Debug, Default, PartialEq, Eq)]
struct Plan {
    added: Vec<String>,
    removed: Vec<String>,
    changed: Vec<String>,
    unchanged: Vec<String>,
}

/// The upstreams of `new` against those `running`, by name.
fn plan(running: &BTreeMap<String, Entry>, new: &Config) -> Plan {
    let mut plan = Plan::default();
    for u in &new.upstream {
        let name = u.name.clone();
        match running.get(&u.name) {
            None => plan.added.push(name),
            Some(e) if same(&e.upstream, u) && e.secrets == secrets(u) => plan.unchanged.push(name),
            Some(_) => plan.changed.push(name),
        }
    }
    plan.removed = running
        .keys()
        .filter(|name| !new.upstream.iter().any(|u| &u.name == *name))
        .cloned()
        .collect();
    plan
}

/// Whether two upstreams have the same settings (every field: one added to [`Upstream`] must
/// be named here).
fn same(a: &Upstream, b: &Upstream) -> bool {
    let Upstream {
        name,
        command,
        env,
        url,
        era,
        headers,
        max_connections,
        allow_tools,
        deny_tools,
        auth,
        authorizer: _,
    } = a;
    *name == b.name
        && *command == b.command
        && *env == b.env
        && *url == b.url
        && *era == b.era
        && *headers == b.headers
        && *max_connections == b.max_connections
        && *allow_tools == b.allow_tools
        && *deny_tools == b.deny_tools
        && *auth == b.auth
}

/// The settings of `new` that do not apply to what keeps running (see
/// [`ReloadReport::not_applied`]).
fn not_applied(old: &Config, new: &Config, plan: &Plan) -> Vec<String> {
    let mut keys = Vec::new();
    if old.heartbeat_ms != new.heartbeat_ms && !plan.unchanged.is_empty() {
        keys.push("heartbeat_ms".to_owned());
    }
    if old.max_subscriptions != new.max_subscriptions {
        keys.push("max_subscriptions".to_owned());
    }
    keys
}

impl Gateway {
    /// Serves `config` from now on, changing only what differs, upstream by upstream (matched
    /// by name): upstreams added are started and their tools, prompts and resources appear;
    /// upstreams removed are stopped and theirs disappear; upstreams whose settings (or
    /// credential files) changed are restarted; the others are left alone. Clients keep their
    /// sessions, and are told which lists changed. Requests in flight to a removed or
    /// restarted upstream fail; a restarted upstream's new process (or session) is started,
    /// and must connect, before the old one is stopped. `max_subscriptions_per_principal` and
    /// `max_interrupted_per_principal` apply at once; see [`ReloadReport::not_applied`] for
    /// the settings that do not. It returns once the new upstreams' lists are in (or after
    /// 10 s). Reloads (and [`stop`](Gateway::stop)) take turns; a reload whose future is
    /// dropped is not cut short: it runs to its end in the background.
    ///
    /// # Errors
    /// Nothing is changed, and the gateway serves on as it was: [`Error::Config`] for a config
    /// that fails [`Config::check`]; [`Error::Reload`] when an upstream it would start does
    /// not connect within 10 s (each such upstream named, with why), when the gateway is
    /// stopped, or when the config would turn a bridge into a gateway (or the reverse).
    pub async fn reload(&self, config: Config) -> Result<ReloadReport, Error> {
        config.check()?;
        let gateway = self.clone();
        tokio::spawn(async move { gateway.reload_now(config).await })
            .await
            .map_err(|e| Error::Reload(format!("the reload did not finish: {e}")))?
    }

    /// [`Gateway::reload`], run to its end.
    async fn reload_now(&self, config: Config) -> Result<ReloadReport, Error> {
        let mut running = self.shared.running.lock().await;
        if running.stopped {
            return Err(Error::Reload("the gateway is stopped".to_owned()));
        }
        if running.config.bridge != config.bridge {
            return Err(Error::Reload(
                "a bridge cannot become a gateway (or another bridge), nor a gateway a bridge"
                    .to_owned(),
            ));
        }
        let plan = plan(&running.entries, &config);
        let old = self.shared.upstreams.now();
        let fresh = start_fresh(&plan, &config, &old).await?;
        // Nothing fails from here on: the swap.
        let mut gone = Vec::new();
        for name in plan.removed.iter().chain(&plan.changed) {
            if let Some(entry) = running.entries.remove(name) {
                entry.halt().await;
            }
            gone.extend(old.pools.get(name).cloned());
        }
        for name in &plan.removed {
            announce(&self.server, self.shared.catalog.remove(name));
        }
        let mut set = Set::default();
        for u in &config.upstream {
            let started = fresh.iter().find(|s| s.upstream.name == u.name);
            if let Some(pool) = started.map(|s| &s.pool).or_else(|| old.pools.get(&u.name)) {
                pool.link
                    .subscriptions
                    .set_share(config.max_subscriptions_per_principal);
                pool.set_interruptions(config.max_interrupted_per_principal);
                set.insert(pool);
            }
        }
        self.shared.upstreams.replace(set);
        let mut ready = Vec::new();
        for s in fresh {
            let (entry, ready_rx) = follow(&self.server, &self.shared.catalog, s);
            running.entries.insert(entry.upstream.name.clone(), entry);
            ready.push(ready_rx);
        }
        futures::future::join_all(gone.iter().map(|p| p.retire())).await;
        let all = futures::future::join_all(ready);
        if tokio::time::timeout(FIRST_CONNECTION, all).await.is_err() {
            tracing::warn!("reload: some upstreams' lists are not read yet");
        }
        let not_applied = not_applied(&running.config, &config, &plan);
        let served = running.config.max_subscriptions;
        running.config = config;
        // What the server was built with stays what it has.
        running.config.max_subscriptions = served;
        let report = ReloadReport {
            added: plan.added,
            removed: plan.removed,
            restarted: plan.changed,
            unchanged: plan.unchanged,
            not_applied,
        };
        tracing::info!("reloaded: {report}");
        Ok(report)
    }
}

/// Starts the upstreams `plan` adds or restarts (a restarted one keeps the subscriptions its
/// clients hold), and waits for each to connect. If one does not, all are stopped again.
async fn start_fresh(plan: &Plan, config: &Config, old: &Set) -> Result<Vec<Started>, Error> {
    let fresh: Vec<Started> = plan
        .added
        .iter()
        .chain(&plan.changed)
        .filter_map(|name| config.upstream.iter().find(|u| &u.name == name))
        .map(|u| {
            let held = old.links.get(&u.name).map(|l| l.subscriptions.clone());
            launch(u.clone(), config, held)
        })
        .collect();
    let results =
        futures::future::join_all(fresh.iter().map(|s| connected(s, FIRST_CONNECTION))).await;
    let failed: Vec<String> = fresh
        .iter()
        .zip(results)
        .filter_map(|(s, r)| {
            let why = r.err()?;
            Some(format!(
                "upstream {:?} did not start: {why}",
                s.upstream.name
            ))
        })
        .collect();
    if failed.is_empty() {
        return Ok(fresh);
    }
    futures::future::join_all(fresh.iter().map(|s| s.pool.retire())).await;
    Err(Error::Reload(format!(
        "{}; nothing was changed",
        failed.join("; ")
    )))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn running(upstreams: &[Upstream]) -> BTreeMap<String, Entry> {
        upstreams
            .iter()
            .map(|u| (u.name.clone(), Entry::idle(u.clone())))
            .collect()
    }

    fn config(upstreams: &[Upstream]) -> Config {
        upstreams
            .iter()
            .cloned()
            .fold(Config::default(), Config::with_upstream)
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn upstreams_are_added_removed_restarted_or_left_by_name() {
        let token = std::env::temp_dir().join(format!("oxmcp-reload-{}", std::process::id()));
        std::fs::write(&token, "one").unwrap();
        let mut web = Upstream::url("web", "http://127.0.0.1:1/mcp");
        web.auth = Some(crate::UpstreamAuth {
            bearer_file: Some(token.clone()),
            ..Default::default()
        });
        let keep = Upstream::command("keep", ["srv", "--a"]);
        let tweak = Upstream::command("tweak", ["srv"]);
        let gone = Upstream::command("gone", ["srv"]);
        let old = running(&[keep.clone(), tweak.clone(), gone, web.clone()]);

        // Same settings (a clone): nothing to do.
        let same = config(&[keep.clone(), tweak.clone(), web.clone()]);
        let p = plan(&old, &same);
        assert_eq!(p.unchanged, names(&["keep", "tweak", "web"]));
        assert_eq!(p.removed, names(&["gone"]));
        assert!(p.added.is_empty() && p.changed.is_empty());

        // Any field that differs restarts; a new name is added, in the new order.
        let mut tweaked = tweak.clone();
        tweaked.deny_tools = names(&["x"]);
        let new = config(&[
            Upstream::command("new", ["srv"]),
            tweaked,
            keep.clone().with_env("A", "1"),
            web.clone(),
        ]);
        let p = plan(&old, &new);
        assert_eq!(
            p,
            Plan {
                added: names(&["new"]),
                removed: names(&["gone"]),
                changed: names(&["tweak", "keep"]),
                unchanged: names(&["web"]),
            }
        );

        // The same settings, but the token file now holds another token: restarted.
        std::fs::write(&token, "two").unwrap();
        let p = plan(&old, &config(&[keep, tweak, web]));
        assert_eq!(p.changed, names(&["web"]));
        assert_eq!(p.unchanged, names(&["keep", "tweak"]));
        let _ = std::fs::remove_file(&token);
    }

    #[test]
    fn the_report_says_what_changed_in_one_line() {
        let mut r = ReloadReport::default();
        assert_eq!(r.to_string(), "no upstream changed");
        r.added = names(&["a", "b"]);
        r.removed = names(&["c"]);
        r.restarted = names(&["d"]);
        r.unchanged = names(&["e"]);
        assert_eq!(r.to_string(), "added a, b; removed c; restarted d");
        r.not_applied = names(&["max_subscriptions"]);
        assert_eq!(
            r.to_string(),
            "added a, b; removed c; restarted d; not applied until a restart: max_subscriptions"
        );
    }
}
