//! What a page can ask of the inspector: one operation per WebSocket message, each answered
//! with its result or an error. There is no operation that starts a process or picks another
//! server: what the inspector talks to is fixed by its command line.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use oxmcp_client::{CallError, Client, RequestOptions, ToolCall};
use oxmcp_jsonrpc::{ErrorCode, ErrorObject};
use oxmcp_types::{CompleteParams, JsonObject, LoggingLevel, Root};
use serde::Deserialize;
use serde_json::{Value, json};

use super::Inspector;
use super::calls::CallKey;

/// How long a tool call may go without an answer or progress (a person may be answering
/// the server's questions meanwhile).
const CALL_TIMEOUT: Duration = Duration::from_secs(600);

/// One operation of a page.
#[derive(Debug, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Op {
    Info,
    Tools,
    Call {
        name: String,
        #[serde(default)]
        arguments: JsonObject,
        /// Run it as a task (where the tool and the server allow it).
        #[serde(default)]
        task: bool,
    },
    /// Stops the call the page sent with this id: its request is cancelled.
    Cancel {
        call: u64,
    },
    Resources,
    Read {
        uri: String,
    },
    Subscribe {
        uri: String,
    },
    Unsubscribe {
        uri: String,
    },
    Prompts,
    Prompt {
        name: String,
        #[serde(default)]
        arguments: BTreeMap<String, String>,
    },
    Complete {
        params: Value,
    },
    LogLevel {
        level: LoggingLevel,
    },
    /// The person's answer to the server's request `ask`: a result, or an error.
    Answer {
        ask: u64,
        #[serde(default)]
        result: Option<Value>,
        #[serde(default)]
        error: Option<String>,
    },
    Roots {
        roots: Vec<Root>,
    },
    Tasks,
    TaskGet {
        id: String,
    },
    TaskCancel {
        id: String,
    },
    Skills,
    Skill {
        uri: String,
    },
    Ping,
    Reconnect,
    Login,
}

/// Why an operation failed, as the page shows it.
pub(crate) struct OpError(pub(crate) Value);

impl OpError {
    fn text(message: impl std::fmt::Display) -> Self {
        Self(json!({ "message": message.to_string() }))
    }
}

impl From<CallError> for OpError {
    fn from(e: CallError) -> Self {
        match e {
            CallError::Rpc(e) => {
                Self(json!({"code": e.code.0, "message": e.message, "data": e.data}))
            }
            other => Self::text(other),
        }
    }
}

fn value(v: impl serde::Serialize) -> Result<Value, OpError> {
    serde_json::to_value(v).map_err(OpError::text)
}

/// Runs operation `op`, sent by page number `page` with id `id`.
pub(crate) async fn run(
    app: &Arc<Inspector>,
    page: u64,
    id: u64,
    op: Op,
) -> Result<Value, OpError> {
    match op {
        Op::Answer { ask, result, error } => {
            let answer = match (result, error) {
                (_, Some(why)) => Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, why)),
                (Some(result), None) => Ok(result),
                (None, None) => return Err(OpError::text("an answer needs a result or an error")),
            };
            match app.hub.answer(ask, answer) {
                true => Ok(json!({})),
                false => Err(OpError::text("that request is no longer waiting")),
            }
        }
        Op::Cancel { call } => match app.hub.calls.cancel((page, call)) {
            // A call run as a task: the task is cancelled too.
            Some(Some(task)) => match app.hub.client().await {
                Some(c) => {
                    c.cancel_task(&task).await?;
                    Ok(json!({"task": task}))
                }
                None => Ok(json!({})),
            },
            Some(None) => Ok(json!({})),
            None => Err(OpError::text("that call is not running")),
        },
        Op::Reconnect => {
            app.connect().await;
            Ok(json!({}))
        }
        Op::Login => {
            app.login()
                .await
                .map_err(|e| OpError::text(format!("{e:#}")))?;
            app.connect().await;
            Ok(json!({}))
        }
        Op::Roots { roots } => {
            app.hub.set_roots(roots);
            // The client declares `roots.listChanged`: tell the server to ask again.
            if let Some(c) = app.hub.client().await {
                let _ = c.notify_roots_changed().await;
            }
            Ok(json!({}))
        }
        Op::Subscribe { uri } => subscribe(app, &uri, true).await,
        Op::Unsubscribe { uri } => subscribe(app, &uri, false).await,
        Op::Info => match app.hub.client().await {
            Some(c) => {
                let mut info = crate::about::describe(&c).await;
                info["target"] = json!(app.hub.target);
                info["supportsTasks"] = json!(c.server_supports_tasks());
                Ok(info)
            }
            None => Err(OpError::text(
                app.hub.failure().unwrap_or_else(|| "not connected".into()),
            )),
        },
        op => {
            let client = app
                .hub
                .client()
                .await
                .ok_or_else(|| OpError::text("not connected"))?;
            on_client(app, &client, (page, id), op).await
        }
    }
}

