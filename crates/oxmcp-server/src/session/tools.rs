//! `tools/list` and `tools/call`: arguments validated against the input schema, structured
//! results against the output schema; task-eligible calls run as tasks (see `crate::tasks`).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use oxmcp_engine::HandlerResult;
use oxmcp_jsonrpc::{ErrorObject, RawValue, parse_params};
use oxmcp_types::{
    CallToolParams, CallToolResult, Feature, JsonObject, ListToolsResult, TASKS_EXTENSION,
    declares_extension,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::Session;
use super::dispatch::Call;
use super::reply::{encode, fail};
use crate::context::Ctx;
use crate::echo::echo;
use crate::registry::ToolEntry;
use crate::tasks::{Plan, TaskEra, TaskSlot, TaskStart, Tasks, decide, wire};

impl Session {
    pub(super) fn list_tools(
        &self,
        params: Option<&RawValue>,
    ) -> BoxFuture<'static, HandlerResult> {
        self.list(
            params,
            |reg| reg.tools.values().map(|t| t.tool.clone()).collect(),
            |tools, next_cursor| {
                ListToolsResult::default()
                    .with_tools(tools)
                    .with_next_cursor(next_cursor)
            },
        )
    }

    pub(super) fn call_tool(
        &self,
        params: Option<&RawValue>,
        call: Call,
    ) -> BoxFuture<'static, HandlerResult> {
        let p: CallToolParams = match parse_params(params) {
            Ok(p) => p,
            Err(e) => return fail(e),
        };
        let Some(entry) = self.server.read().tools.get(&p.name).cloned() else {
            let name = echo(&p.name);
            return fail(
                ErrorObject::invalid_params(format!("Unknown tool: {name}"))
                    .with_data(serde_json::json!({ "tool": name })),
            );
        };
        let plan = match &self.server.tasks {
            None => Plan::Plain,
            Some(_) => {
                let declared = call.modern.as_ref().map(|m| {
                    declares_extension(m.client_caps.extensions.as_ref(), TASKS_EXTENSION)
                });
                // 2025-11-25: `task: {ttl}` asks for a task (2026-07-28 ignores it).
                let asked = p
                    .extra
                    .get("task")
                    .map(|t| t.get("ttl").and_then(Value::as_u64));
                let spoken = self.version().has(Feature::LegacyTasks);
                match decide(&p.name, entry.tool.task_support(), declared, asked, spoken) {
                    Ok(plan) => plan,
                    Err(e) => return fail(e),
                }
            }
        };
        let ctx = call.ctx(p.meta);
        let args = p.arguments.unwrap_or_default();
        match (plan, self.server.tasks.clone()) {
            (Plan::Task { era, ttl }, Some(tasks)) => as_task(tasks, entry, ctx, args, era, ttl),
            _ => Box::pin(async move { encode(&execute(&entry, ctx, args).await?) }),
        }
    }
}

/// Runs a tool: arguments checked against its input schema, `structuredContent` against its
/// output schema.
async fn execute(
    entry: &ToolEntry,
    ctx: Ctx,
    args: JsonObject,
) -> Result<CallToolResult, ErrorObject> {
    let args_value = Value::Object(args);
    if let Err(errors) = entry.input.validate(&args_value) {
        return Ok(CallToolResult::error(format!(
            "Invalid arguments for tool {}: {}",
            entry.tool.name,
            errors.join("; ")
        )));
    }
    let Value::Object(args) = args_value else {
        return Err(ErrorObject::internal("arguments are not an object"));
    };
    let result = (entry.handler)(ctx, args).await?;
    if let (Some(schema), false) = (&entry.output, result.failed()) {
        let structured = result.structured_content.clone().unwrap_or(Value::Null);
        if let Err(errors) = schema.validate(&structured) {
            return Err(ErrorObject::internal(format!(
                "tool {} returned structuredContent that does not match its outputSchema",
                entry.tool.name
            ))
            .with_data(serde_json::json!({ "errors": errors })));
        }
    }
    Ok(result)
}

