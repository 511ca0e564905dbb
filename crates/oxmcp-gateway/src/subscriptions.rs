//! The resources clients subscribe to through the gateway, per upstream: each URI is counted
//! by the subscriptions that hold it (a client's `resources/subscribe`, or a 2026-07-28 listen
//! naming it), subscribed upstream while one does, and unsubscribed upstream when the last one
//! is let go (unsubscribed, or its client's session ended).
//!
//! The upstream's [`MAX_SUBSCRIPTIONS`] distinct URIs are shared out per principal (all
//! unauthenticated clients are one): each may hold at most its share of distinct URIs, so
//! one that subscribes all it can, from however many sessions, leaves room for the others.
//! (Only URIs the upstream lists, or that match a template it lists, get this far.)
//!
//! Clients change the counts at once (the server's hooks); one task per upstream then brings the
//! upstream in line, one URI at a time, and again from scratch after each reconnection. What
//! it has to do is a set of URIs, not a queue of events, so nothing is dropped under a flood
//! and memory stays bounded by the URIs held. A 2026-07-28 upstream, which has no
//! `resources/subscribe`, holds one `subscriptions/listen` request naming them all (and the
//! list changes it declares), opened again whenever the set changes.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

use oxmcp_client::{Client, ServerEvent, Status, Supervised};
use oxmcp_jsonrpc::ErrorObject;
use tokio::sync::Notify;

use super::{Event, Kind, Link, MAX_SUBSCRIPTIONS};

/// Subscriptions held through the gateway on one upstream.
pub(super) struct Subscriptions {
    state: Mutex<State>,
    changed: Notify,
    /// Distinct URIs one principal may hold (a reload may change it).
    share: AtomicUsize,
}

#[derive(Default)]
struct State {
    /// Holders per upstream URI.
    held: HashMap<String, usize>,
    /// Holders per upstream URI, per principal (`None`: unauthenticated clients).
    by_principal: HashMap<Option<String>, HashMap<String, usize>>,
    /// URIs subscribed to on the current upstream connection.
    upstream: HashSet<String>,
    /// URIs whose upstream subscription may not match `held`.
    dirty: BTreeSet<String>,
}

impl Subscriptions {
    /// No subscriptions yet; each principal may hold `share` distinct URIs.
    pub(super) fn new(share: usize) -> Self {
        Self {
            state: Mutex::default(),
            changed: Notify::new(),
            share: AtomicUsize::new(share),
        }
    }

    /// From now on each principal may hold `share` distinct URIs (what it holds beyond that
    /// stays held; only new ones are refused).
    pub(super) fn set_share(&self, share: usize) {
        self.share.store(share, Ordering::Relaxed);
    }

    fn lock(&self) -> parking_lot::MutexGuard<'_, State> {
        self.state.lock()
    }

    /// One more holder of `uri` for `principal`; refused (-32602) when the principal holds its
    /// share of distinct URIs on this upstream, or the gateway [`MAX_SUBSCRIPTIONS`] in all.
    pub(super) fn hold(
        &self,
        upstream: &str,
        principal: Option<&str>,
        uri: &str,
    ) -> Result<(), ErrorObject> {
        let key = principal.map(str::to_owned);
        let share = self.share.load(Ordering::Relaxed);
        let mut st = self.lock();
        let mine = st.by_principal.get(&key);
        let again = mine.is_some_and(|m| m.contains_key(uri));
        let new = !st.held.contains_key(uri);
        if !again && mine.map_or(0, HashMap::len) >= share {
            let who = principal.map_or("unauthenticated clients".to_owned(), |p| format!("{p:?}"));
            let what = format!("{who} hold {share} (each principal's share)");
            return Err(too_many(upstream, &what, share));
        }
        if new && st.held.len() >= MAX_SUBSCRIPTIONS {
            let what = format!("the gateway holds {MAX_SUBSCRIPTIONS}");
            return Err(too_many(upstream, &what, MAX_SUBSCRIPTIONS));
        }
        let mine = st.by_principal.entry(key).or_default();
        *mine.entry(uri.to_owned()).or_default() += 1;
        *st.held.entry(uri.to_owned()).or_default() += 1;
        if new {
            st.dirty.insert(uri.to_owned());
            drop(st);
            self.changed.notify_one();
        }
        Ok(())
    }

    /// One holder of `uri` for `principal` fewer.
    pub(super) fn release(&self, principal: Option<&str>, uri: &str) {
        let mut st = self.lock();
        let key = principal.map(str::to_owned);
        let Some(mine) = st.by_principal.get_mut(&key) else {
            return;
        };
        let Some(n) = mine.get_mut(uri) else {
            return;
        };
        *n -= 1;
        if *n == 0 {
            mine.remove(uri);
            if mine.is_empty() {
                st.by_principal.remove(&key);
            }
        }
        let Some(n) = st.held.get_mut(uri) else {
            return;
        };
        *n -= 1;
        if *n == 0 {
            st.held.remove(uri);
            st.dirty.insert(uri.to_owned());
            drop(st);
            self.changed.notify_one();
        }
    }

    /// Starts over on a new upstream connection: it holds nothing yet.
    fn reconnected(&self) {
        let mut st = self.lock();
        st.upstream.clear();
        st.dirty = st.held.keys().cloned().collect();
    }

    /// The next URI to fix upstream: whether to subscribe (`true`) or unsubscribe.
    fn next(&self) -> Option<(String, bool)> {
        let mut st = self.lock();
        while let Some(uri) = st.dirty.pop_first() {
            let (want, has) = (st.held.contains_key(&uri), st.upstream.contains(&uri));
            if want != has {
                return Some((uri, want));
            }
        }
        None
    }

    fn done(&self, uri: String, subscribed: bool) {
        let mut st = self.lock();
        if subscribed {
            st.upstream.insert(uri);
        } else {
            st.upstream.remove(&uri);
        }
    }

    /// Makes the upstream's subscriptions what clients hold, until nothing is left to do.
    async fn sync(&self, upstream: &str, client: &Client) {
        let supported = client
            .server_capabilities()
            .resources
            .as_ref()
            .is_some_and(|r| r.subscribe == Some(true))
            && !client.is_modern();
        while let Some((uri, subscribe)) = self.next() {
            if !supported {
                // Nothing to do upstream; clients still get the updates the gateway sees.
                self.done(uri, subscribe);
                continue;
            }
            let result = if subscribe {
                client.subscribe(&uri).await
            } else {
                client.unsubscribe(&uri).await
            };
            match result {
                Ok(()) => self.done(uri, subscribe),
                Err(e) => {
                    let what = if subscribe {
                        "subscribing to"
                    } else {
                        "unsubscribing from"
                    };
                    tracing::warn!(upstream, "{what} {uri:?} failed: {e}");
                    // An unsubscription that failed leaves nothing to undo on our side.
                    if !subscribe {
                        self.done(uri, false);
                    }
                }
            }
        }
    }
}

