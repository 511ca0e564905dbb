//! A task running in this process: its record (written through to the store), the token
//! its work watches, and the answers its input requests wait for.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use oxmcp_engine::Peer;
use oxmcp_jsonrpc::ErrorObject;
use oxmcp_types::{InputRequests, JsonObject, TaskStatus};
use serde_json::Value;
use tokio::sync::{Notify, oneshot};
use tokio_util::sync::CancellationToken;

use super::{TaskEra, TaskRecord, Tasks, now_ms};

/// A task running here.
pub(crate) struct Running {
    pub(crate) id: String,
    tasks: std::sync::Weak<Tasks>,
    record: tokio::sync::Mutex<TaskRecord>,
    /// Cancelled by `tasks/cancel`, expiry, or shutdown of the work.
    pub(crate) cancel: CancellationToken,
    /// Every answer delivered so far, by key (keys are unique over a task's life).
    answers: parking_lot::Mutex<JsonObject>,
    /// Woken when answers arrive or the status changes.
    changed: Notify,
    /// Where 2025-11-25 `notifications/tasks/status` go.
    legacy_peer: Option<Peer>,
}

/// What a handler's [`crate::Ctx`] knows of its task: the task once it exists, and for
/// [`super::TaskStart::WhenHandlerAsks`] the way to ask for it.
#[derive(Default)]
pub(crate) struct TaskSlot {
    pub(crate) running: OnceLock<Arc<Running>>,
    pub(crate) begin: parking_lot::Mutex<Option<oneshot::Sender<oneshot::Sender<()>>>>,
}

impl std::fmt::Debug for TaskSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskSlot")
            .field("task", &self.running.get().map(|r| r.id.clone()))
            .finish()
    }
}

