//! Tasks on the server, in both eras: a tool whose `execution.taskSupport` allows it runs in
//! the background, the client polls. The same tool function serves both ways; its [`Ctx`]
//! reports progress as the task's status message, its input requests park the task in
//! `input_required` until the client answers, and `tasks/cancel` cancels its
//! [`Ctx::cancellation`] token.
//!
//! - **When** (`decide`): on 2026-07-28, when the request declares the tasks extension and
//!   the tool allows tasks (a tool that requires one refuses other clients with -32021); on
//!   2025-11-25, when the request carries `task` (a tool that requires one refuses calls
//!   without it with -32601, as does a tool that forbids one and gets it).
//! - **State** lives in a [`TaskStore`] (in memory by default): the record is saved before
//!   the answer is sent, so `tasks/get` resolves at once, from any instance sharing the
//!   store. It expires with its TTL, and the running work is cancelled then.
//!
//! [`Ctx`]: crate::Ctx
//! [`Ctx::cancellation`]: crate::Ctx::cancellation

mod running;
mod store;
pub(crate) mod wire;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use oxmcp_jsonrpc::{ErrorCode, ErrorObject};
use oxmcp_types::TaskSupport;
use parking_lot::Mutex;

pub(crate) use running::{Outcome, Running, TaskSlot};
pub use store::{
    MemoryTaskStore, TaskEra, TaskRecord, TaskSignal, TaskStore, TaskStoreError, TaskStoreResult,
};
pub(crate) use store::{iso8601, millis, now_ms};

/// Task settings ([`crate::ServerBuilder::tasks`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TaskConfig {
    /// Lifetime of a task when the client asks for none (2026-07-28 clients never do).
    /// Default one hour.
    pub default_ttl: Duration,
    /// The longest lifetime granted; longer requests are cut to it. Default 24 hours.
    pub max_ttl: Duration,
    /// The polling interval suggested to clients. Default 500 ms.
    pub poll_interval: Duration,
    /// Most tasks running at once in this process; the next task-eligible call is refused
    /// with -32603 until one ends. Default 1,000.
    pub max_running: usize,
    /// Most tasks kept in this process at once, running or finished (a finished task keeps
    /// its record and result until its TTL); the next task-eligible call is refused with
    /// -32603 until one expires. Default 10,000.
    pub max_kept: usize,
    /// Most tasks in one `tasks/list` page (2025-11-25). Default 100.
    pub page_size: usize,
}

impl Default for TaskConfig {
    fn default() -> Self {
        Self {
            default_ttl: Duration::from_secs(3600),
            max_ttl: Duration::from_secs(24 * 3600),
            poll_interval: Duration::from_millis(500),
            max_running: 1000,
            max_kept: 10_000,
            page_size: 100,
        }
    }
}

impl TaskConfig {
    /// With another default lifetime.
    pub fn default_ttl(mut self, ttl: Duration) -> Self {
        self.default_ttl = ttl;
        self
    }

    /// With another maximum lifetime.
    pub fn max_ttl(mut self, ttl: Duration) -> Self {
        self.max_ttl = ttl;
        self
    }

    /// With another suggested polling interval.
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.poll_interval = every;
        self
    }

    /// With another cap on running tasks.
    pub fn max_running(mut self, n: usize) -> Self {
        self.max_running = n;
        self
    }

    /// With another cap on tasks kept (running or finished).
    pub fn max_kept(mut self, n: usize) -> Self {
        self.max_kept = n;
        self
    }
}

/// When a task-eligible call becomes a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TaskStart {
    /// Before the handler runs (the default).
    #[default]
    Immediately,
    /// When the handler calls [`crate::Ctx::begin_task`]: until then it runs as a plain
    /// request (2026-07-28 input rounds included), and a handler that returns first answers
    /// the request directly.
    WhenHandlerAsks,
}

/// What a call should be: a plain request, or a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    Plain,
    Task { era: TaskEra, ttl: Option<u64> },
}

/// The tasks of one server: settings, the store, and what runs in this process.
pub(crate) struct Tasks {
    pub(crate) config: TaskConfig,
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) running: Mutex<HashMap<String, Arc<Running>>>,
    /// Tasks kept here (running or finished, until their TTL), against `max_kept`.
    pub(crate) live: Arc<Live>,
    listener: OnceLock<()>,
    /// Tasks of this process that ended: completed, failed, cancelled.
    pub(crate) ended: [std::sync::atomic::AtomicU64; 3],
}

/// What a server's tasks are doing ([`crate::Server::task_counts`]): those running in this
/// process now, and those that ended here since it started, by status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskCounts {
    /// Running (`working` or `input_required`) in this process.
    pub running: usize,
    /// Ended `completed`.
    pub completed: u64,
    /// Ended `failed` (an error, an expired TTL, or with 2025-11-25 a tool's `isError`).
    pub failed: u64,
    /// Ended `cancelled`.
    pub cancelled: u64,
}

/// A counter of kept tasks with a cap; a [`LiveSlot`] gives its place back when dropped.
#[derive(Debug)]
pub(crate) struct Live {
    held: std::sync::atomic::AtomicUsize,
    cap: usize,
}

/// One kept task's place in [`Live`].
pub(crate) struct LiveSlot(Arc<Live>);

impl Live {
    /// A place, if there is one.
    pub(crate) fn try_take(self: &Arc<Self>) -> Option<LiveSlot> {
        use std::sync::atomic::Ordering;
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.cap).then_some(n + 1)
            })
            .ok()
            .map(|_| LiveSlot(self.clone()))
    }
}

