//! `tasks/get`, `tasks/update`, `tasks/cancel` (both eras), and the 2025-11-25
//! `tasks/result` and `tasks/list`.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use oxmcp_engine::HandlerResult;
use oxmcp_jsonrpc::{ErrorObject, RawValue, parse_params};
use oxmcp_types::{Feature, TASKS_EXTENSION, TaskIdParams, UpdateTaskParams};
use serde_json::{Value, json};

use super::Session;
use super::dispatch::Call;
use super::reply::{encode, fail};
use crate::modern::{Finish, encode as answer};
use crate::tasks::{TaskRecord, TaskSignal, Tasks, tasks_capability_required, wire};

/// The methods of the tasks surface.
pub(super) const TASK_METHODS: &[&str] = &[
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "tasks/result",
    "tasks/list",
];

fn not_found(id: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!(
        "Failed to retrieve task {}: Task not found",
        crate::echo::echo(id)
    ))
}

fn store_error(e: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::internal(format!("task store: {e}"))
}

/// The task's record as its owner may see it: from here if it runs here, else the store.
async fn load(tasks: &Tasks, id: &str, owner: Option<&str>) -> Result<TaskRecord, ErrorObject> {
    let rec = match tasks.local(id) {
        Some(run) => run.record().await,
        None => tasks
            .store
            .get(id)
            .await
            .map_err(store_error)?
            .ok_or_else(|| not_found(id))?,
    };
    // Someone else's task is as good as unknown.
    if rec.owner.as_deref() != owner {
        return Err(not_found(id));
    }
    Ok(rec)
}

impl Session {
    /// A `tasks/*` request, or -32601 where the era has no such method.
    pub(super) fn task_method(
        self: &Arc<Self>,
        method: &str,
        params: Option<&RawValue>,
        call: Call<'_>,
    ) -> BoxFuture<'static, HandlerResult> {
        let Some(tasks) = self.server.features.tasks.clone() else {
            return fail(ErrorObject::method_not_found(method));
        };
        let modern = call.modern.is_some();
        let finish = call.finish.clone();
        let ctx = call.ctx(None);
        if modern {
            if matches!(method, "tasks/result" | "tasks/list") {
                // Removed in the tasks extension: results are inlined in tasks/get.
                return fail(ErrorObject::method_not_found(method));
            }
            if !ctx.client_supports_extension(TASKS_EXTENSION) {
                return fail(tasks_capability_required(method));
            }
        } else if !self.version().has(Feature::LegacyTasks) || method == "tasks/update" {
            return fail(ErrorObject::method_not_found(method));
        }
        let owner = ctx.owner();
        let method = method.to_owned();
        let params: Option<Box<RawValue>> = params.map(ToOwned::to_owned);
        Box::pin(async move {
            let (params, owner, finish) = (params.as_deref(), owner.as_deref(), finish.as_ref());
            match (method.as_str(), modern) {
                ("tasks/get", true) => {
                    let p: TaskIdParams = parse_params(params)?;
                    let rec = load(&tasks, &p.task_id, owner).await?;
                    answer(finish, wire::modern_detailed(&rec))
                }
                ("tasks/get", false) => {
                    let p: TaskIdParams = parse_params(params)?;
                    let rec = load(&tasks, &p.task_id, owner).await?;
                    answer(finish, wire::legacy_task(&rec))
                }
                ("tasks/update", _) => {
                    let p: UpdateTaskParams = parse_params(params)?;
                    let rec = load(&tasks, &p.task_id, owner).await?;
                    if !rec.status.is_terminal() {
                        match tasks.local(&p.task_id) {
                            Some(run) => run.deliver(p.input_responses).await,
                            None => {
                                // Only answers the task waits for travel to its instance.
                                let mut responses = p.input_responses;
                                responses.retain(|key, _| rec.input_requests.contains_key(key));
                                if responses.is_empty() {
                                    return answer(finish, json!({}));
                                }
                                let signal = TaskSignal::Input { responses };
                                tasks
                                    .store
                                    .signal(&p.task_id, &signal)
                                    .await
                                    .map_err(store_error)?;
                            }
                        }
                    }
                    answer(finish, json!({}))
                }
                ("tasks/cancel", _) => {
                    let p: TaskIdParams = parse_params(params)?;
                    cancel(&tasks, &p.task_id, owner, finish).await
                }
                ("tasks/result", _) => {
                    let p: TaskIdParams = parse_params(params)?;
                    result(&tasks, &p.task_id, owner).await
                }
                ("tasks/list", _) => {
                    let p: oxmcp_types::PaginatedParams = parse_params(params)?;
                    list(&tasks, p.cursor.as_deref(), owner).await
                }
                _ => Err(ErrorObject::method_not_found(&method)),
            }
        })
    }
}

