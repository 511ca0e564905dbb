//! Where SSE events are kept for resumption: the [`EventStore`] trait and the in-memory store
//! used by default. A shared store (Redis, say) lets a client resume on another instance.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use futures::future::BoxFuture;

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

/// The default store: per-stream logs in memory, each bounded to `limit` events.
#[derive(Debug)]
pub struct MemoryEventStore {
    limit: usize,
    logs: Mutex<HashMap<String, HashMap<String, Log>>>,
}

impl MemoryEventStore {
    /// A store keeping at most `limit` events per stream.
    pub fn new(limit: usize) -> Self {
        Self {
            limit: limit.max(1),
            logs: Mutex::new(HashMap::new()),
        }
    }

    fn logs(&self) -> std::sync::MutexGuard<'_, HashMap<String, HashMap<String, Log>>> {
        self.logs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Streams held, over all sessions.
    pub fn stream_count(&self) -> usize {
        self.logs().values().map(HashMap::len).sum()
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
        let mut logs = self.logs();
        let log = logs
            .entry(session.to_owned())
            .or_default()
            .entry(stream.to_owned())
            .or_default();
        log.push_back((seq, data.to_owned()));
        while log.len() > self.limit {
            log.pop_front();
        }
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
            .get(session)
            .and_then(|s| s.get(stream))
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
        if let Some(s) = logs.get_mut(session) {
            s.remove(stream);
            if s.is_empty() {
                logs.remove(session);
            }
        }
        Box::pin(std::future::ready(()))
    }

    fn forget_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, ()> {
        self.logs().remove(session);
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
        s.forget_stream("a", "s1").await;
        assert!(s.replay("a", "s1", 0, u64::MAX).await.is_empty());
        s.forget_session("a").await;
        assert_eq!(s.stream_count(), 1);
    }
}
