//! The built-in demo server: one of everything.

use std::collections::BTreeMap;
use std::time::Duration;

use oxmcp_jsonrpc::ErrorObject;
use oxmcp_server::{Ctx, Server, ServerBuilder, Structured};
use oxmcp_types::{
    CompleteResult, Completion, CompletionReference, GetPromptResult, LoggingLevel, Prompt,
    PromptArgument, PromptMessage, ReadResourceResult, ResourceContents, ResourceTemplate, Role,
    Tool, ToolAnnotations,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to echo back.
    message: String,
}

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// First addend.
    a: f64,
    /// Second addend.
    b: f64,
}

#[derive(Serialize)]
struct Sum {
    sum: f64,
}

#[derive(Deserialize, JsonSchema)]
struct SlowArgs {
    /// Number of progress steps (at most 100).
    #[serde(default = "default_steps")]
    steps: u32,
    /// Milliseconds per step (at most 10000).
    #[serde(default = "default_delay")]
    delay_ms: u64,
}

fn default_steps() -> u32 {
    5
}
fn default_delay() -> u64 {
    100
}

#[derive(Deserialize, JsonSchema)]
struct LogArgs {
    /// The message to log.
    message: String,
    /// Severity (default info).
    #[serde(default)]
    level: Option<LoggingLevel>,
    /// How many times to send it (default 1, at most 10,000).
    #[serde(default)]
    repeat: Option<u32>,
    /// Send it to every session whose log level lets it through, not within this request
    /// (those of 2026-07-28 clients excepted: they get log messages only within requests).
    #[serde(default)]
    broadcast: bool,
}

#[derive(Deserialize, JsonSchema)]
struct FailArgs {
    /// Why the tool fails.
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct SampleArgs {
    /// What to ask the client's model.
    prompt: String,
}

#[derive(Deserialize, JsonSchema)]
struct ConverseArgs {
    /// What the conversation is about: in every log message, question and the result.
    topic: String,
    /// Milliseconds to wait before asking (at most 10000).
    #[serde(default)]
    delay_ms: u64,
}

#[derive(Deserialize, JsonSchema)]
struct TouchArgs {
    /// The resource that changed (subscribers get `notifications/resources/updated`).
    uri: String,
}

/// The text of a sampling answer (`content` is one block or a list of them).
fn sampled_text(result: &serde_json::Value) -> String {
    let content = &result["content"];
    let blocks = content
        .as_array()
        .cloned()
        .unwrap_or_else(|| vec![content.clone()]);
    blocks
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("")
}

/// Logs "slow: cancelled after step N" if `slow` is dropped before it is done.
struct CancelNote {
    ctx: Ctx,
    step: u32,
    done: bool,
}

impl Drop for CancelNote {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let (ctx, note) = (
            self.ctx.clone(),
            format!("slow: cancelled after step {}", self.step),
        );
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                ctx.log(LoggingLevel::Warning, Some("demo"), json!(note))
                    .await
            });
        }
    }
}

const NAMES: &[&str] = &["Ada", "Alan", "Barbara", "Grace", "Linus", "Margaret"];

/// `converse`: a log message, a wait, a sampling request, an elicitation and a log message,
/// all about `topic` (shows whose traffic reaches whom when several clients call at once).
async fn converse(ctx: Ctx, a: ConverseArgs) -> Result<String, oxmcp_server::InputError> {
    let topic = a.topic;
    ctx.log(
        LoggingLevel::Info,
        Some("demo"),
        json!(format!("{topic}: starting")),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(a.delay_ms.min(10_000))).await;
    let request = json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": topic}}],
        "maxTokens": 200
    });
    let sampled: serde_json::Value = ctx
        .input("model", "sampling/createMessage", request)
        .await?;
    let form = json!({
        "message": format!("{topic}: what is your name?"),
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    });
    let answer: serde_json::Value = ctx.input("user", "elicitation/create", form).await?;
    let name = answer["content"]["name"]
        .as_str()
        .unwrap_or("nobody")
        .to_owned();
    ctx.log(
        LoggingLevel::Info,
        Some("demo"),
        json!(format!("{topic}: done")),
    )
    .await;
    Ok(format!(
        "{topic}: the model said {:?}; the user is {name}",
        sampled_text(&sampled)
    ))
}

