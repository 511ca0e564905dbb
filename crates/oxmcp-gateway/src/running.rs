//! The upstreams as they run: the [`Set`] requests are routed through (swapped whole by a
//! reload, read without a lock held across any await), each upstream's start ([`launch`]) and
//! the tasks that follow it ([`follow`]), and what a reload or a stop needs to take it away
//! again ([`Entry`]).

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use oxmcp_client::{Heartbeat, Status, Supervised, SupervisorConfig};
use oxmcp_server::Server;
use parking_lot::RwLock;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::{
    Catalog, Config, EVENT_QUEUE, Event, Holder, Kind, Link, Pool, Subscriptions, Upstream,
    connector, keep_subscribed, pass_on, track,
};

/// The upstreams requests are routed to: each one's link and connections.
#[derive(Default)]
pub(super) struct Set {
    pub(super) links: BTreeMap<String, Arc<Link>>,
    pub(super) pools: BTreeMap<String, Arc<Pool>>,
    /// Their names in the config's order.
    pub(super) order: Vec<String>,
}

impl Set {
    /// Adds an upstream (after those added before it).
    pub(super) fn insert(&mut self, pool: &Arc<Pool>) {
        let name = pool.link.name.clone();
        self.links.insert(name.clone(), pool.link.clone());
        self.pools.insert(name.clone(), pool.clone());
        self.order.push(name);
    }

    /// Each upstream's name and supervised connection, in the config's order.
    pub(super) fn named(&self) -> Vec<(String, Supervised)> {
        self.order
            .iter()
            .filter_map(|name| Some((name.clone(), self.pools.get(name)?.primary.clone())))
            .collect()
    }

    /// The supervised connection of each upstream, in the config's order.
    pub(super) fn supervised(&self) -> Vec<Supervised> {
        self.order
            .iter()
            .filter_map(|name| self.pools.get(name))
            .map(|pool| pool.primary.clone())
            .collect()
    }
}

/// The current [`Set`]: a request takes it (one read lock, one `Arc` clone) and keeps what it
/// took for as long as it runs; a reload puts a new one in its place.
#[derive(Default)]
pub(super) struct Upstreams(RwLock<Arc<Set>>);

impl Upstreams {
    /// The set as it is now.
    pub(super) fn now(&self) -> Arc<Set> {
        self.0.read().clone()
    }

    /// Routes every request from now on through `set`.
    pub(super) fn replace(&self, set: Set) {
        *self.0.write() = Arc::new(set);
    }
}

/// An upstream being connected to, not yet followed (no lists read, nothing passed on).
pub(super) struct Started {
    pub(super) upstream: Upstream,
    /// A digest of its credential files as read when it started.
    pub(super) secrets: u64,
    pub(super) pool: Arc<Pool>,
    events: mpsc::Receiver<Event>,
}

/// Starts supervising `upstream` with `config`'s settings: its link (with `subscriptions`,
/// those of the upstream it replaces, or none yet) and its pool of connections.
pub(super) fn launch(
    upstream: Upstream,
    config: &Config,
    subscriptions: Option<Arc<Subscriptions>>,
) -> Started {
    let (events, rx) = mpsc::channel(EVENT_QUEUE);
    let share = config.max_subscriptions_per_principal;
    let link = Arc::new(Link {
        name: upstream.name.clone(),
        events,
        subscriptions: subscriptions.unwrap_or_else(|| Arc::new(Subscriptions::new(share))),
        bare: config.bridge.is_some(),
    });
    let beat = Duration::from_millis(config.heartbeat_ms.max(10));
    let holder = Arc::new(Holder::default());
    let sup = Supervised::start(
        connector(upstream.clone(), link.clone(), holder.clone()),
        SupervisorConfig::default().heartbeat(Some(Heartbeat {
            interval: beat,
            timeout: beat.min(Duration::from_secs(5)),
            misses: 2,
        })),
    );
    let pool = Pool::new(
        link,
        upstream.clone(),
        sup,
        holder,
        config.max_interrupted_per_principal,
    );
    Started {
        secrets: secrets(&upstream),
        upstream,
        pool,
        events: rx,
    }
}