impl Drop for LiveSlot {
    fn drop(&mut self) {
        self.0
            .held
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

impl Tasks {
    pub(crate) fn new(config: TaskConfig, store: Arc<dyn TaskStore>) -> Self {
        let live = Arc::new(Live {
            held: std::sync::atomic::AtomicUsize::new(0),
            cap: config.max_kept,
        });
        Self {
            config,
            store,
            running: Mutex::new(HashMap::new()),
            live,
            listener: OnceLock::new(),
            ended: Default::default(),
        }
    }

    /// Counts a task that ended with `status` (a terminal one).
    pub(crate) fn ended(&self, status: oxmcp_types::TaskStatus) {
        let i = match status {
            oxmcp_types::TaskStatus::Completed => 0,
            oxmcp_types::TaskStatus::Failed => 1,
            oxmcp_types::TaskStatus::Cancelled => 2,
            _ => return,
        };
        self.ended[i].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// The counts of [`TaskCounts`].
    pub(crate) fn counts(&self) -> TaskCounts {
        let n = |i: usize| self.ended[i].load(std::sync::atomic::Ordering::Relaxed);
        TaskCounts {
            running: self.running.lock().len(),
            completed: n(0),
            failed: n(1),
            cancelled: n(2),
        }
    }

    /// The granted lifetime in ms for a requested one.
    pub(crate) fn ttl(&self, requested: Option<u64>) -> u64 {
        let max = millis(self.config.max_ttl).max(1);
        requested
            .unwrap_or_else(|| millis(self.config.default_ttl))
            .clamp(1, max)
    }

    /// The task running here, if it does.
    pub(crate) fn local(&self, id: &str) -> Option<Arc<Running>> {
        self.running.lock().get(id).cloned()
    }

    /// Starts applying signals from other instances to the tasks running here (once).
    pub(crate) fn listen_for_signals(self: &Arc<Self>) {
        if self.listener.set(()).is_err() {
            return;
        }
        let mut rx = self.store.signals();
        let tasks = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let (id, signal) = match rx.recv().await {
                    Ok(s) => s,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!(missed = n, "task signals were missed");
                        continue;
                    }
                    Err(_) => return,
                };
                let Some(tasks) = tasks.upgrade() else { return };
                if let Some(run) = tasks.local(&id) {
                    match signal {
                        TaskSignal::Cancel => run.cancel().await,
                        TaskSignal::Input { responses } => run.deliver(responses).await,
                    }
                }
            }
        });
    }
}

/// The -32021 answer to a client that cannot take a task where one is needed.
pub(crate) fn tasks_capability_required(what: &str) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::MISSING_CLIENT_CAPABILITY,
        format!("Missing required client capability: {what} needs the tasks extension"),
    )
    .with_data(serde_json::json!({
        "requiredCapabilities": { "extensions": { oxmcp_types::TASKS_EXTENSION: {} } }
    }))
}

/// Whether a `tools/call` of a tool with `support` becomes a task. `modern_declared`: the
/// 2026-07-28 request declares the extension (`None` on a legacy session); `legacy_task`:
/// the 2025-11-25 request's `task` (with its requested ttl) and whether the session speaks
/// 2025-11-25 or later.
pub(crate) fn decide(
    tool: &str,
    support: TaskSupport,
    modern_declared: Option<bool>,
    legacy_task: Option<Option<u64>>,
    legacy_tasks_spoken: bool,
) -> Result<Plan, ErrorObject> {
    match modern_declared {
        Some(declared) => match (support, declared) {
            (TaskSupport::Forbidden, _) | (TaskSupport::Optional, false) => Ok(Plan::Plain),
            (_, true) => Ok(Plan::Task {
                era: TaskEra::Modern,
                ttl: None,
            }),
            (TaskSupport::Required, false) => Err(tasks_capability_required(&format!(
                "tool {}",
                crate::echo::echo(tool)
            ))),
        },
        None if !legacy_tasks_spoken => Ok(Plan::Plain),
        None => match (support, legacy_task) {
            (TaskSupport::Forbidden, None) | (TaskSupport::Optional, None) => Ok(Plan::Plain),
            (TaskSupport::Forbidden, Some(_)) => Err(ErrorObject::method_not_found(&format!(
                "tools/call as a task (tool {} does not run as a task)",
                crate::echo::echo(tool)
            ))),
            (TaskSupport::Required, None) => Err(ErrorObject::method_not_found(&format!(
                "tools/call without a task (tool {} runs only as a task)",
                crate::echo::echo(tool)
            ))),
            (_, Some(ttl)) => Ok(Plan::Task {
                era: TaskEra::Legacy,
                ttl,
            }),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn who_gets_a_task() {
        use TaskSupport::*;
        let modern = |s, d| decide("t", s, Some(d), None, false);
        assert_eq!(modern(Forbidden, true).unwrap(), Plan::Plain);
        assert_eq!(modern(Optional, false).unwrap(), Plan::Plain);
        assert!(matches!(modern(Optional, true).unwrap(), Plan::Task { .. }));
        let e = modern(Required, false).unwrap_err();
        assert_eq!(e.code, ErrorCode::MISSING_CLIENT_CAPABILITY);
        let legacy = |s, t| decide("t", s, None, t, true);
        assert_eq!(legacy(Optional, None).unwrap(), Plan::Plain);
        assert_eq!(
            legacy(Optional, Some(Some(5))).unwrap(),
            Plan::Task {
                era: TaskEra::Legacy,
                ttl: Some(5)
            }
        );
        assert_eq!(legacy(Required, None).unwrap_err().code.0, -32601);
        assert_eq!(legacy(Forbidden, Some(None)).unwrap_err().code.0, -32601);
        // Before 2025-11-25 there are no tasks: the call runs as a plain request.
        assert_eq!(
            decide("t", Required, None, Some(None), false).unwrap(),
            Plan::Plain
        );
    }
}
