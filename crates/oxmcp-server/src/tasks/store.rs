//! Where task state lives: [`TaskStore`], with [`MemoryTaskStore`] for one process. Another
//! store (Redis, through `oxmcp-http`'s adapter over `oxmcp_store::Store`) makes tasks readable
//! from every instance and lets them outlive the instance that answered `tasks/get`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use oxmcp_types::{InputRequests, JsonObject, TaskStatus};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::broadcast;

/// Which wire form a task is shown in: the era of the request that created it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskEra {
    /// 2025-11-25 (`ttl`, `pollInterval`, `tasks/result`).
    Legacy,
    /// 2026-07-28, the tasks extension (`ttlMs`, inlined results, `tasks/update`).
    Modern,
}

/// One task's state, as stored. Only the instance running a task writes its record; others
/// read it and send [`TaskSignal`]s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRecord {
    /// The task's id (128 random bits, URL-safe).
    pub id: String,
    /// Who created it (the verified principal), when the transport knows: only they may see
    /// or change it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The request it runs (`tools/call`).
    pub method: String,
    /// The wire form it is shown in.
    pub era: TaskEra,
    /// Where it is.
    pub status: TaskStatus,
    /// What the server says about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// Creation, in ms since the Unix epoch.
    pub created_ms: u64,
    /// Last change, in ms since the Unix epoch.
    pub updated_ms: u64,
    /// Lifetime from creation in ms; the record is deleted after it.
    pub ttl_ms: u64,
    /// Suggested polling interval in ms.
    pub poll_interval_ms: u64,
    /// The result, once finished with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The JSON-RPC error, once `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// Input requests waiting for the client's answers, by key.
    #[serde(default, skip_serializing_if = "InputRequests::is_empty")]
    pub input_requests: InputRequests,
}

impl TaskRecord {
    /// When the record may be deleted, in ms since the Unix epoch.
    pub fn expires_ms(&self) -> u64 {
        self.created_ms.saturating_add(self.ttl_ms)
    }

    /// Whether it has outlived its TTL at `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        now_ms >= self.expires_ms()
    }
}

/// What another instance asks of the instance running a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum TaskSignal {
    /// `tasks/cancel`.
    Cancel,
    /// `tasks/update`: answers to input requests.
    Input {
        /// Answers by key.
        responses: JsonObject,
    },
}

/// Why the task store failed (the request is answered with -32603).
#[derive(Debug, Clone, thiserror::Error)]
#[error("task store: {0}")]
pub struct TaskStoreError(pub String);

/// What a task store operation returns.
pub type TaskStoreResult<T> = Result<T, TaskStoreError>;

/// Shared task state. Records expire by themselves at [`TaskRecord::expires_ms`].
pub trait TaskStore: std::fmt::Debug + Send + Sync + 'static {
    /// Saves a record (new or changed); it expires at its `expires_ms`.
    fn put<'a>(&'a self, record: &'a TaskRecord) -> BoxFuture<'a, TaskStoreResult<()>>;
    /// A record, unless unknown or expired.
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, TaskStoreResult<Option<TaskRecord>>>;
    /// Every live record of `owner` (`None`: of nobody in particular), oldest first, at most
    /// `limit`.
    fn list<'a>(
        &'a self,
        owner: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, TaskStoreResult<Vec<TaskRecord>>>;
    /// Deletes a record.
    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, TaskStoreResult<()>>;
    /// Sends a signal to whichever instance runs the task (this one included).
    fn signal<'a>(
        &'a self,
        id: &'a str,
        signal: &'a TaskSignal,
    ) -> BoxFuture<'a, TaskStoreResult<()>>;
    /// The signals, from now on.
    fn signals(&self) -> broadcast::Receiver<(String, TaskSignal)>;
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Task records in this process, expired lazily on every access.
pub struct MemoryTaskStore {
    records: Mutex<HashMap<String, TaskRecord>>,
    signals: broadcast::Sender<(String, TaskSignal)>,
}