/// The tool's work, ending in an outcome whatever happens (a panic is a -32603 error).
async fn work(entry: Arc<ToolEntry>, ctx: Ctx, args: JsonObject) -> crate::tasks::Outcome {
    use crate::tasks::Outcome;
    match AssertUnwindSafe(execute(&entry, ctx, args))
        .catch_unwind()
        .await
    {
        Ok(Ok(result)) => match serde_json::to_value(&result) {
            Ok(v) => Outcome::Result(v),
            Err(e) => Outcome::Error(ErrorObject::internal(format!(
                "could not encode the result: {e}"
            ))),
        },
        Ok(Err(e)) => Outcome::Error(e),
        Err(_) => Outcome::Error(ErrorObject::internal(format!(
            "tool {} failed unexpectedly",
            entry.tool.name
        ))),
    }
}

/// A task-eligible call: the task is created (before the handler runs, or when it calls
/// [`Ctx::begin_task`]) and answered with; the work goes on in the background.
fn as_task(
    tasks: Arc<Tasks>,
    entry: Arc<ToolEntry>,
    mut ctx: Ctx,
    args: JsonObject,
    era: TaskEra,
    ttl: Option<u64>,
) -> BoxFuture<'static, HandlerResult> {
    Box::pin(async move {
        let slot = Arc::new(TaskSlot::default());
        let token = CancellationToken::new();
        let request_token = std::mem::replace(&mut ctx.rc.cancel, token.clone());
        ctx.task = Some(slot.clone());
        let owner = ctx.owner();
        let legacy_peer = (era == TaskEra::Legacy).then(|| ctx.rc.peer.clone());
        let created = |rec: &crate::tasks::TaskRecord| match era {
            TaskEra::Modern => encode(&wire::modern_created(rec)),
            TaskEra::Legacy => encode(&wire::legacy_created(rec)),
        };
        if entry.task_start == TaskStart::Immediately {
            let (run, rec) = tasks
                .create(era, owner, "tools/call", ttl, legacy_peer, token)
                .await?;
            let _ = slot.running.set(run.clone());
            // No await from here to the spawn: the work starts whatever the request does.
            let token = run.cancel.clone();
            tokio::spawn(async move {
                // Cancelled (tasks/cancel, expiry): the work is dropped, as a cancelled
                // request's handler is.
                tokio::select! {
                    outcome = work(entry, ctx, args) => run.finish(outcome).await,
                    () = token.cancelled() => {}
                }
            });
            return created(&rec);
        }
        // The handler runs as the request until it asks to become a task: until then its
        // work is the request's, dropped or cancelled with it.
        let (begin_tx, begin_rx) = tokio::sync::oneshot::channel();
        *slot.begin.lock() = Some(begin_tx);
        let mut handle = tokio::spawn(work(entry, ctx, args));
        let guard = AbortGuard(Some(handle.abort_handle()));
        let ack = tokio::select! {
            joined = &mut handle => return plain_answer(joined),
            () = request_token.cancelled() => {
                return Err(ErrorObject::internal("the request was cancelled"));
            }
            Ok(ack) = begin_rx => ack,
        };
        let (run, rec) = tasks
            .create(era, owner, "tools/call", ttl, legacy_peer, token.clone())
            .await?;
        let _ = slot.running.set(run.clone());
        let _ = ack.send(());
        // No await from here to the spawn: the work is the task's now.
        guard.disarm();
        tokio::spawn(async move {
            tokio::select! {
                joined = &mut handle => {
                    let outcome = joined.unwrap_or_else(|_| {
                        crate::tasks::Outcome::Error(ErrorObject::internal(
                            "the task's work was lost",
                        ))
                    });
                    run.finish(outcome).await;
                }
                () = token.cancelled() => handle.abort(),
            }
        });
        created(&rec)
    })
}

/// Aborts a spawned piece of work when dropped, unless disarmed.
struct AbortGuard(Option<tokio::task::AbortHandle>);

impl AbortGuard {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for AbortGuard {
    fn drop(&mut self) {
        if let Some(h) = self.0.take() {
            h.abort();
        }
    }
}

/// The answer of a handler that finished before becoming a task.
fn plain_answer(joined: Result<crate::tasks::Outcome, tokio::task::JoinError>) -> HandlerResult {
    match joined {
        Ok(crate::tasks::Outcome::Result(v)) => encode(&v),
        Ok(crate::tasks::Outcome::Error(e)) => Err(e),
        Err(_) => Err(ErrorObject::internal("the tool's work was lost")),
    }
}