/// The demo server with these settings.
pub(crate) fn server_with(
    config: oxmcp_server::ServerConfig,
    skills: Option<&std::path::Path>,
) -> anyhow::Result<Server> {
    // Resource subscriptions held by this server's clients, all sessions together.
    let held = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (up, down, count) = (held.clone(), held.clone(), held);
    let add = Tool::default()
        .with_name("add".into())
        .with_title(Some("Add two numbers".into()))
        .with_description(Some(
            "Adds a and b; returns {\"sum\": a+b} as structured content".into(),
        ))
        .with_output_schema(
            json!({"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]})
                .as_object()
                .cloned(),
        )
        .with_annotations(Some(
            ToolAnnotations::default()
                .with_read_only_hint(Some(true))
                .with_idempotent_hint(Some(true)),
        ));
    let builder = Server::builder("mcp-demo", env!("CARGO_PKG_VERSION"))
        .config(config)
        .instructions("A demo server: echo, add, slow (progress), log, fail, ask (elicitation), sample (sampling), converse (all three), touch (resource updates), subscriptions (how many are held), roots (the client's roots), cd/pwd/ls (a tree that remembers each session's working directory), note/notes (a notebook per signed-in user); resources under demo://; prompts greet and summarize.")
        .on_subscribe(move |_, _| {
            up.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(())
        })
        .on_unsubscribe(move |_, _| {
            down.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        });
    let builder = basic_tools(builder, add);
    let builder = interactive_tools(builder, count);
    let builder = crate::demo_state::state_tools(builder);
    let builder = prompts(resources(builder));
    Ok(crate::skills::publish(completion(builder), skills)?.build()?)
}

/// echo, add, slow, log, fail.
fn basic_tools(builder: ServerBuilder, add: Tool) -> ServerBuilder {
    builder
        .tool(
            "echo",
            "Echoes the message back",
            |_ctx: Ctx, a: EchoArgs| async move { Ok::<_, String>(a.message) },
        )
        .typed_tool(add, |_ctx: Ctx, a: AddArgs| async move {
            Ok::<_, String>(Structured(Sum { sum: a.a + a.b }))
        })
        .task_tool(
            "slow",
            "Works for steps*delay_ms, reporting progress after each step (as a task if asked)",
            oxmcp_types::TaskSupport::Optional,
            |ctx: Ctx, a: SlowArgs| async move {
                let steps = a.steps.min(100);
                let delay = Duration::from_millis(a.delay_ms.min(10_000));
                // A cancelled request's handler stops at once (or is dropped after the
                // engine's grace); the guard says so in a log message.
                let mut guard = CancelNote {
                    ctx: ctx.clone(),
                    step: 0,
                    done: false,
                };
                for i in 1..=steps {
                    tokio::select! {
                        () = tokio::time::sleep(delay) => {}
                        () = ctx.cancellation().cancelled() => {
                            return Err("cancelled".to_owned());
                        }
                    }
                    guard.step = i;
                    ctx.progress(
                        f64::from(i),
                        Some(f64::from(steps)),
                        Some(format!("step {i} of {steps}")),
                    )
                    .await;
                }
                guard.done = true;
                Ok::<_, String>(format!("done after {steps} steps"))
            },
        )
        .tool(
            "log",
            "Sends the message as a log notification (repeat times)",
            |ctx: Ctx, a: LogArgs| async move {
                let level = a.level.unwrap_or(LoggingLevel::Info);
                for _ in 0..a.repeat.unwrap_or(1).min(10_000) {
                    if a.broadcast {
                        ctx.server().log(level, Some("demo"), json!(a.message));
                    } else {
                        ctx.log(level, Some("demo"), json!(a.message)).await;
                    }
                }
                Ok::<_, String>(format!("logged at {level:?}"))
            },
        )
        .tool(
            "fail",
            "Always fails (a result with isError: true)",
            |_ctx: Ctx, a: FailArgs| async move {
                Err::<String, _>(a.reason.unwrap_or_else(|| "this tool always fails".into()))
            },
        )
}

/// ask, sample, converse (the client's model and user), subscriptions, roots and touch.
fn interactive_tools(
    builder: ServerBuilder,
    count: std::sync::Arc<std::sync::atomic::AtomicUsize>,
) -> ServerBuilder {
    builder
        .tool("ask", "Asks the user for their name (elicitation) and greets them", |ctx: Ctx, _: serde_json::Value| async move {
            let form = json!({
                "message": "What is your name?",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
            });
            let answer: serde_json::Value = ctx.input("ask", "elicitation/create", form).await?;
            Ok::<_, oxmcp_server::InputError>(match (answer["action"].as_str(), answer["content"]["name"].as_str()) {
                (Some("accept"), Some(name)) => format!("Hello, {name}!"),
                (action, _) => format!("no name given ({})", action.unwrap_or("no answer")),
            })
        })
        .tool("sample", "Asks the client's model (sampling) and returns its answer", |ctx: Ctx, a: SampleArgs| async move {
            let request = json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": a.prompt}}],
                "maxTokens": 200
            });
            let answer: serde_json::Value = ctx.input("sample", "sampling/createMessage", request).await?;
            Ok::<_, oxmcp_server::InputError>(sampled_text(&answer))
        })
        .tool("converse", "Logs, waits delay_ms, asks the client's model (sampling) and the user (elicitation) about the topic, logs again, and returns both answers", |ctx: Ctx, a: ConverseArgs| converse(ctx, a))
        .tool("subscriptions", "How many resource subscriptions this server's clients hold now (all sessions)", move |_ctx: Ctx, _: serde_json::Value| {
            let n = count.load(std::sync::atomic::Ordering::Relaxed);
            async move { Ok::<_, String>(n.to_string()) }
        })
        .tool("roots", "Lists the client's roots (roots/list), one URI per line", |ctx: Ctx, _: serde_json::Value| async move {
            let roots: oxmcp_types::ListRootsResult = ctx.input("roots", "roots/list", json!({})).await?;
            let lines: Vec<String> = roots.roots.iter().map(|r| match &r.name {
                Some(name) => format!("{} {name}", r.uri),
                None => r.uri.clone(),
            }).collect();
            Ok::<_, oxmcp_server::InputError>(lines.join("\n"))
        })
        .tool("touch", "Announces that a resource changed (to its subscribers)", |ctx: Ctx, a: TouchArgs| async move {
            ctx.server().notify_resource_updated(&a.uri);
            Ok::<_, String>(format!("{} updated", a.uri))
        })
}