impl std::fmt::Debug for MemoryTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTaskStore")
            .field("records", &self.records.lock().len())
            .finish()
    }
}

impl Default for MemoryTaskStore {
    fn default() -> Self {
        Self {
            records: Mutex::new(HashMap::new()),
            signals: broadcast::channel(1024).0,
        }
    }
}

impl MemoryTaskStore {
    /// An empty store.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// How many records are held (expired ones dropped first).
    pub fn len(&self) -> usize {
        let now = now_ms();
        let mut records = self.records.lock();
        records.retain(|_, r| !r.expired(now));
        records.len()
    }

    /// Whether no record is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn ready<T: Send + 'static>(v: T) -> BoxFuture<'static, T> {
    Box::pin(std::future::ready(v))
}

impl TaskStore for MemoryTaskStore {
    fn put<'a>(&'a self, record: &'a TaskRecord) -> BoxFuture<'a, TaskStoreResult<()>> {
        self.records
            .lock()
            .insert(record.id.clone(), record.clone());
        ready(Ok(()))
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, TaskStoreResult<Option<TaskRecord>>> {
        let now = now_ms();
        let mut records = self.records.lock();
        let found = match records.get(id) {
            Some(r) if r.expired(now) => {
                records.remove(id);
                None
            }
            other => other.cloned(),
        };
        ready(Ok(found))
    }

    fn list<'a>(
        &'a self,
        owner: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, TaskStoreResult<Vec<TaskRecord>>> {
        let now = now_ms();
        let mut records = self.records.lock();
        records.retain(|_, r| !r.expired(now));
        let mut mine: Vec<TaskRecord> = records
            .values()
            .filter(|r| r.owner.as_deref() == owner)
            .cloned()
            .collect();
        mine.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
        mine.truncate(limit);
        ready(Ok(mine))
    }

    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, TaskStoreResult<()>> {
        self.records.lock().remove(id);
        ready(Ok(()))
    }

    fn signal<'a>(
        &'a self,
        id: &'a str,
        signal: &'a TaskSignal,
    ) -> BoxFuture<'a, TaskStoreResult<()>> {
        let _ = self.signals.send((id.to_owned(), signal.clone()));
        ready(Ok(()))
    }

    fn signals(&self) -> broadcast::Receiver<(String, TaskSignal)> {
        self.signals.subscribe()
    }
}

/// An ISO 8601 (RFC 3339) UTC timestamp of `ms` since the Unix epoch.
pub(crate) fn iso8601(ms: u64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_owned())
}

/// `Duration` in whole ms, saturating.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, owner: Option<&str>, created: u64, ttl: u64) -> TaskRecord {
        TaskRecord {
            id: id.into(),
            owner: owner.map(str::to_owned),
            method: "tools/call".into(),
            era: TaskEra::Modern,
            status: TaskStatus::Working,
            status_message: None,
            created_ms: created,
            updated_ms: created,
            ttl_ms: ttl,
            poll_interval_ms: 100,
            result: None,
            error: None,
            input_requests: InputRequests::new(),
        }
    }

    #[tokio::test]
    async fn expired_records_are_gone_and_lists_are_per_owner() {
        let store = MemoryTaskStore::new();
        let now = now_ms();
        store
            .put(&record("old", None, now - 10_000, 5_000))
            .await
            .unwrap();
        store
            .put(&record("a", Some("alice"), now, 60_000))
            .await
            .unwrap();
        store
            .put(&record("b", Some("bob"), now, 60_000))
            .await
            .unwrap();
        assert!(store.get("old").await.unwrap().is_none());
        assert_eq!(store.len(), 2);
        let alice = store.list(Some("alice"), 10).await.unwrap();
        assert_eq!(alice.len(), 1);
        assert_eq!(alice[0].id, "a");
        assert!(store.list(None, 10).await.unwrap().is_empty());
    }

    #[test]
    fn timestamps_are_rfc3339() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00Z");
        assert!(iso8601(1_764_000_000_123).starts_with("2025-11-24T"));
    }
}
