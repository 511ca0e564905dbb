//! One HTTP session ([`HttpSession`], the transport's; not the protocol's session of
//! `oxmcp_server`): its engine connection, and the SSE streams its messages go on.
//!
//! Every outgoing message is routed to exactly one stream: a response, and whatever a handler
//! sends while working on a request, go on the stream of the POST that carried the request;
//! everything else goes on the standalone GET stream (or is dropped when there is none).
//! Every event is written to the endpoint's event log (through its
//! [`SessionBackend`]) before it is sent, so a client can resume a stream with `Last-Event-ID`; resumption is looked up within the session only, so one
//! session can never resume another's stream.

mod by_id;
mod changes;
mod id;
mod link;
mod streams;

use std::sync::Arc;
use std::time::Instant;

use oxmcp_jsonrpc::{Inbound, Message, RequestId};
use oxmcp_types::ProtocolVersion;
use parking_lot::Mutex;
use tokio::sync::mpsc;

use by_id::ById;
pub(crate) use id::random_hex;
use link::Link;
use streams::Streams;
pub(crate) use streams::{Event, Routed};

use crate::server::backend::SessionBackend;

/// Whether a message shows the client finished the handshake: `initialized`, or any request
/// but `initialize` and `ping` (a session that shows neither expires by the handshake timeout).
pub(crate) fn handshake_done(m: &Message) -> bool {
    match m {
        Message::Notification(n) => n.method == "notifications/initialized",
        Message::Request(r) => r.method != "initialize" && r.method != "ping",
        Message::Response(_) => false,
    }
}

