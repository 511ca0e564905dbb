//! The one SSE reader, and what reads with it: a POST's SSE answer (resumed with GET and
//! `Last-Event-ID` when it breaks before the response), and the standalone GET stream.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use oxmcp_jsonrpc::{Message, RequestId, TransportError};

use super::{GateOpener, State};
use crate::sse::{SseEvent, SseParser};

/// Events of one SSE response, read as they come; ends with the body, an error, or when the
/// connection closes.
pub(super) struct Events {
    parser: SseParser,
    body: BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    ready: std::collections::VecDeque<SseEvent>,
}

impl Events {
    pub(super) fn new(resp: reqwest::Response, max_message: usize) -> Self {
        Self {
            parser: SseParser::new(max_message),
            body: resp.bytes_stream().boxed(),
            ready: std::collections::VecDeque::new(),
        }
    }

    /// The next event; `None` when the stream ended (or broke) or `closed` was cancelled.
    pub(super) async fn next(
        &mut self,
        closed: &tokio_util::sync::CancellationToken,
    ) -> Option<SseEvent> {
        loop {
            if let Some(ev) = self.ready.pop_front() {
                return Some(ev);
            }
            let chunk = tokio::select! {
                () = closed.cancelled() => return None,
                c = self.body.next() => c,
            };
            let Ok(chunk) = chunk? else { return None };
            self.ready
                .extend(self.parser.push(&chunk).into_iter().map(from_protobuf));
        }
    }
}

/// A message event in the protobuf encoding (`event: mcp+protobuf`, base64 data) as the
/// JSON message event it stands for. An event that cannot be decoded keeps no data, so it
/// is skipped (and logged) like any unusable event.
fn from_protobuf(mut ev: SseEvent) -> SseEvent {
    if ev.event == oxmcp_proto::SSE_EVENT {
        ev.data = super::codec::sse_data_to_json(&ev.data).unwrap_or_else(|e| {
            tracing::warn!("an unusable protobuf SSE event: {e}");
            String::new()
        });
        ev.event = "message".to_owned();
    }
    ev
}

/// Where a resumable stream is: the last event id and the server's `retry`.
struct Resume {
    last_id: Option<String>,
    retry: Duration,
}

impl Resume {
    fn note(&mut self, ev: &SseEvent) {
        if let Some(id) = &ev.id {
            self.last_id = Some(id.clone());
        }
        if let Some(ms) = ev.retry {
            self.retry = Duration::from_millis(ms);
        }
    }
}

fn response_id(data: &str) -> Option<RequestId> {
    match Message::decode(data.as_bytes()) {
        Ok(Message::Response(r)) => r.id,
        _ => None,
    }
}

impl State {
    /// Reads an SSE answer; resumes it with GET + Last-Event-ID if it ends before `waiting`'s
    /// response.
    pub(super) async fn consume_sse(
        self: &Arc<Self>,
        resp: reqwest::Response,
        waiting: Option<RequestId>,
        initialize: bool,
    ) {
        let mut resp = Some(resp);
        let mut at = Resume {
            last_id: None,
            retry: self.config.default_retry,
        };
        let mut attempts = 0u32;
        loop {
            if let Some(r) = resp.take() {
                let mut events = Events::new(r, self.config.max_message);
                while let Some(ev) = events.next(&self.closed).await {
                    attempts = 0; // progress: the next failure starts the backoff over
                    at.note(&ev);
                    if ev.data.is_empty() {
                        continue;
                    }
                    let done = waiting.is_some() && response_id(&ev.data) == waiting;
                    if done && initialize {
                        self.note_version(&ev.data);
                    }
                    self.deliver(ev.data).await;
                    if done {
                        return;
                    }
                }
            }
            if waiting.is_none() || self.closed.is_cancelled() {
                return;
            }
            attempts += 1;
            let Some(last) = at.last_id.clone() else {
                let why =
                    "the SSE stream ended before the response and cannot be resumed (no event id)";
                return self.fail(waiting, TransportError::Io(why.to_owned())).await;
            };
            if attempts > self.config.max_reconnects {
                let why = format!(
                    "the SSE stream broke and could not be resumed after {} attempts",
                    self.config.max_reconnects
                );
                return self.fail(waiting, TransportError::Io(why)).await;
            }
            let delay = self.reconnect_delay(at.retry, attempts);
            tracing::debug!(attempt = attempts, ?delay, "resuming an SSE answer");
            tokio::select! {
                () = self.closed.cancelled() => return,
                () = tokio::time::sleep(delay) => {}
            }
            resp = self.get(Some(&last)).await;
        }
    }

