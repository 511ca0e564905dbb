//! What the inspector's pages share: the connected client, the traffic recorded so far, the
//! requests the server is waiting on the person at the page to answer, the roots the page
//! configured, and the tool calls in flight (so that a page can cancel one).
//!
//! Everything a page is told goes out as one JSON text per event, to every page at once;
//! the answer to a page's own operation goes to that page only (see [`super::web`]).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use oxmcp_client::Client;
use oxmcp_jsonrpc::ErrorObject;
use oxmcp_types::Root;
use parking_lot::Mutex;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::sync::{broadcast, oneshot};

/// The most traffic entries kept for a page that opens (or reloads) later.
const TRAFFIC_ENTRIES: usize = 10_000;
/// The most bytes of traffic kept for it.
const TRAFFIC_BYTES: usize = 64 * 1024 * 1024;
/// Events waiting for a slow page; past this, the page is told how many it missed.
const EVENT_QUEUE: usize = 4096;
/// How long the server's request waits for the person at the page.
const ASK_TIMEOUT: Duration = Duration::from_secs(600);

/// A request of the server (sampling, elicitation) waiting for the person at the page.
struct Ask {
    /// The event that showed it, sent again to a page that opens later.
    event: Arc<str>,
    answer: oneshot::Sender<Result<Value, ErrorObject>>,
}

/// Takes a request of the server off the pages when dropped.
struct Shown<'a> {
    hub: &'a Hub,
    id: u64,
}

impl Drop for Shown<'_> {
    fn drop(&mut self) {
        self.hub.asks.lock().remove(&self.id);
        self.hub.emit(&json!({"ev": "asked", "ask": self.id}));
    }
}

/// Traffic kept for pages that open later, bounded by entries and bytes.
#[derive(Default)]
struct Traffic {
    entries: VecDeque<Arc<str>>,
    bytes: usize,
    seq: u64,
}

/// One recorded message, as the pages get it.
#[derive(serde::Serialize)]
struct TrafficEvent<'a> {
    ev: &'static str,
    n: u64,
    dir: &'a str,
    t: f64,
    size: usize,
    msg: Option<&'a RawValue>,
}

/// The inspector's shared state.
pub(crate) struct Hub {
    events: broadcast::Sender<Arc<str>>,
    traffic: Mutex<Traffic>,
    client: tokio::sync::RwLock<Option<Arc<Client>>>,
    /// Why the last connection attempt failed (shown by a page that opens later).
    failure: Mutex<Option<String>>,
    asks: Mutex<BTreeMap<u64, Ask>>,
    roots: Mutex<Vec<Root>>,
    /// The tool calls the pages have running.
    pub(crate) calls: super::calls::Calls,
    next: AtomicU64,
    /// The number of the current connection (events of an older one are dropped).
    generation: AtomicU64,
    started: Instant,
    /// What the page shows as the target (the URL, or the command's words).
    pub(crate) target: String,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl Hub {
    pub(crate) fn new(target: String, roots: Vec<Root>) -> Arc<Self> {
        let (events, _) = broadcast::channel(EVENT_QUEUE);
        Arc::new(Self {
            events,
            traffic: Mutex::new(Traffic::default()),
            client: tokio::sync::RwLock::new(None),
            failure: Mutex::new(None),
            asks: Mutex::new(BTreeMap::new()),
            roots: Mutex::new(roots),
            calls: super::calls::Calls::default(),
            next: AtomicU64::new(1),
            generation: AtomicU64::new(0),
            started: Instant::now(),
            target,
        })
    }

    /// Sends an event to every open page.
    pub(crate) fn emit(&self, event: &Value) {
        let _ = self.events.send(Arc::from(event.to_string()));
    }

    /// The events from now on, for a page that just opened.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<str>> {
        self.events.subscribe()
    }

    /// Milliseconds since the inspector started.
    pub(crate) fn now_ms(&self) -> f64 {
        self.started.elapsed().as_secs_f64() * 1000.0
    }

    /// Records one JSON-RPC message (`dir`: "in" from the server, "out" to it) and shows it.
    pub(crate) fn record(&self, dir: &str, text: &str) {
        // The message goes into the event as it is (checked to be JSON, not parsed into a
        // tree); what is not JSON goes as a string.
        let msg = RawValue::from_string(text.to_owned())
            .or_else(|_| RawValue::from_string(json!({ "unparsable": text }).to_string()));
        let mut traffic = self.traffic.lock();
        traffic.seq += 1;
        let event = TrafficEvent {
            ev: "traffic",
            n: traffic.seq,
            dir,
            t: self.now_ms(),
            size: text.len(),
            msg: msg.as_deref().ok(),
        };
        let event: Arc<str> = Arc::from(serde_json::to_string(&event).unwrap_or_default());
        traffic.bytes += event.len();
        traffic.entries.push_back(event.clone());
        // The newest is kept whatever its size.
        while traffic.entries.len() > 1
            && (traffic.entries.len() > TRAFFIC_ENTRIES || traffic.bytes > TRAFFIC_BYTES)
        {
            match traffic.entries.pop_front() {
                Some(old) => traffic.bytes -= old.len(),
                None => break,
            }
        }
        // Sent under the lock, so that pages get the messages in their order.
        let _ = self.events.send(event);
        drop(traffic);
    }

