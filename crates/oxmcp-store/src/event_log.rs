//! [`MemoryEventLog`]: the [`EventLog`] of one instance, in memory, bounded in events per
//! stream and in bytes per session and over all sessions.

use std::collections::{HashMap, VecDeque};

use futures::future::BoxFuture;
use parking_lot::Mutex;

use crate::{AppendEvent, EventLog, StoreResult, StoredEvent, StreamInfo};

/// One stream's log.
#[derive(Default)]
struct Log {
    info: Option<StreamInfo>,
    events: VecDeque<StoredEvent>,
}

/// One session's logs, with the order events were stored in (for eviction by size).
#[derive(Default)]
struct SessionLogs {
    streams: HashMap<String, Log>,
    /// `(stream, seq)` of stored events, oldest first; entries of dropped events are skipped.
    order: VecDeque<(String, u64)>,
    bytes: usize,
}

impl SessionLogs {
    /// Drops the session's oldest stored event; its size, or `None` when nothing is left.
    fn evict_oldest(&mut self) -> Option<usize> {
        while let Some((stream, seq)) = self.order.pop_front() {
            let Some(log) = self.streams.get_mut(&stream) else {
                continue;
            };
            if log.events.front().is_some_and(|e| e.seq == seq) {
                let old = log.events.pop_front()?;
                if log.events.is_empty() {
                    self.streams.remove(&stream);
                }
                self.bytes -= old.data.len();
                return Some(old.data.len());
            }
        }
        None
    }

    fn event_count(&self) -> usize {
        self.streams.values().map(|l| l.events.len()).sum()
    }
}

#[derive(Default)]
struct Logs {
    sessions: HashMap<String, SessionLogs>,
    bytes: usize,
    /// Events not stored because the total cap was reached (logged once per burst).
    refused: u64,
}

impl std::fmt::Debug for Logs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Logs")
            .field("sessions", &self.sessions.len())
            .field("bytes", &self.bytes)
            .finish()
    }
}

/// Per-stream logs in this process's memory: the default log of an endpoint serving alone.
/// Bounded in events per stream, in bytes per session (the oldest events of the session go
/// first) and in bytes over all sessions (past that, new events are still delivered live but
/// not kept, so a resumption misses them). A stream whose events are all dropped is
/// forgotten, its [`StreamInfo`] with it.
#[derive(Debug)]
pub struct MemoryEventLog {
    limit: usize,
    session_bytes: usize,
    total_bytes: usize,
    logs: Mutex<Logs>,
}

fn ready<'a, T: Send + 'a>(v: T) -> BoxFuture<'a, StoreResult<T>> {
    Box::pin(std::future::ready(Ok(v)))
}

impl MemoryEventLog {
    /// Default byte cap of one session's stored events.
    pub const DEFAULT_SESSION_BYTES: usize = 8 * 1024 * 1024;
    /// Default byte cap of all stored events.
    pub const DEFAULT_TOTAL_BYTES: usize = 256 * 1024 * 1024;

    /// A log keeping at most `limit` events per stream, with the default byte caps
    /// ([`Self::DEFAULT_SESSION_BYTES`] per session, [`Self::DEFAULT_TOTAL_BYTES`] in all).
    pub fn new(limit: usize) -> Self {
        Self {
            limit: limit.max(1),
            session_bytes: Self::DEFAULT_SESSION_BYTES,
            total_bytes: Self::DEFAULT_TOTAL_BYTES,
            logs: Mutex::new(Logs::default()),
        }
    }

    /// Sets the byte caps: per session (the session's oldest events are dropped first) and
    /// over all sessions (new events are not stored while it is reached).
    pub fn with_byte_limits(mut self, per_session: usize, total: usize) -> Self {
        self.session_bytes = per_session.max(1);
        self.total_bytes = total.max(1);
        self
    }

    fn logs(&self) -> parking_lot::MutexGuard<'_, Logs> {
        self.logs.lock()
    }

    /// Streams held, over all sessions.
    pub fn stream_count(&self) -> usize {
        self.logs().sessions.values().map(|s| s.streams.len()).sum()
    }

    /// Events held, over all sessions.
    pub fn event_count(&self) -> usize {
        self.logs()
            .sessions
            .values()
            .map(SessionLogs::event_count)
            .sum()
    }

    /// Bytes of event data held, over all sessions.
    pub fn byte_count(&self) -> usize {
        self.logs().bytes
    }

    fn store(&self, e: &AppendEvent<'_>) {
        let mut logs = self.logs();
        let logs = &mut *logs;
        let size = e.data.len();
        if size > self.session_bytes || logs.bytes + size > self.total_bytes {
            if logs.refused == 0 {
                tracing::warn!(
                    "event log full ({} bytes held, cap {}; session cap {}): events are sent but not kept for resumption",
                    logs.bytes,
                    self.total_bytes,
                    self.session_bytes
                );
            }
            logs.refused += 1;
            return;
        }
        logs.refused = 0;
        let s = logs.sessions.entry(e.session.to_owned()).or_default();
        let log = s.streams.entry(e.stream.to_owned()).or_default();
        if let Some(info) = e.info {
            log.info = Some(info.clone());
        }
        log.events.push_back(StoredEvent {
            seq: e.seq,
            data: e.data.to_owned(),
            last: e.last,
        });
        let mut freed = 0;
        if log.events.len() > self.limit
            && let Some(old) = log.events.pop_front()
        {
            freed += old.data.len();
        }
        s.order.push_back((e.stream.to_owned(), e.seq));
        s.bytes = s.bytes + size - freed;
        while s.bytes > self.session_bytes {
            match s.evict_oldest() {
                Some(n) => freed += n,
                None => break,
            }
        }
        // Entries of events dropped by the per-stream limit stay in `order` until reached;
        // keep the queue proportional to what is stored.
        if s.order.len() > 2 * s.event_count() + 16 {
            let streams = &s.streams;
            s.order.retain(|(st, seq)| {
                streams
                    .get(st)
                    .is_some_and(|l| l.events.front().is_some_and(|first| first.seq <= *seq))
            });
        }
        logs.bytes = logs.bytes + size - freed;
    }
}

