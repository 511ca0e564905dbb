//! Where SSE events are kept for resumption: the [`EventStore`] trait and the in-memory store
//! used by default. The store holds events only: sessions and their streams live in the
//! memory of the instance that made them, so a stream resumes on that instance. Plugging in
//! a shared store does not by itself let another instance resume it.

use std::collections::{HashMap, VecDeque};

use futures::future::BoxFuture;
use parking_lot::Mutex;

/// Keeps each stream's events so a client can resume it with `Last-Event-ID`.
///
/// Streams are named by `(session, stream)`; `seq` increases by one per event within a stream,
/// starting at 1. A store may drop old events (a bounded log); what it returns from
/// [`EventStore::replay`] must be exactly the asked stream's events, oldest first.
pub trait EventStore: Send + Sync + 'static {
    /// Stores event `seq` of a stream.
    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        seq: u64,
        data: &'a str,
    ) -> BoxFuture<'a, ()>;
    /// The stream's events with `after < seq < before`, oldest first.
    fn replay<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        after: u64,
        before: u64,
    ) -> BoxFuture<'a, Vec<(u64, String)>>;
    /// Drops one stream's events.
    fn forget_stream<'a>(&'a self, session: &'a str, stream: &'a str) -> BoxFuture<'a, ()>;
    /// Drops every stream of a session.
    fn forget_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, ()>;
}

type Log = VecDeque<(u64, String)>;

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
            if log.front().is_some_and(|(s, _)| *s == seq) {
                let (_, data) = log.pop_front()?;
                if log.is_empty() {
                    self.streams.remove(&stream);
                }
                self.bytes -= data.len();
                return Some(data.len());
            }
        }
        None
    }

    fn event_count(&self) -> usize {
        self.streams.values().map(VecDeque::len).sum()
    }
}

#[derive(Default)]
struct Logs {
    sessions: HashMap<String, SessionLogs>,
    bytes: usize,
    /// Events not stored because the total cap was reached (logged once per burst).
    refused: u64,
}

/// The default store: per-stream logs in memory, bounded in events per stream, in bytes per
/// session (the oldest events of the session go first) and in bytes over all sessions (past
/// that, new events are still delivered live but not kept, so a resumption misses them).
#[derive(Debug)]
pub struct MemoryEventStore {
    limit: usize,
    session_bytes: usize,
    total_bytes: usize,
    logs: Mutex<Logs>,
}

impl std::fmt::Debug for Logs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Logs")
            .field("sessions", &self.sessions.len())
            .field("bytes", &self.bytes)
            .finish()
    }
}

/// Default byte cap of one session's stored events.
pub const DEFAULT_SESSION_BYTES: usize = 8 * 1024 * 1024;
/// Default byte cap of all stored events.
pub const DEFAULT_TOTAL_BYTES: usize = 256 * 1024 * 1024;

impl MemoryEventStore {
    /// A store keeping at most `limit` events per stream, with the default byte caps
    /// ([`DEFAULT_SESSION_BYTES`] per session, [`DEFAULT_TOTAL_BYTES`] in all).
    pub fn new(limit: usize) -> Self {
        Self {
            limit: limit.max(1),
            session_bytes: DEFAULT_SESSION_BYTES,
            total_bytes: DEFAULT_TOTAL_BYTES,
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

    fn store(&self, session: &str, stream: &str, seq: u64, data: &str) {
        let mut logs = self.logs();
        let logs = &mut *logs;
        let size = data.len();
        if size > self.session_bytes || logs.bytes + size > self.total_bytes {
            if logs.refused == 0 {
                tracing::warn!(
                    "event store full ({} bytes held, cap {}; session cap {}): events are sent but not kept for resumption",
                    logs.bytes,
                    self.total_bytes,
                    self.session_bytes
                );
            }
            logs.refused += 1;
            return;
        }
        logs.refused = 0;
        let s = logs.sessions.entry(session.to_owned()).or_default();
        let log = s.streams.entry(stream.to_owned()).or_default();
        log.push_back((seq, data.to_owned()));
        let mut freed = 0;
        if log.len() > self.limit
            && let Some((_, old)) = log.pop_front()
        {
            freed += old.len();
        }
        s.order.push_back((stream.to_owned(), seq));
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
                    .is_some_and(|l| l.front().is_some_and(|(first, _)| first <= seq))
            });
        }
        logs.bytes = logs.bytes + size - freed;
    }
}