/// 128 random bits in hex: unguessable, since a task is reachable by its id alone when no
/// principal is known.
fn new_id() -> Result<String, ErrorObject> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| ErrorObject::internal(format!("no randomness for a task id: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

impl Tasks {
    /// Creates a task: saved in the store before this returns (so `tasks/get` resolves at
    /// once), registered as running here, and expired after its TTL (its work cancelled, a
    /// waiting `tasks/result` answered, its record deleted). Returns the task and its first
    /// record; spawn its work before awaiting anything else, or it waits for expiry.
    pub(crate) async fn create(
        self: &Arc<Self>,
        era: TaskEra,
        owner: Option<String>,
        method: &str,
        ttl: Option<u64>,
        legacy_peer: Option<Peer>,
        cancel: CancellationToken,
    ) -> Result<(Arc<Running>, TaskRecord), ErrorObject> {
        self.listen_for_signals();
        if self.running.lock().len() >= self.config.max_running {
            return Err(ErrorObject::internal(format!(
                "too many tasks running (at most {}); try again later",
                self.config.max_running
            )));
        }
        // Every task, running or finished, holds a record until its TTL: they are capped too.
        let Some(slot) = self.live.try_take() else {
            return Err(ErrorObject::internal(format!(
                "too many tasks kept (at most {}); try again when some have expired",
                self.config.max_kept
            )));
        };
        let now = now_ms();
        let record = TaskRecord {
            id: new_id()?,
            owner,
            method: method.to_owned(),
            era,
            status: TaskStatus::Working,
            status_message: None,
            created_ms: now,
            updated_ms: now,
            ttl_ms: self.ttl(ttl),
            poll_interval_ms: super::millis(self.config.poll_interval),
            result: None,
            error: None,
            input_requests: InputRequests::new(),
        };
        let ttl = Duration::from_millis(record.ttl_ms);
        let run = Arc::new(Running {
            id: record.id.clone(),
            tasks: Arc::downgrade(self),
            record: tokio::sync::Mutex::new(record.clone()),
            cancel,
            answers: parking_lot::Mutex::new(JsonObject::new()),
            changed: Notify::new(),
            legacy_peer,
        });
        self.running.lock().insert(run.id.clone(), run.clone());
        // Expiry, whatever happens to the caller from here on.
        let (weak, expiring) = (Arc::downgrade(self), run.clone());
        tokio::spawn(async move {
            tokio::time::sleep(ttl).await;
            expiring.expire().await;
            if let Some(tasks) = weak.upgrade() {
                let _ = tasks.store.delete(&expiring.id).await;
            }
            drop(slot);
        });
        if let Err(e) = self.store.put(&record).await {
            run.cancel.cancel();
            self.running.lock().remove(&run.id);
            return Err(ErrorObject::internal(e.to_string()));
        }
        Ok((run, record))
    }
}

/// How the work of a task ended.
pub(crate) enum Outcome {
    /// With a result (a tool's `isError` result included).
    Result(Value),
    /// With a JSON-RPC error.
    Error(ErrorObject),
}

impl Running {
    /// The record as it is now.
    pub(crate) async fn record(&self) -> TaskRecord {
        self.record.lock().await.clone()
    }

    /// Changes the record (unless it is terminal) and saves it; `true` if it changed.
    async fn change(&self, f: impl FnOnce(&mut TaskRecord)) -> bool {
        let mut rec = self.record.lock().await;
        if rec.status.is_terminal() {
            return false;
        }
        let before = rec.status;
        f(&mut rec);
        rec.updated_ms = now_ms();
        if let Some(tasks) = self.tasks.upgrade() {
            if rec.status.is_terminal() {
                tasks.ended(rec.status);
            }
            if let Err(e) = tasks.store.put(&rec).await {
                tracing::warn!(task = %self.id, "could not save the task: {e}");
            }
        }
        // Announced while the record is held, so that the status notification precedes any
        // answer (tasks/result, tasks/get) that shows the new status.
        if before != rec.status {
            self.announce(&rec).await;
        }
        drop(rec);
        self.changed.notify_waiters();
        true
    }

    /// 2025-11-25: `notifications/tasks/status` to the session that created the task.
    async fn announce(&self, rec: &TaskRecord) {
        let Some(peer) = &self.legacy_peer else {
            return;
        };
        if let Ok(params) = oxmcp_jsonrpc::to_raw(&super::wire::legacy_task(rec)) {
            let _ = peer.notify_raw("notifications/tasks/status", &params).await;
        }
    }

    /// The work ended: `completed` or `failed`, unless the task was cancelled meanwhile.
    /// The task stops running here; its record stays until its TTL.
    pub(crate) async fn finish(&self, outcome: Outcome) {
        let era = self.record.lock().await.era;
        self.change(|rec| match outcome {
            Outcome::Result(result) => {
                // 2025-11-25 counts a tool's isError result as failed; 2026-07-28 as
                // completed (failed is for JSON-RPC errors only).
                let tool_error = result.get("isError").and_then(Value::as_bool) == Some(true);
                rec.status = if tool_error && era == TaskEra::Legacy {
                    TaskStatus::Failed
                } else {
                    TaskStatus::Completed
                };
                rec.result = Some(result);
                rec.input_requests.clear();
            }
            Outcome::Error(error) => {
                rec.status = TaskStatus::Failed;
                rec.status_message = Some(error.message.clone());
                rec.error = serde_json::to_value(&error).ok();
                rec.input_requests.clear();
            }
        })
        .await;
        self.forget();
    }

    fn forget(&self) {
        if let Some(tasks) = self.tasks.upgrade() {
            tasks.running.lock().remove(&self.id);
        }
    }

    /// The TTL is over: the work is cancelled and the task ends `failed` (if it had not
    /// ended), which wakes whoever waits for it.
    pub(crate) async fn expire(&self) {
        self.cancel.cancel();
        self.change(|rec| {
            rec.status = TaskStatus::Failed;
            rec.status_message = Some("The task expired.".into());
            rec.error = Some(serde_json::json!({"code": -32603, "message": "the task expired"}));
            rec.input_requests.clear();
        })
        .await;
        self.forget();
    }

    /// `tasks/cancel`: the work's token is cancelled and the task is `cancelled` at once.
    pub(crate) async fn cancel(&self) {
        self.cancel.cancel();
        self.change(|rec| {
            rec.status = TaskStatus::Cancelled;
            rec.status_message = Some("The task was cancelled by request.".into());
            rec.input_requests.clear();
        })
        .await;
        self.forget();
    }

    /// `tasks/update`: answers to outstanding input requests are taken (others ignored) and
    /// the task goes back to `working` once nothing is outstanding.
    pub(crate) async fn deliver(&self, responses: JsonObject) {
        let mut taken = JsonObject::new();
        self.change(|rec| {
            for (key, answer) in responses {
                if rec.input_requests.remove(&key).is_some() {
                    taken.insert(key, answer);
                }
            }
            if rec.input_requests.is_empty() && rec.status == TaskStatus::InputRequired {
                rec.status = TaskStatus::Working;
                rec.status_message = None;
            }
        })
        .await;
        self.answers.lock().extend(taken);
        self.changed.notify_waiters();
    }

    /// The progress of the work, as the task's status message.
    pub(crate) async fn progress(&self, message: String) {
        self.change(|rec| rec.status_message = Some(message)).await;
    }

    /// Waits for the client's answers to `requests` (2026-07-28): the task is
    /// `input_required` with them until `tasks/update` brings every one. Answers already
    /// given under a key are reused.
    pub(crate) async fn inputs(&self, requests: InputRequests) -> Result<JsonObject, ErrorObject> {
        let mut asked = false;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let missing: InputRequests = {
                let answers = self.answers.lock();
                requests
                    .iter()
                    .filter(|(k, _)| !answers.contains_key(*k))
                    .map(|(k, r)| (k.clone(), r.clone()))
                    .collect()
            };
            if missing.is_empty() {
                let answers = self.answers.lock();
                return Ok(requests
                    .keys()
                    .filter_map(|k| answers.get(k).map(|v| (k.clone(), v.clone())))
                    .collect());
            }
            if !asked {
                asked = true;
                let changed = self
                    .change(|rec| {
                        rec.input_requests.extend(missing);
                        rec.status = TaskStatus::InputRequired;
                    })
                    .await;
                if !changed {
                    return Err(ErrorObject::internal("the task has ended"));
                }
            }
            tokio::select! {
                () = notified => {}
                () = self.cancel.cancelled() => {
                    return Err(ErrorObject::internal("the task was cancelled"));
                }
            }
        }
    }

    /// Waits until the task is terminal; its record then.
    pub(crate) async fn terminal(&self) -> TaskRecord {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let rec = self.record().await;
            if rec.status.is_terminal() {
                return rec;
            }
            notified.await;
        }
    }

    /// Marks the task `input_required` while a 2025-11-25 session is asked something
    /// directly, and `working` again after.
    pub(crate) async fn asking(&self, on: bool) {
        self.change(|rec| {
            rec.status = if on {
                TaskStatus::InputRequired
            } else {
                TaskStatus::Working
            };
        })
        .await;
    }
}