impl EventLog for MemoryEventLog {
    fn open_stream<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        info: &'a StreamInfo,
    ) -> BoxFuture<'a, StoreResult<()>> {
        let mut logs = self.logs();
        let s = logs.sessions.entry(session.to_owned()).or_default();
        s.streams.entry(stream.to_owned()).or_default().info = Some(info.clone());
        ready(())
    }

    fn append<'a>(&'a self, event: AppendEvent<'a>) -> BoxFuture<'a, StoreResult<()>> {
        self.store(&event);
        ready(())
    }

    fn replay<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        after: u64,
    ) -> BoxFuture<'a, StoreResult<Vec<StoredEvent>>> {
        let events = self
            .logs()
            .sessions
            .get(session)
            .and_then(|s| s.streams.get(stream))
            .map(|log| {
                log.events
                    .iter()
                    .filter(|e| e.seq > after)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        ready(events)
    }

    fn stream_info<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<StreamInfo>>> {
        let info = self
            .logs()
            .sessions
            .get(session)
            .and_then(|s| s.streams.get(stream))
            .and_then(|l| l.info.clone());
        ready(info)
    }

    fn forget_stream<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
    ) -> BoxFuture<'a, StoreResult<()>> {
        let mut logs = self.logs();
        let mut freed = 0;
        let mut empty = false;
        if let Some(s) = logs.sessions.get_mut(session) {
            if let Some(log) = s.streams.remove(stream) {
                freed = log.events.iter().map(|e| e.data.len()).sum();
                s.bytes -= freed;
                s.order.retain(|(st, _)| st != stream);
            }
            empty = s.streams.is_empty();
        }
        if empty {
            logs.sessions.remove(session);
        }
        logs.bytes -= freed;
        ready(())
    }

    fn forget_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        let mut logs = self.logs();
        if let Some(s) = logs.sessions.remove(session) {
            logs.bytes -= s.bytes;
        }
        ready(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn event<'a>(session: &'a str, stream: &'a str, seq: u64, data: &'a str) -> AppendEvent<'a> {
        AppendEvent {
            session,
            stream,
            seq,
            data,
            last: false,
            info: None,
        }
    }

    async fn seqs(log: &MemoryEventLog, session: &str, stream: &str, after: u64) -> Vec<u64> {
        let events = log.replay(session, stream, after).await.unwrap();
        events.iter().map(|e| e.seq).collect()
    }

    #[tokio::test]
    async fn bounded_and_isolated() {
        let s = MemoryEventLog::new(3);
        for i in 1..=5 {
            s.append(event("a", "s1", i, &format!("e{i}")))
                .await
                .unwrap();
        }
        s.append(event("a", "s2", 1, "other")).await.unwrap();
        s.append(event("b", "s1", 1, "foreign")).await.unwrap();
        assert_eq!(seqs(&s, "a", "s1", 0).await, [3, 4, 5]);
        assert_eq!(seqs(&s, "a", "s1", 3).await, [4, 5]);
        let foreign = s.replay("b", "s1", 0).await.unwrap();
        assert_eq!(foreign.len(), 1);
        assert_eq!(foreign[0].data, "foreign");
        assert_eq!(s.byte_count(), 6 + 5 + 7);
        s.forget_stream("a", "s1").await.unwrap();
        assert!(s.replay("a", "s1", 0).await.unwrap().is_empty());
        s.forget_session("a").await.unwrap();
        assert_eq!(s.stream_count(), 1);
        assert_eq!(s.byte_count(), 7);
    }

    #[tokio::test]
    async fn streams_keep_their_info_and_last_event() {
        let s = MemoryEventLog::new(8);
        let info = StreamInfo {
            owner: "me".into(),
            ids: vec![1.into()],
            batch: false,
        };
        s.open_stream("a", "s1", &info).await.unwrap();
        assert_eq!(s.stream_info("a", "s1").await.unwrap(), Some(info));
        let mut last = event("a", "s1", 1, "done");
        last.last = true;
        s.append(last).await.unwrap();
        assert!(s.replay("a", "s1", 0).await.unwrap()[0].last);
        assert_eq!(s.stream_info("a", "s2").await.unwrap(), None);
    }

    #[tokio::test]
    async fn per_session_bytes_evict_the_oldest_of_any_stream() {
        let s = MemoryEventLog::new(100).with_byte_limits(10, 1000);
        s.append(event("a", "s1", 1, "aaaa")).await.unwrap();
        s.append(event("a", "s2", 1, "bbbb")).await.unwrap();
        s.append(event("a", "s1", 2, "cccc")).await.unwrap();
        assert_eq!(seqs(&s, "a", "s1", 0).await, [2]);
        assert_eq!(seqs(&s, "a", "s2", 0).await, [1]);
        assert_eq!(s.byte_count(), 8);
        // Many events through the per-stream limit keep the bookkeeping small.
        let t = MemoryEventLog::new(2);
        for i in 1..=10_000 {
            t.append(event("a", "s", i, "x")).await.unwrap();
        }
        assert_eq!(t.event_count(), 2);
        assert!(t.logs().sessions["a"].order.len() < 100);
        assert_eq!(t.byte_count(), 2);
    }
}