/// The largest `demo://payload/{size}`.
const MAX_BYTES: usize = 16 * 1024 * 1024;

/// `size` bytes of a fixed pattern (the same for every read), base64: `demo://payload/{size}`.
fn bytes_of(size: usize) -> String {
    // The pattern repeats every 251 bytes: one period, copied (no division per byte).
    let period: Vec<u8> = (0..251).map(|i| ((i * 31 + 7) % 251) as u8).collect();
    let mut data = Vec::with_capacity(size);
    while data.len() < size {
        let take = period.len().min(size - data.len());
        data.extend_from_slice(&period[..take]);
    }
    base64_simd::STANDARD.encode_to_string(data)
}

/// Three text resources, the greeting template, and binary data of any size.
fn resources(builder: ServerBuilder) -> ServerBuilder {
    payload(
        builder
            .text_resource(
                "demo://readme",
                "readme",
                "text/plain",
                "This is the mcp demo server.\n",
            )
            .text_resource(
                "demo://config.json",
                "config",
                "application/json",
                "{\"debug\":false,\"level\":\"info\"}",
            )
            .text_resource(
                "demo://hello.md",
                "hello",
                "text/markdown",
                "# Hello\n\nFrom the demo server.\n",
            )
            .resource_template(
                ResourceTemplate::default()
                    .with_uri_template("demo://greeting/{name}".into())
                    .with_name("greeting".into())
                    .with_description(Some("A greeting for anyone".into()))
                    .with_mime_type(Some("text/plain".into())),
                |_ctx: Ctx, uri: String, vars: BTreeMap<String, String>| async move {
                    let name = vars.get("name").cloned().unwrap_or_default();
                    Ok(
                        ReadResourceResult::default().with_contents(vec![ResourceContents::text(
                            uri,
                            Some("text/plain"),
                            format!("Hello, {name}!"),
                        )]),
                    )
                },
            ),
    )
}

