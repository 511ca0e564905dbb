//! Tasks from the command line: `oxmcp call --task` follows a tool call run as a task, with
//! its status as a progress bar; `oxmcp tasks list|get|cancel|wait` work on tasks by id.

use std::time::Duration;

use anyhow::bail;
use oxmcp_client::{Client, ToolCall};
use oxmcp_types::{CallToolResult, JsonObject, ProgressParams, TaskInfo, TaskStatus};
use serde_json::json;

use crate::commands::call_error;
use crate::inspect::{Reach, print_json, url_and_word, with};
use crate::progress;

/// `oxmcp call --task` and `--ttl`.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct TaskFlags {
    /// Run the call as a task where the tool allows it: show its status until its result
    /// arrives (Ctrl-C cancels it).
    #[arg(long)]
    pub(crate) task: bool,
    /// The lifetime to ask for, in seconds (2025-11-25 servers; 2026-07-28 servers decide).
    #[arg(long, value_name = "SECS", requires = "task")]
    pub(crate) ttl: Option<u64>,
}

/// `oxmcp tasks ...`.
#[derive(clap::Args, Debug)]
pub(crate) struct TasksArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand, Debug)]
enum Action {
    /// List your tasks (2025-11-25 servers: 2026-07-28 has no task list).
    List {
        /// The server's URL.
        url: Option<String>,
        #[command(flatten)]
        reach: Reach,
    },
    /// Show a task: `oxmcp tasks get [URL] ID`.
    Get {
        /// [URL] ID.
        #[arg(num_args = 1..=2, required = true)]
        words: Vec<String>,
        #[command(flatten)]
        reach: Reach,
    },
    /// Cancel a task: `oxmcp tasks cancel [URL] ID`.
    Cancel {
        /// [URL] ID.
        #[arg(num_args = 1..=2, required = true)]
        words: Vec<String>,
        #[command(flatten)]
        reach: Reach,
    },
    /// Follow a task to its end and print its result: `oxmcp tasks wait [URL] ID`.
    Wait {
        /// [URL] ID.
        #[arg(num_args = 1..=2, required = true)]
        words: Vec<String>,
        #[command(flatten)]
        reach: Reach,
    },
}

/// Runs `oxmcp tasks`.
pub(crate) async fn run(args: TasksArgs) -> anyhow::Result<()> {
    match args.action {
        Action::List { url, mut reach } => {
            // Task lists are 2025-11-25's: speak it unless told otherwise.
            if reach.auth.era == oxmcp_client::EraChoice::Auto {
                reach.auth.era = oxmcp_client::EraChoice::Legacy;
            }
            let tasks = with(&reach, url, async |c| {
                let mut all = Vec::new();
                let mut cursor = None;
                loop {
                    let page = c.list_tasks(cursor).await.map_err(call_error)?;
                    all.extend(page.tasks);
                    match page.next_cursor {
                        Some(next) if all.len() < 100_000 => cursor = Some(next),
                        _ => break,
                    }
                }
                Ok(all)
            })
            .await?;
            if reach.json {
                return print_json(&tasks);
            }
            for t in &tasks {
                println!("{}", line(t));
            }
            Ok(())
        }
        Action::Get { words, reach } => {
            let (url, id) = url_and_word(&words, "task id")?;
            let task = with(&reach, url, async |c| {
                c.get_task(&id).await.map_err(call_error)
            })
            .await?;
            if reach.json {
                return print_json(&task);
            }
            println!("{}", line(&task));
            Ok(())
        }
        Action::Cancel { words, reach } => {
            let (url, id) = url_and_word(&words, "task id")?;
            with(&reach, url, async |c| {
                c.cancel_task(&id).await.map_err(call_error)
            })
            .await?;
            if reach.json {
                return print_json(&json!({ "cancelled": id }));
            }
            println!("cancellation of {id} requested");
            Ok(())
        }
        Action::Wait { words, reach } => {
            let (url, id) = url_and_word(&words, "task id")?;
            let json = reach.json;
            let result = with(&reach, url, async |c| follow(c, &id).await).await?;
            crate::commands::print_result(&result, json)?;
            if result.failed() {
                bail!("the task's tool reported an error");
            }
            Ok(())
        }
    }
}

/// One line about a task: id, status, created, message.
fn line(t: &TaskInfo) -> String {
    let message = t.status_message.as_deref().unwrap_or_default();
    format!(
        "{}  {:<14}  {}  {}",
        t.task_id,
        t.status.as_str(),
        t.created_at,
        oxmcp_jsonrpc::printable(message)
    )
    .trim_end()
    .to_owned()
}

/// A call allowing a task (`oxmcp call --task`): the result, after following the task if the
/// server made one.
pub(crate) async fn call(
    client: &Client,
    tool: &str,
    arguments: JsonObject,
    ttl: Option<u64>,
) -> anyhow::Result<CallToolResult> {
    let ttl = ttl.map(Duration::from_secs);
    match client
        .call_tool_as_task(tool, arguments, ttl)
        .await
        .map_err(call_error)?
    {
        ToolCall::Done(result) => Ok(result),
        ToolCall::Task(task) => {
            eprintln!("task {} ({})", task.task_id, task.status.as_str());
            follow(client, &task.task_id).await
        }
    }
}

/// Follows a task to its end with its status on stderr; Ctrl-C cancels it.
async fn follow(client: &Client, id: &str) -> anyhow::Result<CallToolResult> {
    let bar = progress::Bar::new();
    let shown = bar.clone();
    let mut last = None;
    let waiting = client.wait_task(id, move |t| {
        let now = (t.status, t.status_message.clone());
        if last.as_ref() != Some(&now) {
            show(&shown, t);
            last = Some(now);
        }
    });
    let outcome = tokio::select! {
        r = waiting => r,
        _ = tokio::signal::ctrl_c() => {
            bar.finish();
            client.cancel_task(id).await.map_err(call_error)?;
            bail!("interrupted: cancellation of task {id} requested");
        }
    };
    bar.finish();
    match outcome {
        Ok(result) => Ok(result),
        Err(oxmcp_client::CallError::Cancelled) => bail!("task {id} was cancelled"),
        Err(e) => Err(call_error(e)),
    }
}

/// A task's state on the bar: a status message of the form "3/10: ..." moves it.
fn show(bar: &progress::Bar, t: &TaskInfo) {
    let status = t.status.as_str();
    let message = t.status_message.clone().unwrap_or_default();
    let (amount, text) = match message.split_once(": ") {
        Some((a, m)) => (a, Some(m)),
        None => (message.as_str(), None),
    };
    let (done, total) = match amount.split_once('/') {
        Some((d, t)) => (d.parse::<f64>().ok(), t.parse::<f64>().ok()),
        None => (amount.parse::<f64>().ok(), None),
    };
    let label = match (done, text) {
        (Some(_), Some(m)) => format!("{status}: {m}"),
        (Some(_), None) => status.to_owned(),
        (None, _) if message.is_empty() => status.to_owned(),
        (None, _) => format!("{status}: {message}"),
    };
    if done.is_none() && message.is_empty() && t.status != TaskStatus::InputRequired {
        return;
    }
    bar.update(&ProgressParams {
        progress_token: oxmcp_types::ProgressToken::Number(0),
        progress: done.unwrap_or(0.0),
        total: done.and(total),
        message: Some(label),
        meta: None,
        extra: JsonObject::new(),
    });
}
