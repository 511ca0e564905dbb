//! The SSE streams of a session: which stream each outgoing message goes on, the events
//! stored for resumption, and the live feeds of attached responses.

use std::collections::{HashMap, HashSet, VecDeque};

use oxmcp_jsonrpc::{OutKind, Outbound, RequestId};
use oxmcp_store::{AppendEvent, StreamInfo};
use tokio::sync::mpsc;

use super::{HttpSession, Resumed};

/// One SSE event for an attached response.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    /// `id:` field.
    pub(crate) id: String,
    /// One JSON-RPC message (nothing for [`Event::cancelled`]).
    pub(crate) data: String,
    /// The stream has nothing more to send after this event.
    pub(crate) last: bool,
    /// Not a message: the stream's request ended without a response (it was cancelled), so
    /// the stream ends with nothing more sent.
    pub(crate) cancelled: bool,
    /// The message is an error response, as the engine said when it sent it (events
    /// replayed from the log do not say: false).
    pub(crate) error: bool,
}

impl Event {
    /// The end of a stream whose request was cancelled: nothing to send.
    pub(crate) fn is_end_marker(&self) -> bool {
        self.cancelled
    }
}

/// What an outgoing message asks of the streams, once stream signals are handled.
pub(crate) struct Routed {
    /// The message (`None`: its request ended without a response).
    pub(crate) line: Option<String>,
    /// The request it belongs to (a response: the request it answers).
    pub(crate) related: Option<RequestId>,
    /// It ends its request (a response, or a cancelled request's end).
    pub(crate) ends: bool,
    /// A request to the client: the id the answer will carry.
    pub(crate) request: Option<RequestId>,
    /// What the message is, as the engine said (`None`: a cancelled request's end).
    pub(crate) kind: Option<OutKind>,
}

/// Where [`HttpSession::route`] put a message: the stream, the event's sequence number, and
/// whether it is the stream's last.
struct Placed {
    token: String,
    seq: u64,
    last: bool,
    /// Kept in the log (for resumption); not when the one answer goes out as a JSON body.
    store: bool,
    /// Given with the stream's first stored event (when the backend records one).
    info: Option<StreamInfo>,
    /// No client is attached: another instance may be tailing the stream.
    detached: bool,
    /// The requests whose stream this message ended: no longer in flight.
    ended: Vec<RequestId>,
}

/// Events queued per attached response before the client counts as too slow (it can resume).
const LIVE_DEPTH: usize = 256;
/// Finished streams kept for late resumption, per session.
const KEEP_FINISHED: usize = 64;

pub(super) struct Stream {
    pub(super) next_seq: u64,
    pub(super) live: Option<mpsc::Sender<Event>>,
    /// The first seq the attached `live` sink has not been given by a replay.
    pub(super) live_from: u64,
    /// Responses still owed on this stream.
    pub(super) pending: usize,
    pub(super) finished: bool,
    /// Answered as an SSE stream (a POST answered with JSON is not an open stream).
    pub(super) sse: bool,
    /// Answered with a JSON body whatever comes (`ResponseMode::Json`): it carries the
    /// response only, and what comes before it goes on the GET stream.
    pub(super) json: bool,
    /// Something of it is in the log.
    pub(super) stored: bool,
    /// Who writes it and what it answers, stored with its first event (when the backend
    /// records one).
    pub(super) info: Option<StreamInfo>,
    /// The ids of the requests it answers (every entry of a batch): in flight until it ends.
    pub(super) ids: Vec<RequestId>,
}

impl Stream {
    fn new(pending: usize, live: mpsc::Sender<Event>, sse: bool, info: Option<StreamInfo>) -> Self {
        Self {
            next_seq: 1,
            live: Some(live),
            live_from: 1,
            pending,
            finished: false,
            sse,
            json: false,
            stored: false,
            info,
            ids: Vec::new(),
        }
    }

