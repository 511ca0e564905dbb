//! [`StoreTasks`]: a server's tasks in a shared [`oxmcp_store::Store`] (Redis, PostgreSQL), so
//! that every instance of a scaled-out server reads them, and `tasks/cancel` or
//! `tasks/update` received by one instance reaches the instance running the task over the
//! store's bus. Each record names the instance running the task: once that instance's
//! heartbeats stop, the first instance that reads an unfinished task stores it as `failed`.

use std::sync::Arc;

use futures::future::BoxFuture;
use oxmcp_server::tasks::{TaskRecord, TaskSignal, TaskStore, TaskStoreError, TaskStoreResult};
use oxmcp_store::{BusEvent, Store, StoredTask};
use tokio::sync::broadcast;

/// A [`TaskStore`] over a [`Store`]. Set it as [`oxmcp_server::ServerConfig::task_store`].
pub struct StoreTasks {
    store: Arc<dyn Store>,
    signals: broadcast::Sender<(String, TaskSignal)>,
}

impl std::fmt::Debug for StoreTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreTasks")
            .field("instance", &self.store.instance())
            .finish()
    }
}

fn failed(e: impl std::fmt::Display) -> TaskStoreError {
    TaskStoreError(e.to_string())
}

impl StoreTasks {
    /// Task state in `store`. Starts reading the store's bus for task signals: call it
    /// within a Tokio runtime.
    pub fn new(store: Arc<dyn Store>) -> Arc<Self> {
        let (signals, _) = broadcast::channel(1024);
        let mut bus = store.bus();
        let tx = signals.clone();
        tokio::spawn(async move {
            loop {
                match bus.recv().await {
                    Ok(BusEvent::Task { task, signal, .. }) => {
                        match serde_json::from_value::<TaskSignal>(signal) {
                            Ok(s) => {
                                let _ = tx.send((task, s));
                            }
                            Err(e) => tracing::warn!(%task, "unreadable task signal: {e}"),
                        }
                    }
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!("{n} bus events missed (task signals among them?)");
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        heartbeats(&store);
        Arc::new(Self { store, signals })
    }
}

/// Says this instance is alive every `heartbeat` for as long as the store lives, so that the
/// others do not take its tasks for a dead instance's (the HTTP scale-out layer says so too;
/// a server that shares only its tasks would not).
fn heartbeats(store: &Arc<dyn Store>) {
    let weak = Arc::downgrade(store);
    let every = store
        .config()
        .heartbeat
        .max(std::time::Duration::from_millis(100));
    tokio::spawn(async move {
        loop {
            let Some(store) = weak.upgrade() else {
                return;
            };
            if let Err(e) = store.heartbeat().await {
                tracing::debug!("task heartbeat failed: {e}");
            }
            drop(store);
            tokio::time::sleep(every).await;
        }
    });
}

/// The key, beside the record's own, that names the instance running the task.
const RUNNER: &str = "x-oxmcp-runner";

/// A stored record and the instance that runs it (records stored before the instance was
/// kept name none).
fn decode(json: &str) -> TaskStoreResult<(TaskRecord, Option<String>)> {
    let mut value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| failed(format!("unreadable task record: {e}")))?;
    let runner = value
        .as_object_mut()
        .and_then(|o| o.remove(RUNNER))
        .and_then(|r| r.as_str().map(str::to_owned));
    let record = serde_json::from_value(value)
        .map_err(|e| failed(format!("unreadable task record: {e}")))?;
    Ok((record, runner))
}

impl StoreTasks {
    /// Saves `record` as run by `runner`.
    async fn save(&self, record: &TaskRecord, runner: &str) -> TaskStoreResult<()> {
        let mut value = serde_json::to_value(record).map_err(failed)?;
        if let Some(o) = value.as_object_mut() {
            o.insert(
                RUNNER.to_owned(),
                serde_json::Value::String(runner.to_owned()),
            );
        }
        let stored = StoredTask {
            id: record.id.clone(),
            owner: record.owner.clone(),
            created_ms: record.created_ms,
            expires_ms: record.expires_ms(),
            json: value.to_string(),
        };
        self.store.put_task(&stored).await.map_err(failed)
    }

    /// The record stored as `json`, as it is: failed, when it is not finished and the
    /// instance running it has stopped saying it is alive (it died: nobody will finish it).
    /// The failure is stored, so every instance answers the same, unless the record changed
    /// meanwhile (its runner wrote it: it lives). A runner that was only slow, not dead, may
    /// still store its result over the failure afterwards.
    async fn checked(&self, json: &str) -> TaskStoreResult<TaskRecord> {
        let (record, runner) = decode(json)?;
        let Some(runner) = runner else {
            return Ok(record);
        };
        if record.status.is_terminal()
            || runner == self.store.instance()
            || self.store.is_alive(&runner).await.map_err(failed)?
        {
            return Ok(record);
        }
        match self.store.get_task(&record.id).await.map_err(failed)? {
            Some(again) if again == json => {}
            Some(again) => return Ok(decode(&again)?.0),
            None => return Ok(record),
        }
        let mut record = record;
        let why = format!("the instance running the task ({runner}) stopped before it finished");
        tracing::warn!(task = %record.id, "{why}");
        record.status = oxmcp_types::TaskStatus::Failed;
        record.status_message = Some(why.clone());
        record.updated_ms = oxmcp_store::now_ms();
        record.input_requests = Default::default();
        record.error = Some(serde_json::json!({"code": -32603, "message": why}));
        self.save(&record, &runner).await?;
        Ok(record)
    }
}

impl TaskStore for StoreTasks {
    fn put<'a>(&'a self, record: &'a TaskRecord) -> BoxFuture<'a, TaskStoreResult<()>> {
        // Only the instance running a task writes its record.
        Box::pin(self.save(record, self.store.instance()))
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, TaskStoreResult<Option<TaskRecord>>> {
        Box::pin(async move {
            match self.store.get_task(id).await.map_err(failed)? {
                Some(json) => Ok(Some(self.checked(&json).await?)),
                None => Ok(None),
            }
        })
    }

    fn list<'a>(
        &'a self,
        owner: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, TaskStoreResult<Vec<TaskRecord>>> {
        Box::pin(async move {
            let all = self.store.list_tasks(owner, limit).await.map_err(failed)?;
            let mut records = Vec::with_capacity(all.len());
            for json in &all {
                records.push(self.checked(json).await?);
            }
            Ok(records)
        })
    }

    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, TaskStoreResult<()>> {
        Box::pin(async move { self.store.delete_task(id).await.map_err(failed) })
    }

    fn signal<'a>(
        &'a self,
        id: &'a str,
        signal: &'a TaskSignal,
    ) -> BoxFuture<'a, TaskStoreResult<()>> {
        Box::pin(async move {
            let event = BusEvent::Task {
                from: self.store.instance().to_owned(),
                task: id.to_owned(),
                signal: serde_json::to_value(signal).map_err(failed)?,
            };
            self.store.publish(&event).await.map_err(failed)
        })
    }

    fn signals(&self) -> broadcast::Receiver<(String, TaskSignal)> {
        self.signals.subscribe()
    }
}