/// An HTTP session.
pub(crate) struct HttpSession {
    pub(crate) id: String,
    /// The engine connection: its input is dropped (closing the engine) when the session
    /// ends or is parked.
    link: Mutex<Link>,
    /// Where the service keeps the session's state while it is parked.
    pub(crate) park: oxmcp_engine::ParkSlot,
    /// The endpoint, to start the engine of a parked session again.
    endpoint: std::sync::Weak<crate::server::endpoint::Inner>,
    /// The id the next engine connection numbers its requests to the client from (the
    /// parked one's next).
    next_request: std::sync::atomic::AtomicI64,
    version: Mutex<ProtocolVersion>,
    streams: Mutex<Streams>,
    /// Stream tokens: unique within the session (resumption is scoped to the session, whose
    /// id is the secret).
    next_stream: std::sync::atomic::AtomicU64,
    last_seen: Mutex<Instant>,
    /// The endpoint's backend: where events are logged, and what is shared beyond here.
    backend: Arc<dyn SessionBackend>,
    /// Requests the transport itself sent the engine (replaying the client's `initialize`
    /// and state on an instance restoring the session): their answers go nowhere.
    swallow: Mutex<ById<()>>,
    /// State changes asked for and not answered yet (store-backed sessions only).
    changes: Mutex<changes::Changes>,
    /// The record saved for other instances once `initialize` succeeds (store-backed
    /// sessions only).
    /// (Boxed: it is there only until it is saved.)
    pub(crate) record: Mutex<Option<Box<oxmcp_store::SessionRecord>>>,
    /// Serialises routing and resumption, so a resume neither misses nor repeats an event.
    order: tokio::sync::Mutex<()>,
    /// Who opened the session: the key its per-client limits count under.
    pub(crate) client: Option<String>,
    /// The verified principal that opened it: only it may use the session.
    pub(crate) owner: Option<String>,
    /// When the session was made.
    pub(crate) created: Instant,
    /// `notifications/initialized` (or a first request after `initialize`) has been seen.
    initialized: std::sync::atomic::AtomicBool,
    /// Until when this instance trusts that the shared store still has the session, and
    /// under which of the store's bus connections (store-backed sessions only; 0: ask).
    pub(crate) store_lease: std::sync::atomic::AtomicU64,
    /// Messages fed to the current engine connection's input (compared with what it
    /// handled).
    fed: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for HttpSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSession")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// What resuming a stream gives: events to replay, then (if the stream is still open) a live
/// feed of the rest.
pub(crate) struct Resumed {
    pub(crate) replay: Vec<Event>,
    pub(crate) live: Option<mpsc::Receiver<Event>>,
}

impl HttpSession {
    /// A session with no engine connection yet ([`HttpSession::attach`] gives it one);
    /// `endpoint` starts its engine again when it was parked.
    pub(crate) fn new(
        id: String,
        version: ProtocolVersion,
        backend: Arc<dyn SessionBackend>,
        client: Option<String>,
        owner: Option<String>,
        first_request_id: i64,
        endpoint: std::sync::Weak<crate::server::endpoint::Inner>,
    ) -> Arc<Self> {
        Arc::new(Self {
            id,
            link: Mutex::new(Link::Starting),
            park: oxmcp_engine::ParkSlot::new(),
            endpoint,
            next_request: std::sync::atomic::AtomicI64::new(first_request_id),
            version: Mutex::new(version),
            streams: Mutex::new(Streams::default()),
            next_stream: std::sync::atomic::AtomicU64::new(1),
            last_seen: Mutex::new(Instant::now()),
            backend,
            swallow: Mutex::new(ById::default()),
            changes: Mutex::new(changes::Changes::default()),
            record: Mutex::new(None),
            order: tokio::sync::Mutex::new(()),
            client,
            owner,
            created: Instant::now(),
            initialized: std::sync::atomic::AtomicBool::new(false),
            store_lease: std::sync::atomic::AtomicU64::new(0),
            fed: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// Marks the handshake done (the session no longer expires by the initialize timeout).
    /// True the first time.
    pub(crate) fn mark_initialized(&self) -> bool {
        !self
            .initialized
            .swap(true, std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether the handshake is done.
    pub(crate) fn is_initialized(&self) -> bool {
        self.initialized.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn new_token(&self) -> String {
        let n = self
            .next_stream
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("{}{n}", self.backend.stream_prefix())
    }

    /// Hands the engine a request of the transport's own (`method`, `params`), whose answer
    /// goes nowhere. False once the session is closed.
    pub(crate) async fn feed_own(
        self: &Arc<Self>,
        id: RequestId,
        method: &str,
        params: serde_json::Value,
    ) -> bool {
        self.swallow.lock().insert(id.clone(), ());
        let request = serde_json::json!({
            "jsonrpc": "2.0", "id": id.to_value(), "method": method, "params": params
        });
        self.feed(Inbound::Frame(request.to_string().into_bytes()))
            .await
    }

    /// Whether an answer is to a request of the transport's own (and forgets the request).
    pub(crate) fn swallowed(&self, id: &RequestId) -> bool {
        self.swallow.lock().remove(id).is_some()
    }

    fn lock(&self) -> parking_lot::MutexGuard<'_, Streams> {
        self.streams.lock()
    }

    pub(crate) fn version(&self) -> ProtocolVersion {
        *self.version.lock()
    }

    pub(crate) fn touch(&self) {
        *self.last_seen.lock() = Instant::now();
    }

    /// SSE streams with a client attached (POSTs answered with JSON do not count).
    pub(crate) fn attached_streams(&self) -> usize {
        self.lock()
            .by_token
            .values()
            .filter(|s| s.sse_attached())
            .count()
    }

    /// Streams the session keeps (attached, waiting for their answers, or finished and kept
    /// for a late resumption).
    pub(crate) fn tracked_streams(&self) -> usize {
        self.lock().by_token.len()
    }

    /// The POST stream `token` is answered as SSE from now on.
    pub(crate) fn mark_sse(&self, token: &str) {
        if let Some(s) = self.lock().by_token.get_mut(token) {
            s.sse = true;
        }
    }

    /// Ends the standalone GET stream (shutdown): nothing else is routed to it.
    pub(crate) fn end_standalone(&self) {
        let mut streams = self.lock();
        if let Some(token) = streams.standalone.take() {
            streams.by_token.remove(&token);
        }
    }

    /// Idle: no recent request and no attached stream.
    pub(crate) fn idle_since(&self) -> Option<Instant> {
        let streams = self.lock();
        // An open SSE stream, or a request still owed its answer, keeps the session alive.
        let attached = streams
            .by_token
            .values()
            .any(|s| s.sse_attached() || (s.pending > 0 && !s.finished));
        if attached {
            return None;
        }
        Some(*self.last_seen.lock())
    }

    /// Hands a POST body to the engine (started again first if the session was parked).
    /// False once the session is closed.
    pub(crate) async fn feed(self: &Arc<Self>, input: Inbound) -> bool {
        // (Parked again between the wake and the read: woken again.)
        let tx = loop {
            if !self.wake().await {
                return false;
            }
            if let Some(tx) = self.incoming() {
                break Some(tx);
            }
        };
        match tx {
            Some(tx) => match tx.reserve().await {
                Ok(slot) => {
                    // Counted before it is sent: a request answered directly meanwhile sees
                    // it as not handled yet. (A caller dropped while waiting for the slot
                    // sent nothing, and counted nothing.)
                    self.fed.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
                    slot.send(input);
                    true
                }
                Err(_) => false,
            },
            None => false,
        }
    }

    /// Fails our request `id` to the client at once: no stream can carry it (the POST it
    /// belongs to is answered with a JSON body, and the session has no GET stream open).
    pub(crate) fn unreachable(&self, id: RequestId) {
        self.fail_request(
            id,
            "no stream to the client: the session has no GET stream open, and a JSON answer \
             (ResponseMode::Json) carries only the response",
        );
    }

    /// Fails our request `id` to the client at once, saying `why` it cannot be sent.
    pub(crate) fn fail_request(&self, id: RequestId, why: &str) {
        let Some(tx) = self.incoming() else {
            return;
        };
        tracing::debug!(session = %self.id, %id, "no stream to the client for a request; failed");
        let error = oxmcp_jsonrpc::TransportError::Unreachable(why.to_owned());
        let failed = Inbound::failed(id, error);
        // Not awaited: the engine may be waiting for the routing that got here to finish.
        tokio::spawn(async move {
            let _ = tx.send(failed).await;
        });
    }

    /// Ends the session: the engine finishes what it accepted, and every stream ends.
    pub(crate) fn close(&self) {
        *self.link.lock() = Link::Closed;
        // A parked session's kept state ends now.
        self.park.end();
        let mut streams = self.lock();
        for s in streams.by_token.values_mut() {
            s.live = None;
        }
    }

    /// A request id of this session still waiting for its response.
    pub(crate) fn in_flight(&self, id: &RequestId) -> bool {
        self.lock().busy.contains(id)
    }

    /// Drops what this instance's log holds for this session.
    pub(crate) async fn forget_stored(&self) {
        if let Err(e) = self.backend.forget_session(&self.id).await {
            tracing::debug!(session = %self.id, "events not dropped (they expire): {e}");
        }
    }

    /// Records a new stream's info in the log (another instance may resume it from the start).
    async fn log_open(&self, token: &str, info: &oxmcp_store::StreamInfo) {
        if let Err(e) = self.backend.open_stream(&self.id, token, info).await {
            tracing::warn!(session = %self.id, stream = token, "stream not recorded for resumption: {e}");
        }
    }

    /// Logs one event of stream `token` (an empty `data` marks the end of a cancelled
    /// request's stream); `detached`: no client is attached to the stream here.
    async fn log_event(&self, event: oxmcp_store::AppendEvent<'_>, detached: bool) {
        if let Err(e) = self.backend.append(event, detached).await {
            let stream = event.stream;
            tracing::warn!(session = %self.id, stream, "event not stored for resumption: {e}");
        }
    }

    /// Stream `token`'s logged messages with `after < seq < before`, oldest first.
    async fn log_replay(
        &self,
        token: &str,
        after: u64,
        before: u64,
    ) -> Vec<oxmcp_store::StoredEvent> {
        match self.backend.replay(&self.id, token, after).await {
            Ok(mut events) => {
                events.retain(|e| e.seq < before && !e.data.is_empty());
                events
            }
            Err(e) => {
                tracing::warn!(session = %self.id, stream = token, "stored events not read: {e}");
                Vec::new()
            }
        }
    }

    /// Drops stream `token`'s logged events.
    async fn log_forget(&self, token: &str) {
        if let Err(e) = self.backend.forget_stream(&self.id, token).await {
            tracing::debug!(session = %self.id, stream = token, "stream not dropped (it expires): {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::backend::Local;
    use oxmcp_jsonrpc::{OutKind, OutMessage, Outbound};
    use oxmcp_store::MemoryEventLog;

    fn session() -> (Arc<HttpSession>, mpsc::Receiver<Inbound>) {
        let (tx, rx) = mpsc::channel(8);
        let log = Arc::new(MemoryEventLog::new(64));
        let session = HttpSession::new(
            "t".into(),
            ProtocolVersion::V2025_11_25,
            Arc::new(Local::new(log)),
            None,
            None,
            1,
            std::sync::Weak::new(),
        );
        session.attach(tx, oxmcp_engine::DirectSlot::new());
        (session, rx)
    }

    fn out(line: &str, related: Option<i64>) -> Outbound {
        let kind = if line.contains(r#""result""#) {
            OutKind::Response { error: None }
        } else {
            OutKind::Notification {
                method: "notifications/progress".to_owned(),
            }
        };
        Outbound::Message(Box::new(OutMessage {
            line: line.to_owned(),
            related: related.map(RequestId::Number),
            kind,
        }))
    }

    #[tokio::test]
    async fn routes_and_resumes() {
        let (s, _rx) = session();
        let (tok, mut live) = s
            .open_post_stream(&[RequestId::Number(1)], 1, true, None)
            .unwrap();
        s.route(out(
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
            Some(1),
        ))
        .await;
        let e = live.try_recv().unwrap();
        assert_eq!(e.id, format!("{tok}-1"));
        assert!(!e.last);
        // Unrelated messages with no GET stream are dropped, not put on the POST stream.
        s.route(out(
            r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
            None,
        ))
        .await;
        assert!(live.try_recv().is_err());
        // Polling: the handler closes the stream; the response still lands in the store.
        s.route(Outbound::close_stream(RequestId::Number(1))).await;
        s.route(out(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, Some(1)))
            .await;
        assert!(live.try_recv().is_err());
        let r = s.resume(&format!("{tok}-1")).await.unwrap();
        assert_eq!(r.replay.len(), 1);
        assert!(r.replay[0].data.contains(r#""result""#));
        assert!(r.live.is_none(), "the stream is finished");
        // Foreign or malformed ids resume nothing.
        assert!(s.resume("s999-0").await.is_none());
        assert!(s.resume("nonsense").await.is_none());
        let (other, _rx2) = session();
        assert!(other.resume(&format!("{tok}-0")).await.is_none());
    }

    #[tokio::test]
    async fn ids_in_flight_are_not_reused() {
        let (s, _rx) = session();
        let (one, two) = (RequestId::Number(1), RequestId::Number(2));
        let batch = [one.clone(), two.clone()];
        let (tok, _live) = s
            .open_post_stream(&batch[..1], 1, false, Some(&batch))
            .unwrap();
        // Every entry of a batch is in flight, not only the one its answer is routed by.
        assert_eq!(
            s.open_post_stream(std::slice::from_ref(&two), 1, false, None)
                .err(),
            Some(two.clone())
        );
        assert!(s.in_flight(&two));
        // Answered: free again.
        s.route(out(
            r#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]"#,
            Some(1),
        ))
        .await;
        assert!(!s.in_flight(&one) && !s.in_flight(&two), "{tok}");
        assert!(s.open_post_stream(&[two], 1, false, None).is_ok());
    }

    #[tokio::test]
    async fn resume_mid_stream_neither_misses_nor_repeats() {
        let (s, _rx) = session();
        let (tok, live) = s
            .open_post_stream(&[RequestId::Number(1)], 1, true, None)
            .unwrap();
        drop(live);
        for i in 0..3 {
            s.route(out(
                &format!(r#"{{"jsonrpc":"2.0","method":"n","params":{{"i":{i}}}}}"#),
                Some(1),
            ))
            .await;
        }
        let r = s.resume(&format!("{tok}-1")).await.unwrap();
        assert_eq!(
            r.replay.iter().map(|e| e.id.clone()).collect::<Vec<_>>(),
            [format!("{tok}-2"), format!("{tok}-3")]
        );
        let mut live = r.live.unwrap();
        s.route(out(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, Some(1)))
            .await;
        let e = live.try_recv().unwrap();
        assert_eq!(e.id, format!("{tok}-4"));
        assert!(e.last);
        assert!(live.try_recv().is_err());
    }

    /// A log line that shows client-supplied text escapes control and direction characters
    /// (they could forge lines or recolour a terminal).
    #[test]
    fn logged_bodies_are_escaped() {
        use std::sync::{Arc as StdArc, Mutex as StdMutex};
        #[derive(Clone, Default)]
        struct Buf(StdArc<StdMutex<Vec<u8>>>);
        impl std::io::Write for Buf {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buf = Buf::default();
        let writer = buf.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        tracing::subscriber::with_default(subscriber, || {
            rt.block_on(async {
                let (s, _rx) = session();
                let hostile = "{\"x\":\"\u{9b}31m\u{202e}FAKE\u{2028}LINE\u{7f}\"}";
                s.route(out(hostile, None)).await;
            });
        });
        let logged = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        assert!(logged.contains("dropped"), "{logged}");
        for c in ['\u{9b}', '\u{202e}', '\u{2028}', '\u{7f}'] {
            assert!(!logged.contains(c), "{c:?} unescaped in {logged:?}");
        }
    }

    #[tokio::test]
    async fn standalone_gets_unrelated() {
        let (s, _rx) = session();
        let (_tok, mut get) = s.open_standalone().await.unwrap();
        assert!(
            s.open_standalone().await.is_none(),
            "one standalone stream at a time"
        );
        s.route(out(
            r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
            None,
        ))
        .await;
        assert!(get.try_recv().is_ok());
        // A related message whose request stream is gone goes to the GET stream.
        s.route(out(
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#,
            Some(9),
        ))
        .await;
        assert!(get.try_recv().is_ok());
        drop(get);
        assert!(
            s.open_standalone().await.is_some(),
            "a closed standalone stream can be reopened"
        );
    }
}
