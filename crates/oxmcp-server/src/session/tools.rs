//! `tools/list` and `tools/call`, answered by the server's handler: arguments validated
//! against the input schema, structured results against the output schema (when the tool's
//! definition is known); task-eligible calls run as tasks (see `crate::tasks`).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use oxmcp_engine::HandlerResult;
use oxmcp_jsonrpc::{ErrorObject, RawValue, parse_params};
use oxmcp_types::{CallToolParams, Feature, TASKS_EXTENSION, declares_extension};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::Session;
use super::dispatch::Call;
use super::reply::{fail, list_with};
use crate::context::Ctx;
use crate::dynamic::{ServerHandler as _, Target};
use crate::modern::{Finish, encode};
use crate::tasks::{Plan, TaskEra, TaskSlot, TaskStart, Tasks, decide, wire};

impl Session {
    pub(super) fn list_tools(
        &self,
        params: Option<&RawValue>,
        call: Call<'_>,
    ) -> BoxFuture<'static, HandlerResult> {
        list_with(params, call, |server, ctx, cursor| async move {
            server.list_tools(&ctx, cursor).await
        })
    }

    /// `tools/call`: the tool is found (a registry's, or the handler's definition), then run
    /// plainly or as a task.
    pub(super) fn call_tool(
        &self,
        params: Option<&RawValue>,
        call: Call<'_>,
    ) -> BoxFuture<'static, HandlerResult> {
        let p: CallToolParams = match parse_params(params) {
            Ok(p) => p,
            Err(e) => return fail(e),
        };
        call.note(|| crate::layer::Target::Tool(p.name.clone()));
        let server = self.handler();
        let declared = call
            .modern
            .as_ref()
            .map(|m| declares_extension(m.client_caps.extensions.as_ref(), TASKS_EXTENSION));
        let spoken = self.version().has(Feature::LegacyTasks);
        let tasks = self.server.features.tasks.clone();
        let finish = call.finish.clone();
        let ctx = call.ctx(p.meta.as_ref());
        Box::pin(async move {
            let target = Arc::new(server.target(&ctx, &p.name).await?);
            let plan = match (&tasks, target.tool()) {
                (Some(_), Some(tool)) => {
                    // 2025-11-25: `task: {ttl}` asks for a task (2026-07-28 ignores it).
                    let asked = p
                        .extra
                        .get("task")
                        .map(|t| t.get("ttl").and_then(Value::as_u64));
                    decide(&p.name, tool.task_support(), declared, asked, spoken)?
                }
                _ => Plan::Plain,
            };
            match (plan, tasks) {
                (Plan::Task { era, ttl }, Some(tasks)) => {
                    let work = Work {
                        server,
                        target,
                        params: p,
                    };
                    as_task(tasks, work, ctx, (era, ttl), finish).await
                }
                _ => encode(finish.as_ref(), server.run_tool(&target, ctx, p).await?),
            }
        })
    }
}

/// A call to run: the tool as found, and the request's params.
struct Work {
    server: crate::Server,
    target: Arc<Target>,
    params: CallToolParams,
}

/// The tool's work, ending in an outcome whatever happens (a panic is a -32603 error).
async fn work(w: Work, ctx: Ctx) -> crate::tasks::Outcome {
    use crate::tasks::Outcome;
    let name = w.params.name.clone();
    match AssertUnwindSafe(w.server.run_tool(&w.target, ctx, w.params))
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
            "tool {name} failed unexpectedly"
        ))),
    }
}

/// A task-eligible call: the task is created (before the handler runs, or when it calls
/// [`Ctx::begin_task`]) and answered with; the work goes on in the background.
fn as_task(
    tasks: Arc<Tasks>,
    w: Work,
    mut ctx: Ctx,
    (era, ttl): (TaskEra, Option<u64>),
    finish: Option<Finish>,
) -> BoxFuture<'static, HandlerResult> {
    Box::pin(async move {
        let slot = Arc::new(TaskSlot::default());
        let token = CancellationToken::new();
        let request_token = std::mem::replace(&mut ctx.rc.cancel, token.clone());
        ctx.task = Some(slot.clone());
        let owner = ctx.owner();
        let legacy_peer = (era == TaskEra::Legacy).then(|| ctx.rc.peer.clone());
        let created = |rec: &crate::tasks::TaskRecord| match era {
            TaskEra::Modern => encode(finish.as_ref(), wire::modern_created(rec)),
            TaskEra::Legacy => encode(finish.as_ref(), wire::legacy_created(rec)),
        };
        if w.target.task_start() == TaskStart::Immediately {
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
                    outcome = work(w, ctx) => run.finish(outcome).await,
                    () = token.cancelled() => {}
                }
            });
            return created(&rec);
        }
        // The handler runs as the request until it asks to become a task: until then its
        // work is the request's, dropped or cancelled with it.
        let (begin_tx, begin_rx) = tokio::sync::oneshot::channel();
        *slot.begin.lock() = Some(begin_tx);
        let mut handle = tokio::spawn(work(w, ctx));
        let guard = AbortGuard(Some(handle.abort_handle()));
        let ack = tokio::select! {
            joined = &mut handle => return plain_answer(joined, finish.as_ref()),
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
fn plain_answer(
    joined: Result<crate::tasks::Outcome, tokio::task::JoinError>,
    finish: Option<&Finish>,
) -> HandlerResult {
    match joined {
        Ok(crate::tasks::Outcome::Result(v)) => encode(finish, v),
        Ok(crate::tasks::Outcome::Error(e)) => Err(e),
        Err(_) => Err(ErrorObject::internal("the tool's work was lost")),
    }
}
