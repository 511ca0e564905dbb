//! Tasks from the client's side, in both eras: start a tool call as a task, follow it
//! (answering its input requests with our handlers), get its result, cancel it.
//!
//! On 2026-07-28 the server decides: a client that declares the tasks extension
//! ([`crate::ClientHandlers::tasks`]) may get a task for any `tools/call`, and
//! [`Client::call_tool`] then follows it to the end by itself. [`Client::call_tool_as_task`]
//! declares the extension for that one request and hands the task back instead. On
//! 2025-11-25 the client asks (`task` in the params), where the server allows it.

use std::collections::HashSet;
use std::time::Duration;

use oxmcp_engine::CallError;
use oxmcp_types::{
    CallToolParams, CallToolResult, JsonObject, ListTasksResult, TASKS_EXTENSION, TaskInfo,
    TaskStatus, meta_keys,
};
use serde_json::{Value, json};

use super::{Active, Client};

/// A `tools/call` answered at once, or turned into a task.
#[derive(Debug, Clone)]
pub enum ToolCall {
    /// The result.
    Done(CallToolResult),
    /// A task to follow with [`Client::wait_task`], [`Client::get_task`] and
    /// [`Client::cancel_task`].
    Task(TaskInfo),
}

/// A task on the server, by id: a handle borrowed from the client that follows it
/// ([`Client::task`]). Any client of the same server (and owner) can follow a task, so the
/// id can be kept and the task picked up after a reconnect.
#[derive(Debug, Clone, Copy)]
pub struct TaskHandle<'c> {
    client: &'c Client,
    id: &'c str,
}

impl TaskHandle<'_> {
    /// The task's id.
    pub fn id(&self) -> &str {
        self.id
    }

    /// Its state now ([`Client::get_task`]).
    ///
    /// # Errors
    /// See [`Client::get_task`].
    pub async fn get(&self) -> Result<TaskInfo, CallError> {
        self.client.get_task(self.id).await
    }

    /// Waits for its result ([`Client::wait_task`]).
    ///
    /// # Errors
    /// See [`Client::wait_task`].
    pub async fn result(&self) -> Result<CallToolResult, CallError> {
        self.client.wait_task(self.id, |_| {}).await
    }

    /// Waits for its result, telling `on_update` of every state seen.
    ///
    /// # Errors
    /// See [`Client::wait_task`].
    pub async fn wait(
        &self,
        on_update: impl FnMut(&TaskInfo),
    ) -> Result<CallToolResult, CallError> {
        self.client.wait_task(self.id, on_update).await
    }

    /// Asks the server to cancel it ([`Client::cancel_task`]).
    ///
    /// # Errors
    /// See [`Client::cancel_task`].
    pub async fn cancel(&self) -> Result<(), CallError> {
        self.client.cancel_task(self.id).await
    }
}

/// The shortest and longest pause between two polls, whatever the server suggests.
const POLL_MIN: Duration = Duration::from_millis(50);
const POLL_MAX: Duration = Duration::from_secs(5);

impl Client {
    /// A handle on the task `id` (one this client started, or one whose id was kept).
    pub fn task<'c>(&'c self, id: &'c str) -> TaskHandle<'c> {
        TaskHandle { client: self, id }
    }

    /// Whether the server takes tasks for `tools/call` (2026-07-28: it declares the
    /// extension; 2025-11-25: `tasks.requests.tools.call`).
    pub fn server_supports_tasks(&self) -> bool {
        let caps = &self.init.capabilities;
        if self.is_modern() {
            return oxmcp_types::declares_extension(caps.extensions.as_ref(), TASKS_EXTENSION);
        }
        caps.extra
            .get("tasks")
            .and_then(|t| t.get("requests"))
            .and_then(|r| r.get("tools"))
            .and_then(|t| t.get("call"))
            .is_some()
    }