    /// An SSE response is attached and its client is still there.
    pub(super) fn sse_attached(&self) -> bool {
        self.sse && self.live.as_ref().is_some_and(|l| !l.is_closed())
    }
}

#[derive(Default)]
pub(crate) struct Streams {
    pub(super) by_token: HashMap<String, Stream>,
    pub(super) routes: HashMap<RequestId, String>,
    /// Every request id of the session in flight (a batch's entries too): a new request may
    /// use none of them.
    pub(super) busy: HashSet<RequestId>,
    pub(super) standalone: Option<String>,
    pub(super) finished: VecDeque<String>,
}

impl HttpSession {
    /// Opens the stream for a POST carrying requests `ids`; `answers` is how many responses
    /// will come (one per request, or one for a whole batch, whose entries are `batch` and
    /// whose answer is routed by its first id). `sse`: answered as SSE from the start.
    ///
    /// An id twice in one batch is the engine's to refuse (its second entry is answered
    /// with an error within the batch's answer).
    ///
    /// # Errors
    /// A request id that is in flight already: nothing is opened.
    pub(crate) fn open_post_stream(
        &self,
        ids: &[RequestId],
        answers: usize,
        sse: bool,
        batch: Option<&[RequestId]>,
    ) -> Result<(String, mpsc::Receiver<Event>), RequestId> {
        let all = batch.unwrap_or(ids);
        let mut streams = self.lock();
        if let Some(dup) = all.iter().find(|id| streams.busy.contains(*id)) {
            return Err(dup.clone());
        }
        let token = self.new_token();
        let info = self.backend.stream_info(all, batch.is_some());
        let (tx, rx) = mpsc::channel(LIVE_DEPTH);
        for id in ids {
            streams.routes.insert(id.clone(), token.clone());
        }
        streams.busy.extend(all.iter().cloned());
        let mut stream = Stream::new(answers, tx, sse, info);
        stream.ids = all.to_vec();
        streams.by_token.insert(token.clone(), stream);
        Ok((token, rx))
    }

    /// Says that the POST of stream `token` is answered with a JSON body whatever comes
    /// (`ResponseMode::Json`): its request's notifications and requests to the client go on
    /// the GET stream, or fail (requests) or are dropped (notifications) without one.
    pub(crate) fn answer_as_json(&self, token: &str) {
        if let Some(s) = self.lock().by_token.get_mut(token) {
            s.json = true;
        }
    }

    /// Records a stream that is primed before its first event in the log, when the backend
    /// records streams (so that it can be resumed on another instance from the start).
    pub(crate) async fn announce_stream(&self, token: &str) {
        let info = self
            .lock()
            .by_token
            .get_mut(token)
            .and_then(|s| s.info.take());
        if let Some(info) = info {
            self.log_open(token, &info).await;
        }
    }

    /// Forgets a stream whose answer went out as a JSON body: there is nothing to resume.
    pub(crate) async fn forget_stream(&self, token: &str) {
        let stored = self.lock().by_token.get(token).is_none_or(|s| s.stored);
        if stored {
            self.log_forget(token).await;
        }
        let mut streams = self.lock();
        if let Some(gone) = streams.by_token.remove(token) {
            for id in &gone.ids {
                streams.busy.remove(id);
            }
        }
        streams.finished.retain(|t| t != token);
        // An idle session should cost as little as possible: give emptied tables back.
        if streams.by_token.is_empty() {
            streams.by_token = HashMap::new();
            streams.finished = VecDeque::new();
        }
        if streams.routes.is_empty() {
            streams.routes = HashMap::new();
        }
        if streams.busy.is_empty() {
            streams.busy = HashSet::new();
        }
    }