    /// The standalone GET stream: server notifications and requests not tied to a POST.
    pub(super) async fn standalone(self: &Arc<Self>, opener: Option<GateOpener>) {
        let first = self.get(None).await;
        drop(opener);
        let Some(first) = first else {
            return; // 405 or any failure: not fatal, the server just has no GET stream
        };
        let mut resp = Some(first);
        let mut at = Resume {
            last_id: None,
            retry: self.config.default_retry,
        };
        let mut failures = 0u32;
        while !self.closed.is_cancelled() {
            if let Some(r) = resp.take() {
                failures = 0;
                let mut events = Events::new(r, self.config.max_message);
                while let Some(ev) = events.next(&self.closed).await {
                    failures = 0;
                    at.note(&ev);
                    self.deliver(ev.data).await;
                }
            }
            failures += 1;
            if failures > self.config.max_reconnects {
                tracing::warn!(
                    "the standalone SSE stream could not be reopened after {} attempts",
                    self.config.max_reconnects
                );
                return;
            }
            let delay = self.reconnect_delay(at.retry, failures);
            tokio::select! {
                () = self.closed.cancelled() => return,
                () = tokio::time::sleep(delay) => {}
            }
            resp = self.get(at.last_id.as_deref()).await;
        }
    }

    /// Opens (or resumes) the session's GET stream; `None` when the server refuses it.
    async fn get(&self, last_event_id: Option<&str>) -> Option<reqwest::Response> {
        let session = self.session.lock().clone();
        let accept = if self.protobuf() {
            "text/event-stream, application/mcp+protobuf"
        } else {
            "text/event-stream"
        };
        let mut req = self.request(reqwest::Method::GET).header("accept", accept);
        if let Some(s) = session {
            req = req.header("mcp-session-id", s);
        }
        if let Some(id) = last_event_id {
            req = req.header("last-event-id", id);
        }
        match req.send().await {
            Ok(r) if r.status().is_success() => Some(r),
            Ok(r) => {
                tracing::debug!(status = %r.status(), "GET stream refused");
                None
            }
            Err(e) => {
                tracing::debug!("GET stream failed: {}", e.without_url());
                None
            }
        }
    }

    /// [`reconnect_delay`] with this client's floor and cap.
    fn reconnect_delay(&self, retry: Duration, attempt: u32) -> Duration {
        let retry = retry.max(self.config.min_reconnect_delay);
        reconnect_delay(retry, attempt, self.config.max_reconnect_delay)
    }
}

/// Delay before reconnection attempt `attempt` (1-based): the server's `retry` at least, plus
/// full jitter over the ×1.5 growth beyond it, capped at `cap`.
pub(super) fn reconnect_delay(retry: Duration, attempt: u32, cap: Duration) -> Duration {
    let grown = retry.mul_f64(1.5f64.powi(i32::try_from(attempt.saturating_sub(1)).unwrap_or(30)));
    let ceiling = grown.min(cap.max(retry));
    let extra = ceiling.saturating_sub(retry);
    let mut b = [0u8; 8];
    let unit = if getrandom::fill(&mut b).is_ok() {
        (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64
    } else {
        0.5
    };
    retry + extra.mul_f64(unit)
}
