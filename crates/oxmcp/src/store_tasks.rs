//! [`StoreTasks`]: a server's tasks in a shared [`oxmcp_store::Store`] (Redis, say), so that
//! every instance of a scaled-out server reads them, and `tasks/cancel` or `tasks/update`
//! received by one instance reaches the instance running the task over the store's bus.

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
        Arc::new(Self { store, signals })
    }
}

fn decode(json: &str) -> TaskStoreResult<TaskRecord> {
    serde_json::from_str(json).map_err(|e| failed(format!("unreadable task record: {e}")))
}

impl TaskStore for StoreTasks {
    fn put<'a>(&'a self, record: &'a TaskRecord) -> BoxFuture<'a, TaskStoreResult<()>> {
        Box::pin(async move {
            let stored = StoredTask {
                id: record.id.clone(),
                owner: record.owner.clone(),
                created_ms: record.created_ms,
                expires_ms: record.expires_ms(),
                json: serde_json::to_string(record).map_err(failed)?,
            };
            self.store.put_task(&stored).await.map_err(failed)
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, TaskStoreResult<Option<TaskRecord>>> {
        Box::pin(async move {
            match self.store.get_task(id).await.map_err(failed)? {
                Some(json) => Ok(Some(decode(&json)?)),
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
            all.iter().map(|j| decode(j)).collect()
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