    /// Opens the standalone GET stream; `None` if one is already attached. A detached old
    /// one is dropped with its stored events (a client that wanted them resumes instead).
    pub(crate) async fn open_standalone(&self) -> Option<(String, mpsc::Receiver<Event>)> {
        let (token, rx, old) = {
            let mut streams = self.lock();
            let mut old = None;
            if let Some(token) = streams.standalone.clone() {
                if streams
                    .by_token
                    .get(&token)
                    .is_some_and(Stream::sse_attached)
                {
                    return None;
                }
                streams.by_token.remove(&token);
                old = Some(token);
            }
            let token = self.new_token();
            let (tx, rx) = mpsc::channel(LIVE_DEPTH);
            let info = self.backend.stream_info(&[], false);
            streams
                .by_token
                .insert(token.clone(), Stream::new(0, tx, true, info));
            streams.standalone = Some(token.clone());
            (token, rx, old)
        };
        if let Some(old) = old {
            self.log_forget(&old).await;
        }
        Some((token, rx))
    }

    /// Resumes the stream an event id belongs to, after that event. `None` if the id does not
    /// name a stream of this session.
    pub(crate) async fn resume(&self, last_event_id: &str) -> Option<Resumed> {
        let (token, seq) = last_event_id.rsplit_once('-')?;
        let seq: u64 = seq.parse().ok()?;
        let _order = self.order.lock().await;
        let (live, before) = {
            let mut streams = self.lock();
            let stream = streams.by_token.get_mut(token)?;
            let before = stream.next_seq;
            let live = if stream.finished {
                None
            } else {
                let (tx, rx) = mpsc::channel(LIVE_DEPTH);
                stream.live = Some(tx);
                stream.live_from = before;
                stream.sse = true;
                Some(rx)
            };
            (live, before)
        };
        let replay = self
            .log_replay(token, seq, before)
            .await
            .into_iter()
            .map(|e| Event {
                id: format!("{token}-{}", e.seq),
                data: e.data,
                last: false,
                cancelled: false,
                error: false,
            })
            .collect();
        Some(Resumed { replay, live })
    }

    /// Detaches a stream's response without ending the stream (polling mode: the client is
    /// expected to come back with `Last-Event-ID`).
    fn detach(streams: &mut Streams, token: &str) {
        if let Some(s) = streams.by_token.get_mut(token) {
            s.live = None;
        }
    }

    /// Routes one outgoing message to its stream: stored first, then sent to the attached
    /// response, if any.
    pub(crate) async fn route(&self, out: Outbound) {
        let _order = self.order.lock().await;
        let routed = match out {
            Outbound::CloseStream(id) => {
                // A handler asked to close its request's stream (polling): detach the response.
                let mut streams = self.lock();
                if let Some(token) = streams.routes.get(&*id).cloned() {
                    Self::detach(&mut streams, &token);
                }
                return;
            }
            Outbound::Ended(id) => Routed {
                line: None,
                related: Some(*id),
                ends: true,
                request: None,
                kind: None,
            },
            Outbound::Message(m) => Routed {
                ends: m.is_response(),
                request: match &m.kind {
                    OutKind::Request { id, .. } => Some(id.clone()),
                    _ => None,
                },
                line: Some(m.line),
                related: m.related,
                kind: Some(m.kind),
            },
        };
        let mut routed = routed;
        // The backend's part (a store-backed one shares what crosses instances): it may
        // swallow the answer to a request of the transport's own (see `feed_own`).
        if !self.backend.before_route(self, &mut routed).await {
            return;
        }
        let Some(placed) = self.place(&routed) else {
            if let Some(id) = routed.request {
                self.unreachable(id);
            }
            return;
        };
        if routed.ends {
            self.backend.ended(self, &placed.ended);
        }
        if placed.store {
            let event = AppendEvent {
                session: &self.id,
                stream: &placed.token,
                seq: placed.seq,
                data: routed.line.as_deref().unwrap_or_default(),
                last: placed.last,
                info: placed.info.as_ref(),
            };
            self.log_event(event, placed.detached).await;
        }
        let error = matches!(routed.kind, Some(OutKind::Response { error: Some(_) }));
        let forget = self.deliver(routed.line, error, placed);
        for old in forget {
            self.log_forget(&old).await;
        }
    }

