//! One HTTP session: its engine connection, and the SSE streams its messages go on.
//!
//! Every outgoing message is routed to exactly one stream: a response, and whatever a handler
//! sends while working on a request, go on the stream of the POST that carried the request;
//! everything else goes on the standalone GET stream (or is dropped when there is none).
//! Each stream keeps a bounded log of its events so a client can resume it with
//! `Last-Event-ID`; event ids carry a random per-stream token, so one session (or stream)
//! can never resume another's.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use mcp_jsonrpc::{Outbound, RequestId};
use mcp_types::ProtocolVersion;
use tokio::sync::mpsc;

use crate::config::HttpConfig;

/// One SSE event for an attached response.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    /// `id:` field.
    pub(crate) id: String,
    /// One JSON-RPC message.
    pub(crate) data: String,
    /// The stream has nothing more to send after this event.
    pub(crate) last: bool,
}

/// Events queued per attached response before the client counts as too slow (it can resume).
const LIVE_DEPTH: usize = 256;
/// Finished streams kept for late resumption, per session.
const KEEP_FINISHED: usize = 64;

struct Stream {
    log: VecDeque<(u64, String)>,
    next_seq: u64,
    live: Option<mpsc::Sender<Event>>,
    /// Responses still owed on this stream.
    pending: usize,
    finished: bool,
}

#[derive(Default)]
struct Streams {
    by_token: HashMap<String, Stream>,
    routes: HashMap<RequestId, String>,
    standalone: Option<String>,
    finished: VecDeque<String>,
}

/// Random hex string of `bytes` bytes from the OS CSPRNG.
pub(crate) fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    if getrandom::fill(&mut buf).is_err() {
        // No OS randomness is not recoverable for session ids: refuse to make predictable ones.
        tracing::error!("the OS random number generator failed");
        buf.iter_mut().for_each(|b| *b = 0);
    }
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// An HTTP session.
pub(crate) struct Session {
    pub(crate) id: String,
    /// The engine's input; taken (closing the engine) when the session ends.
    incoming: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    version: Mutex<ProtocolVersion>,
    streams: Mutex<Streams>,
    /// Stream tokens: unique within the session (resumption is scoped to the session, whose
    /// id is the secret).
    next_stream: std::sync::atomic::AtomicU64,
    last_seen: Mutex<Instant>,
    config: Arc<HttpConfig>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
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

impl Session {
    pub(crate) fn new(
        incoming: mpsc::Sender<Vec<u8>>,
        version: ProtocolVersion,
        config: Arc<HttpConfig>,
    ) -> Arc<Self> {
        Arc::new(Self {
            id: random_hex(16),
            incoming: Mutex::new(Some(incoming)),
            version: Mutex::new(version),
            streams: Mutex::new(Streams::default()),
            next_stream: std::sync::atomic::AtomicU64::new(1),
            last_seen: Mutex::new(Instant::now()),
            config,
        })
    }

