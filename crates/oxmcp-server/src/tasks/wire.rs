//! A task record in each era's wire form.

use oxmcp_types::{JsonObject, RELATED_TASK, TaskStatus};
use serde_json::{Value, json};

use super::{TaskRecord, iso8601};

fn common(rec: &TaskRecord) -> JsonObject {
    let mut m = JsonObject::new();
    m.insert("taskId".into(), Value::String(rec.id.clone()));
    m.insert("status".into(), Value::String(rec.status.as_str().into()));
    if let Some(msg) = &rec.status_message {
        m.insert("statusMessage".into(), Value::String(msg.clone()));
    }
    m.insert("createdAt".into(), Value::String(iso8601(rec.created_ms)));
    m.insert(
        "lastUpdatedAt".into(),
        Value::String(iso8601(rec.updated_ms)),
    );
    m
}

/// 2026-07-28 `Task` (integer `ttlMs` and `pollIntervalMs`).
fn modern_task(rec: &TaskRecord) -> JsonObject {
    let mut m = common(rec);
    m.insert("ttlMs".into(), Value::from(rec.ttl_ms));
    m.insert("pollIntervalMs".into(), Value::from(rec.poll_interval_ms));
    m
}

/// 2026-07-28 `CreateTaskResult`: the task itself with `resultType: "task"`.
pub(crate) fn modern_created(rec: &TaskRecord) -> JsonObject {
    let mut m = modern_task(rec);
    m.insert("resultType".into(), Value::String("task".into()));
    m
}

/// 2026-07-28 `DetailedTask` (`tasks/get`): the result, error or pending input inlined.
pub(crate) fn modern_detailed(rec: &TaskRecord) -> JsonObject {
    let mut m = modern_task(rec);
    match rec.status {
        TaskStatus::Completed => {
            m.insert("result".into(), rec.result.clone().unwrap_or(json!({})));
        }
        TaskStatus::Failed => match (&rec.error, &rec.result) {
            (Some(e), _) => {
                m.insert("error".into(), e.clone());
            }
            (None, Some(r)) => {
                m.insert("result".into(), r.clone());
            }
            (None, None) => {
                m.insert(
                    "error".into(),
                    json!({"code": -32603, "message": "the task failed"}),
                );
            }
        },
        TaskStatus::InputRequired => {
            m.insert(
                "inputRequests".into(),
                serde_json::to_value(&rec.input_requests).unwrap_or(json!({})),
            );
        }
        TaskStatus::Working | TaskStatus::Cancelled => {}
    }
    m
}

/// 2025-11-25 `Task` (`ttl`, `pollInterval`).
pub(crate) fn legacy_task(rec: &TaskRecord) -> JsonObject {
    let mut m = common(rec);
    m.insert("ttl".into(), Value::from(rec.ttl_ms));
    m.insert("pollInterval".into(), Value::from(rec.poll_interval_ms));
    m
}

/// 2025-11-25 `CreateTaskResult`: `{task}`.
pub(crate) fn legacy_created(rec: &TaskRecord) -> JsonObject {
    let mut m = JsonObject::new();
    m.insert("task".into(), Value::Object(legacy_task(rec)));
    m
}

/// A 2025-11-25 `tasks/result` answer: the result with the related-task `_meta`.
pub(crate) fn legacy_result(rec: &TaskRecord, mut result: Value) -> Value {
    if let Value::Object(r) = &mut result {
        let meta = r
            .entry("_meta")
            .or_insert_with(|| Value::Object(JsonObject::new()));
        if let Value::Object(meta) = meta {
            meta.insert(RELATED_TASK.into(), json!({ "taskId": rec.id }));
        }
    }
    result
}
