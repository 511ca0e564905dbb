//! Tasks: long-running requests answered with a handle that the client polls.
//!
//! Two wire forms share one model:
//! - **2025-11-25** (experimental): the client asks for a task (`task: {ttl}` in the
//!   params), the server answers `{task: Task}`; `tasks/get`, `tasks/result`, `tasks/list`,
//!   `tasks/cancel`, `notifications/tasks/status`; durations `ttl` and `pollInterval`.
//! - **2026-07-28**, the tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663): the
//!   server decides; its answer is the task itself with `resultType: "task"`; `tasks/get`
//!   inlines the result, error or pending input requests; `tasks/update` delivers input,
//!   `tasks/cancel` is an acknowledgement; durations `ttlMs` and `pollIntervalMs`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::JsonObject;
use crate::modern::InputRequests;

/// The extension identifier of 2026-07-28 tasks.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The `_meta` key that ties a 2025-11-25 message to its task.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// Where a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for the client's input.
    InputRequired,
    /// Finished with a result (a tool's `isError` result too, in 2026-07-28).
    Completed,
    /// Finished with a JSON-RPC error.
    Failed,
    /// Cancelled.
    Cancelled,
}

impl TaskStatus {
    /// `completed`, `failed` and `cancelled` never change again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

/// Whether a tool may run as a task (`execution.taskSupport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// Never (the default).
    #[default]
    Forbidden,
    /// The server may answer with a task.
    Optional,
    /// Only as a task: a client that cannot take one is refused.
    Required,
}

/// A tool's `execution` object.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct ToolExecution {
    /// Whether the tool runs as a task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A task's state in either era's form, read by a client: the 2026-07-28 `DetailedTask`
/// (`ttlMs`, inlined `result`, `error` or `inputRequests`) or the 2025-11-25 `Task`
/// (`ttl`, `pollInterval`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskInfo {
    /// The task's id.
    pub task_id: String,
    /// Where it is.
    pub status: TaskStatus,
    /// What the server says about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// When it was created (ISO 8601).
    #[serde(default)]
    pub created_at: String,
    /// When it last changed (ISO 8601).
    #[serde(default)]
    pub last_updated_at: String,
    /// Lifetime from creation in ms (2026-07-28 `ttlMs`; `None` for unlimited).
    #[serde(default, alias = "ttl")]
    pub ttl_ms: Option<u64>,
    /// Suggested polling interval in ms (2026-07-28 `pollIntervalMs`).
    #[serde(
        default,
        alias = "pollInterval",
        skip_serializing_if = "Option::is_none"
    )]
    pub poll_interval_ms: Option<u64>,
    /// The result, once `completed` (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The JSON-RPC error, once `failed` (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// What the server waits for, when `input_required` (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
}

/// Params naming one task (`tasks/get`, `tasks/cancel`, `tasks/result`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct TaskIdParams {
    /// The task.
    pub task_id: String,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// Params of `tasks/update` (2026-07-28).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct UpdateTaskParams {
    /// The task.
    pub task_id: String,
    /// Answers to the task's input requests, by key.
    #[serde(default)]
    pub input_responses: JsonObject,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// The `task` a 2025-11-25 client adds to a request's params to ask for a task.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct TaskRequest {
    /// The lifetime it asks for, in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
}

/// Result of `tasks/list` (2025-11-25).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct ListTasksResult {
    /// The tasks.
    pub tasks: Vec<TaskInfo>,
    /// The next page's cursor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_eras_read_as_one_task() {
        let modern: TaskInfo = serde_json::from_value(serde_json::json!({
            "resultType": "complete", "taskId": "t", "status": "input_required",
            "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:01Z",
            "ttlMs": 60000, "pollIntervalMs": 500,
            "inputRequests": {"k": {"method": "elicitation/create", "params": {}}}
        }))
        .unwrap();
        assert_eq!(modern.status, TaskStatus::InputRequired);
        assert_eq!(modern.ttl_ms, Some(60000));
        assert_eq!(modern.poll_interval_ms, Some(500));
        assert!(modern.input_requests.unwrap().contains_key("k"));
        let legacy: TaskInfo = serde_json::from_value(serde_json::json!({
            "taskId": "t", "status": "working", "createdAt": "x", "lastUpdatedAt": "y",
            "ttl": null, "pollInterval": 1000
        }))
        .unwrap();
        assert_eq!(legacy.ttl_ms, None);
        assert_eq!(legacy.poll_interval_ms, Some(1000));
        assert!(!legacy.status.is_terminal());
        assert_eq!(
            serde_json::to_value(TaskSupport::Optional).unwrap(),
            "optional"
        );
    }
}