    fn new_token(&self) -> String {
        let n = self
            .next_stream
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("s{n}")
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Streams> {
        self.streams
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn version(&self) -> ProtocolVersion {
        *self
            .version
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn touch(&self) {
        *self
            .last_seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Instant::now();
    }

    /// Idle: no recent request and no attached stream.
    pub(crate) fn idle_since(&self) -> Option<Instant> {
        let streams = self.lock();
        let attached = streams
            .by_token
            .values()
            .any(|s| s.live.as_ref().is_some_and(|l| !l.is_closed()));
        if attached {
            return None;
        }
        Some(
            *self
                .last_seen
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Hands a POST body to the engine. False once the session is closed.
    pub(crate) async fn feed(&self, body: Vec<u8>) -> bool {
        let tx = self
            .incoming
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        match tx {
            Some(tx) => tx.send(body).await.is_ok(),
            None => false,
        }
    }

    /// Ends the session: the engine finishes what it accepted, and every stream ends.
    pub(crate) fn close(&self) {
        self.incoming
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let mut streams = self.lock();
        for s in streams.by_token.values_mut() {
            s.live = None;
        }
    }

    /// Opens the stream for a POST carrying requests `ids`; `answers` is how many responses
    /// will come (one per request, or one for a whole batch).
    pub(crate) fn open_post_stream(
        &self,
        ids: &[RequestId],
        answers: usize,
    ) -> (String, mpsc::Receiver<Event>) {
        let token = self.new_token();
        let (tx, rx) = mpsc::channel(LIVE_DEPTH);
        let mut streams = self.lock();
        for id in ids {
            streams.routes.insert(id.clone(), token.clone());
        }
        streams.by_token.insert(
            token.clone(),
            Stream {
                log: VecDeque::new(),
                next_seq: 1,
                live: Some(tx),
                pending: answers,
                finished: false,
            },
        );
        (token, rx)
    }

    /// Forgets a stream whose answer went out as a JSON body: there is nothing to resume.
    pub(crate) fn forget_stream(&self, token: &str) {
        let mut streams = self.lock();
        streams.by_token.remove(token);
        streams.finished.retain(|t| t != token);
        // An idle session should cost as little as possible: give emptied tables back.
        if streams.by_token.is_empty() {
            streams.by_token = HashMap::new();
            streams.finished = VecDeque::new();
        }
        if streams.routes.is_empty() {
            streams.routes = HashMap::new();
        }
    }

    /// Opens the standalone GET stream; `None` if one is already attached.
    pub(crate) fn open_standalone(&self) -> Option<(String, mpsc::Receiver<Event>)> {
        let mut streams = self.lock();
        if let Some(token) = streams.standalone.clone() {
            if let Some(s) = streams.by_token.get(&token) {
                if s.live.as_ref().is_some_and(|l| !l.is_closed()) {
                    return None;
                }
            }
            streams.by_token.remove(&token);
        }
        let token = self.new_token();
        let (tx, rx) = mpsc::channel(LIVE_DEPTH);
        streams.by_token.insert(
            token.clone(),
            Stream {
                log: VecDeque::new(),
                next_seq: 1,
                live: Some(tx),
                pending: 0,
                finished: false,
            },
        );
        streams.standalone = Some(token.clone());
        Some((token, rx))
    }

    /// Resumes the stream an event id belongs to, after that event. `None` if the id does not
    /// name a stream of this session.
    pub(crate) fn resume(&self, last_event_id: &str) -> Option<Resumed> {
        let (token, seq) = last_event_id.rsplit_once('-')?;
        let seq: u64 = seq.parse().ok()?;
        let mut streams = self.lock();
        let stream = streams.by_token.get_mut(token)?;
        let replay: Vec<Event> = stream
            .log
            .iter()
            .filter(|(s, _)| *s > seq)
            .map(|(s, data)| Event {
                id: format!("{token}-{s}"),
                data: data.clone(),
                last: false,
            })
            .collect();
        let live = if stream.finished {
            None
        } else {
            let (tx, rx) = mpsc::channel(LIVE_DEPTH);
            stream.live = Some(tx);
            Some(rx)
        };
        Some(Resumed { replay, live })
    }

    /// Detaches a stream's response without ending the stream (polling mode: the client is
    /// expected to come back with `Last-Event-ID`).
    fn detach(streams: &mut Streams, token: &str) {
        if let Some(s) = streams.by_token.get_mut(token) {
            s.live = None;
        }
    }

    /// Routes one outgoing message to its stream.
    pub(crate) fn route(&self, out: Outbound) {
        let mut streams = self.lock();
        let on_request_stream = out
            .related
            .as_ref()
            .and_then(|id| streams.routes.get(id).cloned().map(|t| (id.clone(), t)));
        if out.line.is_empty() {
            // A handler asked to close its request's stream (polling): detach the response.
            if let Some((_, token)) = on_request_stream {
                Self::detach(&mut streams, &token);
            }
            return;
        }
        let response = out.response;
        let token = match (&on_request_stream, response) {
            (Some((id, token)), true) => {
                streams.routes.remove(id);
                token.clone()
            }
            (Some((_, token)), false) => token.clone(),
            (None, _) => match streams.standalone.clone() {
                Some(t) => t,
                None => {
                    tracing::debug!("no stream for a message; dropped: {}", out.line);
                    return;
                }
            },
        };
        let limit = self.config.event_log_limit.max(1);
        let Some(stream) = streams.by_token.get_mut(&token) else {
            return;
        };
        if response && stream.pending > 0 {
            stream.pending -= 1;
        }
        let last = response && stream.pending == 0;
        let seq = stream.next_seq;
        stream.next_seq += 1;
        stream.log.push_back((seq, out.line.clone()));
        while stream.log.len() > limit {
            stream.log.pop_front();
        }
        if last {
            stream.finished = true;
        }
        if let Some(live) = &stream.live {
            let event = Event {
                id: format!("{token}-{seq}"),
                data: out.line,
                last,
            };
            if live.try_send(event).is_err() {
                // Gone or too slow: it can resume from the log.
                stream.live = None;
            }
        }
        if last {
            stream.live = None;
            streams.finished.push_back(token);
            while streams.finished.len() > KEEP_FINISHED {
                if let Some(old) = streams.finished.pop_front() {
                    streams.by_token.remove(&old);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> (Arc<Session>, mpsc::Receiver<Vec<u8>>) {
        let (tx, rx) = mpsc::channel(8);
        (
            Session::new(
                tx,
                ProtocolVersion::V2025_11_25,
                Arc::new(HttpConfig::default()),
            ),
            rx,
        )
    }

    fn out(line: &str, related: Option<i64>) -> Outbound {
        Outbound {
            response: line.contains(r#""result""#),
            line: line.to_owned(),
            related: related.map(RequestId::Number),
        }
    }

    #[test]
    fn routes_and_resumes() {
        let (s, _rx) = session();
        let (tok, mut live) = s.open_post_stream(&[RequestId::Number(1)], 1);
        s.route(out(
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
            Some(1),
        ));
        let e = live.try_recv().unwrap();
        assert_eq!(e.id, format!("{tok}-1"));
        assert!(!e.last);
        // Unrelated messages with no GET stream are dropped, not put on the POST stream.
        s.route(out(
            r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
            None,
        ));
        assert!(live.try_recv().is_err());
        // Polling: the handler closes the stream; the response still lands in the log.
        s.route(out("", Some(1)));
        s.route(out(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, Some(1)));
        assert!(live.try_recv().is_err());
        let r = s.resume(&format!("{tok}-1")).unwrap();
        assert_eq!(r.replay.len(), 1);
        assert!(r.replay[0].data.contains(r#""result""#));
        assert!(r.live.is_none(), "the stream is finished");
        // Foreign or malformed ids resume nothing.
        assert!(s.resume("deadbeef-0").is_none());
        assert!(s.resume("nonsense").is_none());
        let (other, _rx2) = session();
        assert!(other.resume(&format!("{tok}-0")).is_none());
    }

    #[test]
    fn standalone_gets_unrelated() {
        let (s, _rx) = session();
        let (_tok, mut get) = s.open_standalone().unwrap();
        assert!(
            s.open_standalone().is_none(),
            "one standalone stream at a time"
        );
        s.route(out(
            r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
            None,
        ));
        assert!(get.try_recv().is_ok());
        // A related message whose request stream is gone goes to the GET stream.
        s.route(out(
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#,
            Some(9),
        ));
        assert!(get.try_recv().is_ok());
        drop(get);
        assert!(
            s.open_standalone().is_some(),
            "a closed standalone stream can be reopened"
        );
    }
}
