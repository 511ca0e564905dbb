//! [`MemoryStore`]: the whole store in one process.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::broadcast;

use crate::state::{self, Expect, StateError, StateScope};
use crate::{
    AppendEvent, BusEvent, EventLog, SessionRecord, StateChange, Store, StoreConfig, StoreResult,
    StoredEvent, StoredTask, StreamInfo,
};

struct Stored {
    record: SessionRecord,
    expires: Instant,
    blocks: u64,
    pending: HashMap<String, String>,
    streams: HashMap<String, Log>,
}

struct Log {
    info: Option<StreamInfo>,
    events: VecDeque<StoredEvent>,
}

struct Shared {
    config: StoreConfig,
    sessions: Mutex<HashMap<String, Stored>>,
    alive: Mutex<HashMap<String, Instant>>,
    secrets: Mutex<HashMap<String, [u8; 32]>>,
    tasks: Mutex<HashMap<String, StoredTask>>,
    bus: broadcast::Sender<BusEvent>,
    /// Handlers' state.
    state: crate::MemoryStateStore,
}

/// A [`Store`] in this process's memory. [`MemoryStore::instance_handle`] gives handles that
/// share the data under other instance ids, so several endpoints in one process behave as
/// instances of one deployment. Expiry is checked when a session is used.
#[derive(Clone)]
pub struct MemoryStore {
    shared: Arc<Shared>,
    instance: String,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("instance", &self.instance)
            .field("sessions", &self.session_count())
            .finish()
    }
}

fn ready<'a, T: Send + 'a>(v: T) -> BoxFuture<'a, StoreResult<T>> {
    Box::pin(std::future::ready(Ok(v)))
}

impl MemoryStore {
    /// A new, empty store; this handle is instance `instance`.
    pub fn new(instance: impl Into<String>, config: StoreConfig) -> Self {
        let (bus, _) = broadcast::channel(config.bus_buffer.max(16));
        Self {
            shared: Arc::new(Shared {
                config,
                sessions: Mutex::new(HashMap::new()),
                alive: Mutex::new(HashMap::new()),
                secrets: Mutex::new(HashMap::new()),
                tasks: Mutex::new(HashMap::new()),
                bus,
                state: crate::MemoryStateStore::default(),
            }),
            instance: instance.into(),
        }
    }

    /// Another handle on the same data, as instance `instance`.
    pub fn instance_handle(&self, instance: impl Into<String>) -> Self {
        Self {
            shared: self.shared.clone(),
            instance: instance.into(),
        }
    }

    /// Sessions held (expired ones included until they are next looked at).
    pub fn session_count(&self) -> usize {
        self.shared.sessions.lock().len()
    }

    /// Forgets that `instance` was alive (as if it had died).
    pub fn declare_dead(&self, instance: &str) {
        self.shared.alive.lock().remove(instance);
    }

    fn with_live<T>(&self, id: &str, f: impl FnOnce(&mut Stored) -> T) -> Option<T> {
        let mut sessions = self.shared.sessions.lock();
        let now = Instant::now();
        if sessions.get(id).is_some_and(|s| s.expires <= now) {
            sessions.remove(id);
        }
        sessions.get_mut(id).map(f)
    }
}

impl crate::StateStore for MemoryStore {
    fn get<'a>(
        &'a self,
        scope: &'a StateScope,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<state::Stored>, StateError>> {
        self.shared.state.get(scope, key)
    }

    fn put<'a>(
        &'a self,
        scope: &'a StateScope,
        key: &'a str,
        value: &'a str,
        expect: Expect,
        limits: &'a state::StateLimits,
    ) -> BoxFuture<'a, Result<state::Written, StateError>> {
        self.shared.state.put(scope, key, value, expect, limits)
    }

    fn remove<'a>(
        &'a self,
        scope: &'a StateScope,
        key: &'a str,
        expect: Expect,
    ) -> BoxFuture<'a, Result<state::Removed, StateError>> {
        self.shared.state.remove(scope, key, expect)
    }

    fn keys<'a>(&'a self, scope: &'a StateScope) -> BoxFuture<'a, Result<Vec<String>, StateError>> {
        self.shared.state.keys(scope)
    }

    fn clear<'a>(&'a self, scope: &'a StateScope) -> BoxFuture<'a, Result<(), StateError>> {
        self.shared.state.clear(scope)
    }

    // A session may go on at another instance: its state goes with the session's record
    // (`delete_session`).
}

