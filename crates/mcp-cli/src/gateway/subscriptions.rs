//! The resources clients subscribe to through the gateway, per upstream: each URI is counted
//! by the subscriptions that hold it (a client's `resources/subscribe`, or a 2026-07-28 listen
//! naming it), subscribed upstream while one does, and unsubscribed upstream when the last one
//! is let go (unsubscribed, or its client's session ended).
//!
//! Clients change the counts at once (the server's hooks); one task per upstream then brings the
//! upstream in line, one URI at a time, and again from scratch after each reconnection. What
//! it has to do is a set of URIs, not a queue of events, so nothing is dropped under a flood
//! and memory stays bounded by the URIs held.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use parking_lot::Mutex;

use mcp_client::{Client, Status, Supervised};
use mcp_jsonrpc::ErrorObject;
use tokio::sync::Notify;

use super::*;

/// Subscriptions held through the gateway on one upstream.
#[derive(Default)]
pub(super) struct Subscriptions {
    state: Mutex<State>,
    changed: Notify,
}

#[derive(Default)]
struct State {
    /// Holders per upstream URI.
    held: HashMap<String, usize>,
    /// URIs subscribed to on the current upstream connection.
    upstream: HashSet<String>,
    /// URIs whose upstream subscription may not match `held`.
    dirty: BTreeSet<String>,
}

impl Subscriptions {
    fn lock(&self) -> parking_lot::MutexGuard<'_, State> {
        self.state.lock()
    }

    /// One more holder of `uri`; refused when [`MAX_SUBSCRIPTIONS`] distinct URIs are held on
    /// this upstream already.
    pub(super) fn hold(&self, upstream: &str, uri: &str) -> Result<(), ErrorObject> {
        let mut st = self.lock();
        if let Some(n) = st.held.get_mut(uri) {
            *n += 1;
            return Ok(());
        }
        if st.held.len() >= MAX_SUBSCRIPTIONS {
            return Err(ErrorObject::invalid_params(format!(
                "Too many subscriptions: the gateway holds {MAX_SUBSCRIPTIONS} on upstream {upstream}"
            ))
            .with_data(serde_json::json!({ "limit": MAX_SUBSCRIPTIONS })));
        }
        st.held.insert(uri.to_owned(), 1);
        st.dirty.insert(uri.to_owned());
        drop(st);
        self.changed.notify_one();
        Ok(())
    }

    /// One holder of `uri` fewer.
    pub(super) fn release(&self, uri: &str) {
        let mut st = self.lock();
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

/// Keeps an upstream's subscriptions in line with what clients hold, across reconnections.
pub(super) async fn keep_subscribed(link: Arc<Link>, sup: Supervised) {
    let mut status = sup.watch();
    let mut generation = 0;
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
                link.subscriptions.reconnected();
            }
            link.subscriptions.sync(&link.name, &client).await;
        }
        tokio::select! {
            r = status.changed() => if r.is_err() { return },
            () = link.subscriptions.changed.notified() => {}
        }
    }
}