    /// Picks the stream of a message and takes its sequence number: the stream of the
    /// request it belongs to, else the standalone GET stream. `None`: nothing to send (no
    /// stream for it, or a cancelled request of a batch that still owes other answers).
    fn place(&self, routed: &Routed) -> Option<Placed> {
        let mut streams = self.lock();
        let on_request_stream = routed
            .related
            .as_ref()
            .and_then(|id| streams.routes.get(id).cloned().map(|t| (id.clone(), t)));
        let token = match on_request_stream {
            Some((id, token)) => {
                if routed.ends {
                    streams.routes.remove(&id);
                    token
                } else if streams.by_token.get(&token).is_some_and(|s| s.json) {
                    // A JSON answer holds the response only: the rest goes on the GET stream.
                    let Some(standalone) = streams.standalone.clone() else {
                        let line = routed.line.as_deref().unwrap_or_default();
                        tracing::debug!(
                            "a JSON answer and no GET stream; dropped: {:?}",
                            crate::server::loggable(line)
                        );
                        return None;
                    };
                    standalone
                } else {
                    token
                }
            }
            None if routed.line.is_none() => return None,
            None => match streams.standalone.clone() {
                Some(t) => t,
                None => {
                    let line = routed.line.as_deref().unwrap_or_default();
                    tracing::debug!(
                        "no stream for a message; dropped: {:?}",
                        crate::server::loggable(line)
                    );
                    return None;
                }
            },
        };
        let stream = streams.by_token.get_mut(&token)?;
        if routed.ends && stream.pending > 0 {
            stream.pending -= 1;
        }
        let last = routed.ends && stream.pending == 0;
        if routed.line.is_none() && !last {
            return None;
        }
        let seq = stream.next_seq;
        if routed.line.is_some() {
            stream.next_seq += 1;
        }
        let mut ended = Vec::new();
        if last {
            stream.finished = true;
            ended = std::mem::take(&mut stream.ids);
        }
        let attached = stream.live.as_ref().is_some_and(|l| !l.is_closed());
        // A POST's one answer, going to its waiting response as a JSON body: the client
        // never learns an event id, so there is nothing to resume and nothing to keep.
        let json_body = seq == 1 && last && !stream.sse && attached;
        // The end of a cancelled request's stream is logged too (where the backend keeps such
        // ends: another instance may be tailing the stream).
        let store = !json_body && (routed.line.is_some() || stream.stored);
        if store {
            stream.stored = true;
        }
        let info = if store { stream.info.take() } else { None };
        for id in &ended {
            streams.busy.remove(id);
        }
        Some(Placed {
            token,
            seq,
            last,
            store,
            info,
            detached: !attached,
            ended,
        })
    }

    /// Hands an event to the stream's attached response (a client too slow or gone is
    /// detached: it can resume from the store), and retires finished streams past
    /// [`KEEP_FINISHED`]. Returns the streams to forget in the store.
    fn deliver(&self, line: Option<String>, error: bool, placed: Placed) -> Vec<String> {
        let Placed {
            token, seq, last, ..
        } = placed;
        let mut forget = Vec::new();
        let mut streams = self.lock();
        let Some(stream) = streams.by_token.get_mut(&token) else {
            return forget;
        };
        if let Some(live) = stream.live.as_ref().filter(|_| seq >= stream.live_from) {
            let event = Event {
                id: format!("{token}-{seq}"),
                cancelled: line.is_none(),
                data: line.unwrap_or_default(),
                last,
                error,
            };
            if live.try_send(event).is_err() {
                stream.live = None;
            }
        }
        if last {
            stream.live = None;
            streams.finished.push_back(token);
            while streams.finished.len() > KEEP_FINISHED {
                if let Some(old) = streams.finished.pop_front() {
                    streams.by_token.remove(&old);
                    forget.push(old);
                }
            }
        }
        forget
    }
}