/// `demo://payload/{size}`: binary data for benchmarks of binary contents.
fn payload(builder: ServerBuilder) -> ServerBuilder {
    builder.resource_template(
        ResourceTemplate::default()
            .with_uri_template("demo://payload/{size}".into())
            .with_name("payload".into())
            .with_description(Some(format!(
                "size bytes of binary data, the same on every read (at most {MAX_BYTES})"
            )))
            .with_mime_type(Some("application/octet-stream".into())),
        |_ctx: Ctx, uri: String, vars: BTreeMap<String, String>| async move {
            let size = vars
                .get("size")
                .and_then(|s| s.parse::<usize>().ok())
                .filter(|n| *n <= MAX_BYTES)
                .ok_or_else(|| {
                    ErrorObject::invalid_params(format!(
                        "size must be a number of bytes up to {MAX_BYTES}"
                    ))
                })?;
            Ok(ReadResourceResult::default().with_contents(vec![
                ResourceContents::default()
                    .with_uri(uri)
                    .with_mime_type(Some("application/octet-stream".into()))
                    .with_blob(Some(bytes_of(size))),
            ]))
        },
    )
}

/// greet and summarize.
fn prompts(builder: ServerBuilder) -> ServerBuilder {
    builder
        .prompt(
            Prompt::default()
                .with_name("greet".into())
                .with_description(Some("Greets someone by name".into()))
                .with_arguments(Some(vec![
                    PromptArgument::default()
                        .with_name("name".into())
                        .with_description(Some("Who to greet".into()))
                        .with_required(Some(true)),
                ])),
            |_ctx: Ctx, args: BTreeMap<String, String>| async move {
                let name = args.get("name").cloned().unwrap_or_default();
                Ok(GetPromptResult::default()
                    .with_description(Some("A greeting".into()))
                    .with_messages(vec![PromptMessage::text(
                        Role::User,
                        format!("Please greet {name} warmly."),
                    )]))
            },
        )
        .prompt(
            Prompt::default()
                .with_name("summarize".into())
                .with_description(Some("Asks for a summary of a text".into()))
                .with_arguments(Some(vec![
                    PromptArgument::default()
                        .with_name("text".into())
                        .with_required(Some(true)),
                    PromptArgument::default()
                        .with_name("style".into())
                        .with_required(Some(false)),
                ])),
            |_ctx: Ctx, args: BTreeMap<String, String>| async move {
                let text = args.get("text").cloned().unwrap_or_default();
                let style = args.get("style").cloned().unwrap_or_else(|| "brief".into());
                Ok(
                    GetPromptResult::default().with_messages(vec![PromptMessage::text(
                        Role::User,
                        format!("Summarize ({style}):\n\n{text}"),
                    )]),
                )
            },
        )
}

/// Completion of the prompts' and the template's arguments.
fn completion(builder: ServerBuilder) -> ServerBuilder {
    builder.completion(|_ctx: Ctx, p| async move {
        let values: Vec<String> = match (&p.reference, p.argument.name.as_str()) {
            (CompletionReference::Prompt { name }, "name") if name == "greet" => {
                names(&p.argument.value)
            }
            (CompletionReference::Resource { uri }, "name") if uri == "demo://greeting/{name}" => {
                names(&p.argument.value)
            }
            (CompletionReference::Prompt { name }, "style") if name == "summarize" => {
                ["brief", "detailed", "bullet points"]
                    .iter()
                    .filter(|s| s.starts_with(&p.argument.value))
                    .map(|s| (*s).to_owned())
                    .collect()
            }
            _ => Vec::new(),
        };
        let total = u64::try_from(values.len()).ok();
        Ok::<_, ErrorObject>(
            CompleteResult::default().with_completion(
                Completion::default()
                    .with_values(values)
                    .with_total(total)
                    .with_has_more(Some(false)),
            ),
        )
    })
}

fn names(prefix: &str) -> Vec<String> {
    let prefix = prefix.to_lowercase();
    NAMES
        .iter()
        .filter(|n| n.to_lowercase().starts_with(&prefix))
        .map(|n| (*n).to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn payload_bytes_follow_the_pattern() {
        use base64::Engine as _;
        for size in [0, 1, 250, 251, 252, 1000] {
            let data = base64::engine::general_purpose::STANDARD
                .decode(super::bytes_of(size))
                .unwrap_or_default();
            let want: Vec<u8> = (0..size).map(|i| ((i * 31 + 7) % 251) as u8).collect();
            assert_eq!(data, want, "{size}");
        }
    }
}