impl EventLog for MemoryStore {
    fn open_stream<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        info: &'a StreamInfo,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.with_live(session, |s| {
            s.streams
                .entry(stream.to_owned())
                .or_insert(Log {
                    info: None,
                    events: VecDeque::new(),
                })
                .info = Some(info.clone());
        });
        ready(())
    }

    fn append<'a>(&'a self, e: AppendEvent<'a>) -> BoxFuture<'a, StoreResult<()>> {
        let max = self.shared.config.max_events_per_stream.max(1);
        self.with_live(e.session, |s| {
            let log = s.streams.entry(e.stream.to_owned()).or_insert(Log {
                info: None,
                events: VecDeque::new(),
            });
            if let Some(info) = e.info {
                log.info = Some(info.clone());
            }
            log.events.push_back(StoredEvent {
                seq: e.seq,
                data: e.data.to_owned(),
                last: e.last,
            });
            while log.events.len() > max {
                log.events.pop_front();
            }
        });
        ready(())
    }

    fn replay<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        after: u64,
    ) -> BoxFuture<'a, StoreResult<Vec<StoredEvent>>> {
        let events = self.with_live(session, |s| {
            s.streams
                .get(stream)
                .map(|l| l.events.iter().filter(|e| e.seq > after).cloned().collect())
                .unwrap_or_default()
        });
        ready(events.unwrap_or_default())
    }

    fn stream_info<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<StreamInfo>>> {
        let info = self.with_live(session, |s| {
            s.streams.get(stream).and_then(|l| l.info.clone())
        });
        ready(info.flatten())
    }

    fn forget_stream<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.with_live(session, |s| s.streams.remove(stream));
        ready(())
    }
}

impl Store for MemoryStore {
    fn instance(&self) -> &str {
        &self.instance
    }

    fn config(&self) -> &StoreConfig {
        &self.shared.config
    }