    /// Calls a tool allowing a task: on 2026-07-28 the request declares the tasks extension
    /// (the server may still answer at once); on 2025-11-25 it asks for a task with `ttl`,
    /// unless the last [`Client::list_tools`] said the tool forbids tasks (then it is a plain
    /// call). A result given at once is checked as [`Client::call_tool`] checks it; a task's,
    /// with [`Client::check_output`].
    ///
    /// # Errors
    /// See [`CallError`]; [`CallError::Protocol`] if the server does not support tasks.
    pub async fn call_tool_as_task(
        &self,
        name: &str,
        arguments: JsonObject,
        ttl: Option<Duration>,
    ) -> Result<ToolCall, CallError> {
        self.require(self.init.capabilities.tools.is_some(), "tools")?;
        self.require(self.server_supports_tasks(), "tasks")?;
        let mut params = serde_json::to_value(CallToolParams::new(name, arguments))?;
        let forbidden =
            self.output_schemas.task_support(name) == Some(oxmcp_types::TaskSupport::Forbidden);
        if self.is_modern() {
            self.declare_tasks(&mut params);
        } else if !forbidden {
            let ttl = ttl.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX));
            params["task"] = match ttl {
                Some(ms) => json!({ "ttl": ms }),
                None => json!({}),
            };
        }
        let result = self
            .value_request("tools/call", params, &self.options)
            .await?;
        let call = tool_call_of(result)?;
        if let ToolCall::Done(r) = &call {
            self.check_output(name, r)?;
        }
        Ok(call)
    }

    /// A task's state (`tasks/get`).
    ///
    /// # Errors
    /// See [`CallError`]; an unknown (or expired, or someone else's) task is -32602.
    pub async fn get_task(&self, id: &str) -> Result<TaskInfo, CallError> {
        let v = self
            .task_request("tasks/get", json!({ "taskId": id }))
            .await?;
        Ok(serde_json::from_value(v)?)
    }

    /// Asks the server to cancel a task (`tasks/cancel`). Cancellation is cooperative on
    /// 2026-07-28: follow the task to see whether it ended `cancelled`.
    ///
    /// # Errors
    /// See [`CallError`]; on 2025-11-25 a task that has already ended is -32602.
    pub async fn cancel_task(&self, id: &str) -> Result<(), CallError> {
        self.task_request("tasks/cancel", json!({ "taskId": id }))
            .await
            .map(|_| ())
    }

    /// Sends answers to a 2026-07-28 task's input requests (`tasks/update`).
    ///
    /// # Errors
    /// See [`CallError`]; [`CallError::Protocol`] on a legacy session.
    pub async fn update_task(&self, id: &str, responses: JsonObject) -> Result<(), CallError> {
        if !self.is_modern() {
            return Err(CallError::Protocol(
                "tasks/update is 2026-07-28 only; a 2025-11-25 task asks its questions directly"
                    .into(),
            ));
        }
        self.task_request(
            "tasks/update",
            json!({ "taskId": id, "inputResponses": responses }),
        )
        .await
        .map(|_| ())
    }

    /// One page of the caller's tasks (`tasks/list`, 2025-11-25 only).
    ///
    /// # Errors
    /// See [`CallError`]; [`CallError::Protocol`] on 2026-07-28, which has no task list.
    pub async fn list_tasks(&self, cursor: Option<String>) -> Result<ListTasksResult, CallError> {
        if self.is_modern() {
            return Err(CallError::Protocol(
                "2026-07-28 has no tasks/list: keep the ids of the tasks you start".into(),
            ));
        }
        let mut params = JsonObject::new();
        if let Some(c) = cursor {
            params.insert("cursor".into(), Value::String(c));
        }
        let v = self
            .value_request("tasks/list", Value::Object(params), &self.options)
            .await?;
        Ok(serde_json::from_value(v)?)
    }

    /// Follows a task to its end: polls at the server's suggested interval (between 50 ms
    /// and 5 s), answers 2026-07-28 input requests with our handlers (each key once), and
    /// tells `on_update` of every state seen. The task's result is returned, or its JSON-RPC
    /// error as [`CallError::Rpc`]; a cancelled task is [`CallError::Cancelled`].
    ///
    /// # Errors
    /// As above, or a failed poll.
    pub async fn wait_task(
        &self,
        id: &str,
        mut on_update: impl FnMut(&TaskInfo),
    ) -> Result<CallToolResult, CallError> {
        let mut answered: HashSet<String> = HashSet::new();
        loop {
            let task = self.get_task(id).await?;
            on_update(&task);
            match task.status {
                TaskStatus::Completed | TaskStatus::Failed => return self.outcome(task).await,
                TaskStatus::Cancelled => return Err(CallError::Cancelled),
                TaskStatus::InputRequired if self.is_modern() => {
                    let fresh = self.fresh_inputs(&task, &mut answered);
                    if !fresh.is_empty() {
                        let responses = self
                            .answer_inputs(&json!({ "inputRequests": fresh }))
                            .await?;
                        self.update_task(id, responses).await?;
                        continue;
                    }
                }
                _ => {}
            }
            let every = task
                .poll_interval_ms
                .map_or(Duration::from_millis(500), Duration::from_millis)
                .clamp(POLL_MIN, POLL_MAX);
            tokio::time::sleep(every).await;
        }
    }

    /// The input requests of `task` not answered yet (and marks them answered).
    fn fresh_inputs(&self, task: &TaskInfo, answered: &mut HashSet<String>) -> JsonObject {
        let mut fresh = JsonObject::new();
        for (key, request) in task.input_requests.iter().flatten() {
            if answered.insert(key.clone())
                && let Ok(v) = serde_json::to_value(request)
            {
                fresh.insert(key.clone(), v);
            }
        }
        fresh
    }

    /// The result of a finished task: inlined on 2026-07-28, `tasks/result` on 2025-11-25.
    async fn outcome(&self, task: TaskInfo) -> Result<CallToolResult, CallError> {
        if self.is_modern() {
            if let Some(error) = task.error {
                return Err(CallError::Rpc(serde_json::from_value(error)?));
            }
            return Ok(serde_json::from_value(task.result.unwrap_or(json!({})))?);
        }
        let v = self
            .value_request(
                "tasks/result",
                json!({ "taskId": task.task_id }),
                &self.options,
            )
            .await?;
        Ok(serde_json::from_value(v)?)
    }

    /// A `tasks/*` request; on 2026-07-28 it declares the tasks extension.
    async fn task_request(&self, method: &str, mut params: Value) -> Result<Value, CallError> {
        if self.is_modern() {
            self.declare_tasks(&mut params);
        }
        self.value_request(method, params, &self.options).await
    }

    /// Declares the tasks extension in this request's client capabilities (2026-07-28
    /// per-request opt-in), on top of ours.
    fn declare_tasks(&self, params: &mut Value) {
        let Active::Modern { meta, .. } = &self.active else {
            return;
        };
        let mut caps = meta
            .get(meta_keys::CLIENT_CAPABILITIES)
            .cloned()
            .unwrap_or_else(|| json!({}));
        caps["extensions"][TASKS_EXTENSION] = json!({});
        params["_meta"][meta_keys::CLIENT_CAPABILITIES] = caps;
    }

    /// A `tools/call` answer in either era: a 2026-07-28 task is followed to its end (the
    /// progress callback of `options` hears of its status messages). If following it fails
    /// for another reason than the task's own failure, the task is cancelled: nobody will
    /// fetch its result.
    pub(super) async fn tool_result(
        &self,
        result: Value,
        options: &oxmcp_engine::RequestOptions,
    ) -> Result<CallToolResult, CallError> {
        let task = match tool_call_of(result)? {
            ToolCall::Done(r) => return Ok(r),
            ToolCall::Task(task) => task,
        };
        let on_progress = options.on_progress.clone();
        let mut step = 0.0;
        let followed = self
            .wait_task(&task.task_id, |t| {
                if let (Some(f), Some(message)) = (&on_progress, &t.status_message) {
                    step += 1.0;
                    f(oxmcp_types::ProgressParams {
                        progress_token: oxmcp_types::ProgressToken::String(t.task_id.clone()),
                        progress: step,
                        total: None,
                        message: Some(message.clone()),
                        meta: None,
                        extra: JsonObject::new(),
                    });
                }
            })
            .await;
        match followed {
            Err(e) if !matches!(e, CallError::Rpc(_) | CallError::Cancelled) => {
                let _ = self.cancel_task(&task.task_id).await;
                Err(e)
            }
            other => other,
        }
    }
}

/// A `tools/call` result in either era's form.
fn tool_call_of(result: Value) -> Result<ToolCall, CallError> {
    if result.get("resultType").and_then(Value::as_str) == Some("task") {
        return Ok(ToolCall::Task(serde_json::from_value(result)?));
    }
    if let Some(task) = result.get("task").filter(|t| t.get("taskId").is_some()) {
        return Ok(ToolCall::Task(serde_json::from_value(task.clone())?));
    }
    Ok(ToolCall::Done(serde_json::from_value(result)?))
}
