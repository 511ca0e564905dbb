//! The traits of `oxmcp-store`, each method one of [`Inner`]'s.

use futures::future::BoxFuture;
use oxmcp_store::state::{Expect, Removed, StateError, StateLimits, StateScope, Stored, Written};
use oxmcp_store::{
    AppendEvent, BusEvent, EventLog, SessionRecord, StateChange, StateStore, Store, StoreConfig,
    StoreResult, StoreStats, StoredEvent, StoredTask, StreamInfo,
};
use tokio::sync::broadcast;

use crate::PostgresStore;

impl PostgresStore {
    /// Deletes what expired now (the instances do it every few seconds by themselves).
    ///
    /// # Errors
    /// The database failing.
    pub async fn sweep(&self) -> StoreResult<()> {
        self.inner.sweep().await
    }
}

impl EventLog for PostgresStore {
    fn open_stream<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        info: &'a StreamInfo,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(self.inner.open_stream(session, stream, info))
    }
    fn append<'a>(&'a self, event: AppendEvent<'a>) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(self.inner.append(event))
    }
    fn replay<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        after: u64,
    ) -> BoxFuture<'a, StoreResult<Vec<StoredEvent>>> {
        Box::pin(self.inner.replay(session, stream, after))
    }
    fn stream_info<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<StreamInfo>>> {
        Box::pin(self.inner.stream_info(session, stream))
    }
    fn forget_stream<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(self.inner.forget_stream(session, stream))
    }
}

impl StateStore for PostgresStore {
    fn get<'a>(
        &'a self,
        scope: &'a StateScope,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Stored>, StateError>> {
        Box::pin(self.inner.state_get(scope, key))
    }
    fn put<'a>(
        &'a self,
        scope: &'a StateScope,
        key: &'a str,
        value: &'a str,
        expect: Expect,
        limits: &'a StateLimits,
    ) -> BoxFuture<'a, Result<Written, StateError>> {
        Box::pin(self.inner.state_put(scope, key, value, expect, limits))
    }
    fn remove<'a>(
        &'a self,
        scope: &'a StateScope,
        key: &'a str,
        expect: Expect,
    ) -> BoxFuture<'a, Result<Removed, StateError>> {
        Box::pin(self.inner.state_remove(scope, key, expect))
    }
    fn keys<'a>(&'a self, scope: &'a StateScope) -> BoxFuture<'a, Result<Vec<String>, StateError>> {
        Box::pin(self.inner.state_keys(scope))
    }
    fn clear<'a>(&'a self, scope: &'a StateScope) -> BoxFuture<'a, Result<(), StateError>> {
        Box::pin(self.inner.state_clear(scope))
    }
}

impl Store for PostgresStore {
    fn instance(&self) -> &str {
        &self.inner.instance
    }
    fn config(&self) -> &StoreConfig {
        &self.inner.config
    }
    fn create_session<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(self.inner.create_session(id, record))
    }
    fn load_session<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<SessionRecord>>> {
        Box::pin(self.inner.load_session(id))
    }
    fn touch_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(self.inner.touch_session(id))
    }
    fn update_session<'a>(
        &'a self,
        id: &'a str,
        change: &'a StateChange,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(self.inner.update_session(id, change))
    }
    fn delete_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(self.inner.delete_session(id))
    }
    fn next_block<'a>(&'a self, session: &'a str) -> BoxFuture<'a, StoreResult<u64>> {
        Box::pin(self.inner.next_block(session))
    }
    fn put_pending<'a>(&'a self, session: &'a str, id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(self.inner.put_pending(session, id))
    }
    fn take_pending<'a>(
        &'a self,
        session: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<String>>> {
        Box::pin(self.inner.take_pending(session, id))
    }
    fn heartbeat(&self) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(self.inner.heartbeat())
    }
    fn is_alive<'a>(&'a self, instance: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(self.inner.is_alive(instance))
    }
    fn shared_secret<'a>(&'a self, name: &'a str) -> BoxFuture<'a, StoreResult<[u8; 32]>> {
        Box::pin(self.inner.shared_secret(name))
    }
    fn put_task<'a>(&'a self, task: &'a StoredTask) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(self.inner.put_task(task))
    }
    fn get_task<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<Option<String>>> {
        Box::pin(self.inner.get_task(id))
    }
    fn list_tasks<'a>(
        &'a self,
        owner: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, StoreResult<Vec<String>>> {
        Box::pin(self.inner.list_tasks(owner, limit))
    }
    fn delete_task<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(self.inner.delete_task(id))
    }
    fn publish<'a>(&'a self, event: &'a BusEvent) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(self.inner.publish(event))
    }
    fn stats(&self) -> StoreStats {
        StoreStats {
            round_trips: self
                .inner
                .round_trips
                .load(std::sync::atomic::Ordering::Relaxed),
            operations: self
                .inner
                .operations
                .load(std::sync::atomic::Ordering::Relaxed),
            busy_micros: self
                .inner
                .busy_micros
                .load(std::sync::atomic::Ordering::Relaxed),
        }
    }
    fn bus_breaks(&self) -> u64 {
        self.inner
            .bus_breaks
            .load(std::sync::atomic::Ordering::Acquire)
    }
    fn bus(&self) -> broadcast::Receiver<BusEvent> {
        self.inner.bus.subscribe()
    }
}