/// -32602 for a subscription over a limit (`what` says which).
fn too_many(upstream: &str, what: &str, limit: usize) -> ErrorObject {
    ErrorObject::invalid_params(format!(
        "Too many subscriptions: {what} on upstream {upstream}"
    ))
    .with_data(serde_json::json!({ "limit": limit }))
}

/// The `subscriptions/listen` request held on a 2026-07-28 upstream: the URIs it names, and
/// the task passing its notifications on (aborted, which cancels the request, when dropped).
struct Listening {
    uris: BTreeSet<String>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Subscriptions {
    /// A 2026-07-28 upstream has no `resources/subscribe`: one `subscriptions/listen` request
    /// names every URI held (and the list changes it declares), opened again when the set
    /// changes. Its notifications are passed on as the primary connection's would be.
    fn sync_modern(&self, link: &Arc<Link>, client: &Arc<Client>, current: &mut Option<Listening>) {
        let held: BTreeSet<String> = {
            let mut st = self.lock();
            st.dirty.clear();
            st.upstream = st.held.keys().cloned().collect();
            st.upstream.iter().cloned().collect()
        };
        if current
            .as_ref()
            .is_some_and(|l| l.uris == held && !l.task.is_finished())
        {
            return;
        }
        *current = None;
        let caps = client.server_capabilities();
        let filter = oxmcp_types::ListenFilter::default()
            .with_tools_list_changed(caps.tools.as_ref().map(|_| true))
            .with_prompts_list_changed(caps.prompts.as_ref().map(|_| true))
            .with_resources_list_changed(caps.resources.as_ref().map(|_| true))
            .with_resource_subscriptions(
                (!held.is_empty()).then(|| held.iter().cloned().collect()),
            );
        let mut subscription = match client.listen(filter) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(upstream = %link.name, "subscriptions/listen failed: {e}");
                return;
            }
        };
        let to = link.clone();
        let task = tokio::spawn(async move {
            while let Some(event) = subscription.next().await {
                match event {
                    ServerEvent::ResourceUpdated(uri) => to.send(Event::Updated(uri)),
                    ServerEvent::ToolsChanged => to.send(Event::Changed(Kind::Tools)),
                    ServerEvent::PromptsChanged => to.send(Event::Changed(Kind::Prompts)),
                    ServerEvent::ResourcesChanged => to.send(Event::Changed(Kind::Resources)),
                    _ => {}
                }
            }
        });
        *current = Some(Listening { uris: held, task });
    }
}

/// Keeps an upstream's subscriptions in line with what clients hold, across reconnections.
pub(super) async fn keep_subscribed(link: Arc<Link>, sup: Supervised) {
    let mut status = sup.watch();
    let mut generation = 0;
    let mut listening = None;
    loop {
        let up = match &*status.borrow_and_update() {
            Status::Up {
                client,
                generation: g,
            } => Some((client.clone(), *g)),
            Status::Stopped => return,
            _ => None,
        };
        if let Some((client, g)) = up {
            if g != generation {
                generation = g;
                listening = None;
                link.subscriptions.reconnected();
            }
            if client.is_modern() {
                link.subscriptions
                    .sync_modern(&link, &client, &mut listening);
            } else {
                link.subscriptions.sync(&link.name, &client).await;
            }
        }
        tokio::select! {
            r = status.changed() => if r.is_err() { return },
            () = link.subscriptions.changed.notified() => {}
        }
    }
}