impl EventStore for MemoryEventStore {
    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        seq: u64,
        data: &'a str,
    ) -> BoxFuture<'a, ()> {
        self.store(session, stream, seq, data);
        Box::pin(std::future::ready(()))
    }

    fn replay<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        after: u64,
        before: u64,
    ) -> BoxFuture<'a, Vec<(u64, String)>> {
        let events = self
            .logs()
            .sessions
            .get(session)
            .and_then(|s| s.streams.get(stream))
            .map(|log| {
                log.iter()
                    .filter(|(s, _)| *s > after && *s < before)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        Box::pin(std::future::ready(events))
    }

    fn forget_stream<'a>(&'a self, session: &'a str, stream: &'a str) -> BoxFuture<'a, ()> {
        let mut logs = self.logs();
        let mut freed = 0;
        let mut empty = false;
        if let Some(s) = logs.sessions.get_mut(session) {
            if let Some(log) = s.streams.remove(stream) {
                freed = log.iter().map(|(_, d)| d.len()).sum();
                s.bytes -= freed;
                s.order.retain(|(st, _)| st != stream);
            }
            empty = s.streams.is_empty();
        }
        if empty {
            logs.sessions.remove(session);
        }
        logs.bytes -= freed;
        Box::pin(std::future::ready(()))
    }

    fn forget_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, ()> {
        let mut logs = self.logs();
        if let Some(s) = logs.sessions.remove(session) {
            logs.bytes -= s.bytes;
        }
        Box::pin(std::future::ready(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bounded_and_isolated() {
        let s = MemoryEventStore::new(3);
        for i in 1..=5 {
            s.append("a", "s1", i, &format!("e{i}")).await;
        }
        s.append("a", "s2", 1, "other").await;
        s.append("b", "s1", 1, "foreign").await;
        let r = s.replay("a", "s1", 0, u64::MAX).await;
        assert_eq!(r.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [3, 4, 5]);
        assert_eq!(s.replay("a", "s1", 3, 5).await, vec![(4, "e4".to_owned())]);
        assert_eq!(
            s.replay("b", "s1", 0, u64::MAX).await,
            vec![(1, "foreign".to_owned())]
        );
        assert_eq!(s.byte_count(), 6 + 5 + 7);
        s.forget_stream("a", "s1").await;
        assert!(s.replay("a", "s1", 0, u64::MAX).await.is_empty());
        s.forget_session("a").await;
        assert_eq!(s.stream_count(), 1);
        assert_eq!(s.byte_count(), 7);
    }

    #[tokio::test]
    async fn per_session_bytes_evict_the_oldest_of_any_stream() {
        let s = MemoryEventStore::new(100).with_byte_limits(10, 1000);
        s.append("a", "s1", 1, "aaaa").await;
        s.append("a", "s2", 1, "bbbb").await;
        s.append("a", "s1", 2, "cccc").await;
        assert_eq!(
            s.replay("a", "s1", 0, u64::MAX).await,
            vec![(2, "cccc".into())]
        );
        assert_eq!(
            s.replay("a", "s2", 0, u64::MAX).await,
            vec![(1, "bbbb".into())]
        );
        assert_eq!(s.byte_count(), 8);
        // Many events through the per-stream limit keep the bookkeeping small.
        let t = MemoryEventStore::new(2);
        for i in 1..=10_000 {
            t.append("a", "s", i, "x").await;
        }
        assert_eq!(t.event_count(), 2);
        assert!(t.logs().sessions["a"].order.len() < 100);
        assert_eq!(t.byte_count(), 2);
    }
}
