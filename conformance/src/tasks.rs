//! The task fixtures of the suite's `tasks-*` scenarios (tool names and behaviour are the
//! suite's contract), written as any server would write them.

use std::time::Duration;

use oxmcp_jsonrpc::ErrorObject;
use oxmcp_server::{Ctx, ServerBuilder, TaskStart};
use oxmcp_types::{CallToolResult, TaskSupport};
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Greet {
    name: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SlowCompute {
    /// Seconds to work.
    #[serde(default)]
    seconds: f64,
    /// A label echoed in the result.
    #[serde(default)]
    label: Option<String>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ConfirmDelete {
    filename: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

fn ask(message: &str, field: &str, kind: &str) -> Value {
    json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": { field: { "type": kind } },
            "required": [field]
        }
    })
}

fn accepted_text(answer: &Value, field: &str) -> Option<String> {
    if answer["action"] != "accept" {
        return None;
    }
    Some(match &answer["content"][field] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

/// `greet`, `slow_compute`, `failing_job`, `protocol_error_job`, `confirm_delete`,
/// `multi_input` and `test_tool_with_task`.
pub(crate) fn tools(b: ServerBuilder) -> ServerBuilder {
    b.tool(
        "greet",
        "Greets by name (never a task)",
        |_c: Ctx, a: Greet| async move { Ok::<_, String>(format!("Hello, {}!", a.name)) },
    )
    .task_tool(
        "slow_compute",
        "Works for `seconds` seconds, as a task when the client takes one",
        TaskSupport::Optional,
        |ctx: Ctx, a: SlowCompute| async move {
            let total = a.seconds.clamp(0.0, 3600.0);
            let steps = (total * 4.0).ceil().max(0.0) as u64;
            for step in 0..steps {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(250)) => {}
                    () = ctx.cancellation().cancelled() => return Err("cancelled".to_owned()),
                }
                ctx.progress((step + 1) as f64, Some(steps as f64), None)
                    .await;
            }
            let label = a.label.unwrap_or_default();
            Ok(format!("computed {label} in {total}s"))
        },
    )
    .task_tool(
        "failing_job",
        "Fails as a tool (isError) after about a second; only as a task",
        TaskSupport::Required,
        |_c: Ctx, _a: NoArgs| async move {
            tokio::time::sleep(Duration::from_millis(1000)).await;
            Err::<String, _>("the job failed".to_owned())
        },
    )
    .task_tool(
        "protocol_error_job",
        "Fails with a JSON-RPC error (a protocol-level failure)",
        TaskSupport::Optional,
        |_c: Ctx, _a: NoArgs| async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            Err::<String, _>(ErrorObject::internal("the job crashed"))
        },
    )
    .task_tool(
        "confirm_delete",
        "Asks the user to confirm, then deletes (pretend)",
        TaskSupport::Optional,
        |ctx: Ctx, a: ConfirmDelete| async move {
            let message = format!("Delete {}?", a.filename);
            let answer: Value = ctx
                .input(
                    "confirm",
                    "elicitation/create",
                    ask(&message, "confirm", "boolean"),
                )
                .await
                .map_err(|e| e.to_string())?;
            Ok::<_, String>(match accepted_text(&answer, "confirm").as_deref() {
                Some("true") => format!("Deleted {}", a.filename),
                _ => format!("Kept {}", a.filename),
            })
        },
    )
    .task_tool(
        "multi_input",
        "Asks two questions at once",
        TaskSupport::Optional,
        |ctx: Ctx, _a: NoArgs| async move {
            let mut requests = oxmcp_types::InputRequests::new();
            for key in ["first", "second"] {
                requests.insert(
                    key.to_owned(),
                    oxmcp_types::InputRequest {
                        method: "elicitation/create".into(),
                        params: Some(ask(&format!("The {key} name?"), "name", "string")),
                    },
                );
            }
            let answers = ctx
                .request_inputs(requests)
                .await
                .map_err(|e| e.to_string())?;
            let names: Vec<String> = answers
                .values()
                .filter_map(|a| accepted_text(a, "name"))
                .collect();
            Ok::<_, String>(format!("Got {}", names.join(" and ")))
        },
    )
    .task_tool(
        "test_tool_with_task",
        "Asks for a name as a plain request, then finishes as a task",
        TaskSupport::Required,
        |ctx: Ctx, _a: NoArgs| async move {
            let answer: Value = ctx
                .input(
                    "user_name",
                    "elicitation/create",
                    ask("Your name?", "name", "string"),
                )
                .await
                .map_err(|e| e.to_string())?;
            let name = accepted_text(&answer, "name").unwrap_or_else(|| "nobody".into());
            ctx.begin_task().await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            Ok::<_, String>(CallToolResult::text(format!("Hello, {name}!")))
        },
    )
    .task_start("test_tool_with_task", TaskStart::WhenHandlerAsks)
}