async fn subscribe(app: &Arc<Inspector>, uri: &str, on: bool) -> Result<Value, OpError> {
    app.listening
        .set(&app.hub, uri, on)
        .await
        .map_err(OpError::text)?;
    Ok(json!({}))
}

/// The operations that are one request of the connected client.
async fn on_client(
    app: &Arc<Inspector>,
    c: &Arc<Client>,
    key: CallKey,
    op: Op,
) -> Result<Value, OpError> {
    match op {
        Op::Tools => value(c.list_tools().await?),
        Op::Call {
            name,
            arguments,
            task,
        } => call(app, c, key, name, arguments, task).await,
        Op::Resources => {
            let has = c.server_capabilities().resources.is_some();
            let resources = if has {
                c.list_all_resources().await?
            } else {
                vec![]
            };
            let templates = if has {
                c.list_all_resource_templates().await?
            } else {
                vec![]
            };
            Ok(json!({"resources": resources, "resourceTemplates": templates}))
        }
        Op::Read { uri } => value(c.read_resource(&uri).await?),
        Op::Prompts => match c.server_capabilities().prompts {
            Some(_) => value(c.list_all_prompts().await?),
            None => Ok(json!([])),
        },
        Op::Prompt { name, arguments } => value(c.get_prompt(&name, arguments).await?),
        Op::Complete { params } => {
            let params: CompleteParams = serde_json::from_value(params).map_err(OpError::text)?;
            value(c.complete(&params).await?)
        }
        Op::LogLevel { level } => {
            c.set_log_level(level).await?;
            Ok(json!({}))
        }
        Op::Tasks => value(c.list_tasks(None).await?),
        Op::TaskGet { id } => value(c.get_task(&id).await?),
        Op::TaskCancel { id } => {
            c.cancel_task(&id).await?;
            Ok(json!({}))
        }
        Op::Skills => {
            let skills = c.skills();
            if !skills.declared() {
                return Ok(json!([]));
            }
            value(skills.list().await.map_err(OpError::text)?)
        }
        Op::Skill { uri } => {
            let loaded = c.skills().load_uri(&uri).await.map_err(OpError::text)?;
            Ok(json!({"entry": loaded.entry, "skillMd": loaded.skill_md()}))
        }
        Op::Ping => {
            let start = std::time::Instant::now();
            c.ping().await?;
            Ok(json!({"ms": start.elapsed().as_secs_f64() * 1000.0}))
        }
        _ => Err(OpError::text("not an operation of the client")),
    }
}

/// A tool call, with its progress shown as it comes; cancelled when the page cancels it or
/// goes away. A call run as a task shows the task's status until it ends. The events name
/// the page and its id for the call, so that only that page shows them.
async fn call(
    app: &Arc<Inspector>,
    c: &Arc<Client>,
    key: CallKey,
    name: String,
    arguments: JsonObject,
    task: bool,
) -> Result<Value, OpError> {
    let (client, hub) = (c.clone(), app.hub.clone());
    let (page, id) = key;
    let running = tokio::spawn(async move {
        let progress = hub.clone();
        let options = RequestOptions::default()
            .timeout(CALL_TIMEOUT)
            .reset_on_progress(true)
            .on_progress(move |p| {
                progress.emit(&json!({"ev": "progress", "page": page, "call": id, "params": p}));
            });
        let result = if task {
            match client.call_tool_as_task(&name, arguments, None).await? {
                ToolCall::Done(result) => result,
                ToolCall::Task(info) => {
                    hub.calls.set_task(key, &info.task_id);
                    hub.emit(&json!({"ev": "task", "page": page, "call": id, "task": info}));
                    let task_id = info.task_id.clone();
                    client
                        .wait_task(&task_id, |info| {
                            hub.emit(
                                &json!({"ev": "task", "page": page, "call": id, "task": info}),
                            );
                        })
                        .await?
                }
            }
        } else {
            client.call_tool_with(&name, arguments, &options).await?
        };
        let check = match client.check_output(&name, &result) {
            Ok(()) => Value::Null,
            Err(e) => json!(e.to_string()),
        };
        Ok::<_, CallError>(json!({"result": result, "outputError": check}))
    });
    app.hub.calls.start(key, running.abort_handle());
    let outcome = running.await;
    app.hub.calls.end(key);
    match outcome {
        Ok(result) => Ok(result?),
        Err(e) if e.is_cancelled() => Err(OpError::text("cancelled at the page")),
        Err(e) => Err(OpError::text(e)),
    }
}