    fn create_session<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
    ) -> BoxFuture<'a, StoreResult<()>> {
        if let Err(e) = record.check_size(self.shared.config.max_record) {
            return Box::pin(std::future::ready(Err(e)));
        }
        let stored = Stored {
            record: record.clone(),
            expires: Instant::now() + self.shared.config.session_ttl,
            blocks: 0,
            pending: HashMap::new(),
            streams: HashMap::new(),
        };
        self.shared.sessions.lock().insert(id.to_owned(), stored);
        ready(())
    }

    fn load_session<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<SessionRecord>>> {
        ready(self.with_live(id, |s| s.record.clone()))
    }

    fn touch_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        let ttl = self.shared.config.session_ttl;
        ready(
            self.with_live(id, |s| s.expires = Instant::now() + ttl)
                .is_some(),
        )
    }

    fn update_session<'a>(
        &'a self,
        id: &'a str,
        change: &'a StateChange,
    ) -> BoxFuture<'a, StoreResult<()>> {
        if let Err(e) = change.check_size(self.shared.config.max_record) {
            return Box::pin(std::future::ready(Err(e)));
        }
        let max = self.shared.config.max_subscriptions;
        let applied = self.with_live(id, |s| change.apply_within(&mut s.record, max));
        Box::pin(std::future::ready(applied.unwrap_or(Ok(()))))
    }

    fn delete_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        self.shared.sessions.lock().remove(id);
        crate::StateStore::session_ended(&self.shared.state, id);
        ready(())
    }

    fn next_block<'a>(&'a self, session: &'a str) -> BoxFuture<'a, StoreResult<u64>> {
        let n = self.with_live(session, |s| {
            s.blocks += 1;
            s.blocks
        });
        ready(n.unwrap_or(1))
    }

    fn put_pending<'a>(&'a self, session: &'a str, id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        let me = self.instance.clone();
        self.with_live(session, |s| s.pending.insert(id.to_owned(), me));
        ready(())
    }

    fn take_pending<'a>(
        &'a self,
        session: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<String>>> {
        ready(self.with_live(session, |s| s.pending.remove(id)).flatten())
    }

    fn heartbeat(&self) -> BoxFuture<'_, StoreResult<()>> {
        self.shared
            .alive
            .lock()
            .insert(self.instance.clone(), Instant::now());
        ready(())
    }

    fn is_alive<'a>(&'a self, instance: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        let window = self.shared.config.heartbeat * 3;
        let alive = self
            .shared
            .alive
            .lock()
            .get(instance)
            .is_some_and(|t| t.elapsed() <= window);
        ready(alive)
    }

    fn shared_secret<'a>(&'a self, name: &'a str) -> BoxFuture<'a, StoreResult<[u8; 32]>> {
        let mut secrets = self.shared.secrets.lock();
        if let Some(s) = secrets.get(name) {
            return ready(*s);
        }
        let secret = match crate::random_secret() {
            Ok(s) => s,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        secrets.insert(name.to_owned(), secret);
        ready(secret)
    }

    fn put_task<'a>(&'a self, task: &'a StoredTask) -> BoxFuture<'a, StoreResult<()>> {
        self.shared
            .tasks
            .lock()
            .insert(task.id.clone(), task.clone());
        ready(())
    }

    fn get_task<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<Option<String>>> {
        let now = crate::now_ms();
        let mut tasks = self.shared.tasks.lock();
        if tasks.get(id).is_some_and(|t| t.expires_ms <= now) {
            tasks.remove(id);
        }
        ready(tasks.get(id).map(|t| t.json.clone()))
    }

    fn list_tasks<'a>(
        &'a self,
        owner: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, StoreResult<Vec<String>>> {
        let now = crate::now_ms();
        let mut tasks = self.shared.tasks.lock();
        tasks.retain(|_, t| t.expires_ms > now);
        let mut mine: Vec<&StoredTask> = tasks
            .values()
            .filter(|t| t.owner.as_deref() == owner)
            .collect();
        mine.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
        ready(mine.iter().take(limit).map(|t| t.json.clone()).collect())
    }

    fn delete_task<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        self.shared.tasks.lock().remove(id);
        ready(())
    }

    fn publish<'a>(&'a self, event: &'a BusEvent) -> BoxFuture<'a, StoreResult<()>> {
        if let Err(e) = event.encode_within(self.shared.config.max_bus_event) {
            return Box::pin(std::future::ready(Err(e)));
        }
        // No reader is fine: no instance is running.
        let _ = self.shared.bus.send(event.clone());
        ready(())
    }

    fn bus(&self) -> broadcast::Receiver<BusEvent> {
        self.shared.bus.subscribe()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn record() -> SessionRecord {
        SessionRecord {
            version: "2025-06-18".into(),
            owner: None,
            init: "{}".into(),
            log_level: None,
            subscriptions: vec![],
            created_ms: 0,
        }
    }

    #[tokio::test]
    async fn sessions_expire_and_instances_share() {
        let a = MemoryStore::new(
            "a",
            StoreConfig::default().session_ttl(std::time::Duration::from_millis(50)),
        );
        let b = a.instance_handle("b");
        a.create_session("s", &record()).await.unwrap();
        b.update_session("s", &StateChange::Subscribe("x://1".into()))
            .await
            .unwrap();
        assert_eq!(
            a.load_session("s").await.unwrap().unwrap().subscriptions,
            ["x://1"]
        );
        b.put_pending("s", "7").await.unwrap();
        assert_eq!(
            a.take_pending("s", "7").await.unwrap().as_deref(),
            Some("b")
        );
        assert_eq!(a.take_pending("s", "7").await.unwrap(), None);
        assert_eq!(a.next_block("s").await.unwrap(), 1);
        assert_eq!(b.next_block("s").await.unwrap(), 2);
        tokio::time::sleep(std::time::Duration::from_millis(80)).await;
        assert!(!a.touch_session("s").await.unwrap());
        assert_eq!(a.session_count(), 0);
    }

    #[tokio::test]
    async fn limits_refuse() {
        let a = MemoryStore::new(
            "a",
            StoreConfig::default()
                .max_subscriptions(1)
                .max_bus_event(100),
        );
        a.create_session("s", &record()).await.unwrap();
        let sub = |u: &str| StateChange::Subscribe(u.to_owned());
        a.update_session("s", &sub("x://1")).await.unwrap();
        a.update_session("s", &sub("x://1")).await.unwrap();
        let refused = a.update_session("s", &sub("x://2")).await.unwrap_err();
        assert!(!refused.is_transient(), "{refused}");
        let long = "x".repeat(StoreConfig::default().max_record + 1);
        a.update_session("s", &StateChange::Unsubscribe("x://1".into()))
            .await
            .unwrap();
        assert!(a.update_session("s", &sub(&long)).await.is_err());
        let big = BusEvent::SessionEnded {
            session: "s".repeat(200),
        };
        assert!(matches!(
            a.publish(&big).await,
            Err(crate::StoreError::Refused(_))
        ));
    }
}