/// `tasks/cancel`: 2026-07-28 acknowledges (a terminal task too); 2025-11-25 refuses a
/// terminal task with -32602 and answers with the cancelled task. `finish`: the fields of
/// a 2026-07-28 answer (`None`: 2025-11-25).
async fn cancel(
    tasks: &Tasks,
    id: &str,
    owner: Option<&str>,
    finish: Option<&Finish>,
) -> HandlerResult {
    let modern = finish.is_some();
    let rec = load(tasks, id, owner).await?;
    if rec.status.is_terminal() {
        if modern {
            return answer(finish, json!({}));
        }
        return Err(ErrorObject::invalid_params(format!(
            "Cannot cancel task: already in terminal status '{}'",
            rec.status.as_str()
        )));
    }
    let rec = match tasks.local(id) {
        Some(run) => {
            run.cancel().await;
            run.record().await
        }
        None => {
            // The task runs on another instance: it cancels it when the signal comes.
            tasks
                .store
                .signal(id, &TaskSignal::Cancel)
                .await
                .map_err(store_error)?;
            if modern {
                return answer(finish, json!({}));
            }
            // 2025-11-25 answers with the cancelled task: wait (a while) to see it so.
            settled(tasks, id, owner).await?
        }
    };
    if modern {
        answer(finish, json!({}))
    } else {
        answer(finish, wire::legacy_task(&rec))
    }
}

/// The stored record once terminal, or as it is after about five seconds.
async fn settled(tasks: &Tasks, id: &str, owner: Option<&str>) -> Result<TaskRecord, ErrorObject> {
    let mut rec = load(tasks, id, owner).await?;
    for _ in 0..100 {
        if rec.status.is_terminal() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        rec = load(tasks, id, owner).await?;
    }
    Ok(rec)
}

/// 2025-11-25 `tasks/result`: waits for a terminal status, then answers what the request
/// would have (its result with the related-task `_meta`, or its error).
async fn result(tasks: &Tasks, id: &str, owner: Option<&str>) -> HandlerResult {
    let mut rec = load(tasks, id, owner).await?;
    while !rec.status.is_terminal() {
        rec = match tasks.local(id) {
            Some(run) => run.terminal().await,
            None => {
                tokio::time::sleep(Duration::from_millis(rec.poll_interval_ms.max(50))).await;
                load(tasks, id, owner).await?
            }
        };
    }
    match (&rec.result, &rec.error) {
        (Some(result), _) => encode(&wire::legacy_result(&rec, result.clone())),
        (None, Some(error)) => Err(serde_json::from_value(error.clone())
            .unwrap_or_else(|_| ErrorObject::internal("the task failed"))),
        (None, None) => Err(ErrorObject::internal(format!(
            "the task ended {} without a result",
            rec.status.as_str()
        ))),
    }
}

/// 2025-11-25 `tasks/list`: the caller's tasks, oldest first, a page at a time (the cursor
/// is the offset).
async fn list(tasks: &Tasks, cursor: Option<&str>, owner: Option<&str>) -> HandlerResult {
    // Without a verified caller every anonymous task would be listed to everyone (the
    // specification: such a server should not offer tasks/list).
    if owner.is_none() {
        return Err(ErrorObject::method_not_found(
            "tasks/list (it needs an authenticated caller; keep the ids of your tasks)",
        ));
    }
    let page = tasks.config.page_size.max(1);
    let start: usize = match cursor {
        None => 0,
        Some(c) => c
            .parse()
            .ok()
            .filter(|s: &usize| *s <= tasks.config.max_kept)
            .ok_or_else(|| ErrorObject::invalid_params("Invalid cursor"))?,
    };
    let limit = start.saturating_add(page).saturating_add(1);
    let all = tasks.store.list(owner, limit).await.map_err(store_error)?;
    if start > 0 && start >= all.len() {
        return Err(ErrorObject::invalid_params("Invalid cursor"));
    }
    let mut listed: Vec<Value> = Vec::new();
    for rec in all.iter().skip(start).take(page) {
        // A task running here is fresher than its stored copy.
        let rec = match tasks.local(&rec.id) {
            Some(run) => run.record().await,
            None => rec.clone(),
        };
        listed.push(Value::Object(wire::legacy_task(&rec)));
    }
    let mut out = json!({ "tasks": listed });
    let next = start.saturating_add(page);
    if all.len() > next {
        out["nextCursor"] = Value::String(next.to_string());
    }
    encode(&out)
}