    /// What a page that opens now must be shown first: the traffic so far, then the
    /// requests still waiting for an answer.
    pub(crate) fn history(&self) -> Vec<Arc<str>> {
        let mut out: Vec<Arc<str>> = self.traffic.lock().entries.iter().cloned().collect();
        out.extend(self.asks.lock().values().map(|a| a.event.clone()));
        out
    }

    /// The connected client, if there is one.
    pub(crate) async fn client(&self) -> Option<Arc<Client>> {
        self.client.read().await.clone()
    }

    /// Puts `client` in place (closing the one before), or records why there is none.
    pub(crate) async fn set_client(&self, client: Result<Client, String>) {
        let old = match client {
            Ok(c) => {
                *self.failure.lock() = None;
                self.client.write().await.replace(Arc::new(c))
            }
            Err(why) => {
                *self.failure.lock() = Some(why);
                self.client.write().await.take()
            }
        };
        if let Some(old) = old {
            match Arc::try_unwrap(old) {
                Ok(c) => {
                    c.close().await;
                }
                Err(shared) => {
                    shared.close_transport().await;
                }
            }
        }
    }

    /// Why the inspector is not connected, if it tried and failed.
    pub(crate) fn failure(&self) -> Option<String> {
        self.failure.lock().clone()
    }

    /// Shows the server's request to the page and waits for the person's answer.
    pub(crate) async fn ask(&self, kind: &str, params: Value) -> Result<Value, ErrorObject> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        let event: Arc<str> =
            Arc::from(json!({"ev": "ask", "ask": id, "kind": kind, "params": params}).to_string());
        self.asks.lock().insert(
            id,
            Ask {
                event: event.clone(),
                answer: tx,
            },
        );
        let _ = self.events.send(event);
        // However the wait ends (answered, timed out, or the server's request cancelled and
        // this future dropped), the pages stop showing the request.
        let _shown = Shown { hub: self, id };
        let answer = tokio::time::timeout(ASK_TIMEOUT, rx).await;
        match answer {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(ErrorObject::internal("the inspector closed")),
            Err(_) => Err(ErrorObject::internal(
                "nobody answered at the inspector's page within 10 minutes",
            )),
        }
    }

    /// The page's answer to request `id`; false when no such request waits.
    pub(crate) fn answer(&self, id: u64, answer: Result<Value, ErrorObject>) -> bool {
        match self.asks.lock().remove(&id) {
            Some(ask) => ask.answer.send(answer).is_ok(),
            None => false,
        }
    }

    pub(crate) fn roots(&self) -> Vec<Root> {
        self.roots.lock().clone()
    }

    pub(crate) fn set_roots(&self, roots: Vec<Root>) {
        *self.roots.lock() = roots;
    }

    /// A number for a page that opened, or for a new connection: never the same twice.
    pub(crate) fn next_number(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// Starts a new connection: its number.
    pub(crate) fn new_generation(&self) -> u64 {
        self.generation.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Whether connection `generation` is the current one.
    pub(crate) fn is_current(&self, generation: u64) -> bool {
        self.generation.load(Ordering::Relaxed) == generation
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn traffic_is_kept_within_its_bound_and_asks_wait_for_their_answer() {
        let hub = Hub::new("t".into(), vec![]);
        for i in 0..TRAFFIC_ENTRIES + 10 {
            hub.record(
                "out",
                &format!("{{\"jsonrpc\":\"2.0\",\"method\":\"m{i}\"}}"),
            );
        }
        let history = hub.history();
        assert_eq!(history.len(), TRAFFIC_ENTRIES);
        assert!(history[0].contains("\"m10\""), "the oldest went first");
        hub.record("in", "not json");
        assert!(hub.history().last().expect("one").contains("unparsable"));
        let asking = hub.clone();
        let ask = tokio::spawn(async move { asking.ask("sampling", json!({"q": 1})).await });
        while hub.asks.lock().is_empty() {
            tokio::task::yield_now().await;
        }
        let id = *hub.asks.lock().keys().next().expect("an ask");
        assert!(hub.history().last().expect("the ask").contains("\"ask\""));
        assert!(hub.answer(id, Ok(json!({"a": 2}))));
        assert!(!hub.answer(id, Ok(json!({}))), "answered once");
        assert_eq!(ask.await.expect("joined").expect("answer"), json!({"a": 2}));
        // A request the server gave up on (its future dropped) leaves the pages.
        let mut events = hub.subscribe();
        let asking = hub.clone();
        let dropped = tokio::spawn(async move { asking.ask("elicitation", json!({})).await });
        while hub.asks.lock().is_empty() {
            tokio::task::yield_now().await;
        }
        dropped.abort();
        let _ = dropped.await;
        assert!(hub.asks.lock().is_empty(), "forgotten");
        let mut asked = false;
        while let Ok(e) = events.try_recv() {
            asked |= e.contains("\"asked\"");
        }
        assert!(asked, "the pages were told");
    }
}