/// A digest of the files holding `upstream`'s credentials (`bearer_file`,
/// `client_secret_file`), as they read now: a reload restarts an upstream whose token changed.
pub(super) fn secrets(upstream: &Upstream) -> u64 {
    let mut digest = std::hash::DefaultHasher::new();
    if let Some(auth) = &upstream.auth {
        for path in [&auth.bearer_file, &auth.client_secret_file]
            .into_iter()
            .flatten()
        {
            std::fs::read(path).ok().hash(&mut digest);
        }
    }
    digest.finish()
}

/// Waits for the first connection to `started`: `Err` with why it failed (its first attempt
/// failed, or it did not connect within `limit`).
pub(super) async fn connected(started: &Started, limit: Duration) -> Result<(), String> {
    let mut status = started.pool.primary.watch();
    let first = async {
        loop {
            let now = status.borrow_and_update().clone();
            match now {
                Status::Up { .. } => return Ok(()),
                Status::Restarting { attempt: 0, .. } => {}
                Status::Restarting { reason, .. } | Status::CrashLoop { reason, .. } => {
                    return Err(reason);
                }
                Status::Stopped => return Err("stopped".to_owned()),
            }
            if status.changed().await.is_err() {
                return Err("stopped".to_owned());
            }
        }
    };
    tokio::time::timeout(limit, first)
        .await
        .unwrap_or_else(|_| Err(format!("not connected within {} s", limit.as_secs())))
}

/// A running upstream as a reload sees it: its config, and the tasks following it.
pub(super) struct Entry {
    pub(super) upstream: Upstream,
    pub(super) secrets: u64,
    tasks: Vec<JoinHandle<()>>,
}

impl Entry {
    /// An entry with no tasks (the diff's tests).
    #[cfg(test)]
    pub(super) fn idle(upstream: Upstream) -> Entry {
        Entry {
            secrets: secrets(&upstream),
            upstream,
            tasks: Vec::new(),
        }
    }

    /// Ends the tasks following the upstream (lists, notifications, subscriptions), and waits
    /// until none runs: nothing of this upstream touches the lists any more.
    pub(super) async fn halt(self) {
        for task in &self.tasks {
            task.abort();
        }
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// Follows a started upstream: its notifications passed on to `server`'s clients, its
/// subscriptions kept, its lists kept in `catalog`. The receiver hears once its first
/// connection succeeded (and its lists are in) or failed.
pub(super) fn follow(
    server: &Server,
    catalog: &Arc<Catalog>,
    started: Started,
) -> (Entry, oneshot::Receiver<()>) {
    let Started {
        upstream,
        secrets,
        pool,
        events,
    } = started;
    let (changed_tx, changed_rx) = mpsc::channel::<Kind>(16);
    let (ready_tx, ready_rx) = oneshot::channel();
    let link = pool.link.clone();
    let tasks = vec![
        tokio::spawn(pass_on(server.clone(), link.clone(), events, changed_tx)),
        tokio::spawn(keep_subscribed(link, pool.primary.clone())),
        tokio::spawn(track(
            server.clone(),
            catalog.clone(),
            upstream.clone(),
            pool,
            changed_rx,
            ready_tx,
        )),
    ];
    let entry = Entry {
        upstream,
        secrets,
        tasks,
    };
    (entry, ready_rx)
}

/// What a gateway runs, changed only by a reload or a stop (one at a time).
pub(super) struct Running {
    /// The config served (its settings; the upstreams are `entries`).
    pub(super) config: Config,
    pub(super) entries: BTreeMap<String, Entry>,
    /// [`Gateway::stop`](super::Gateway::stop) was called: nothing more is started.
    pub(super) stopped: bool,
}
