//! The client commands `tools` and `call` (the others are in `inspect`).

use std::time::Duration;

use anyhow::{Context, bail};
use oxmcp_client::{CallError, RequestOptions};
use oxmcp_types::{Content, JsonObject};
use serde_json::Value;

use crate::{auth, progress, target};

/// `oxmcp tools`: the tools of a server, as a table or JSON.
pub(crate) async fn tools(
    url: Option<String>,
    json: bool,
    auth: auth::Auth,
    server: Vec<String>,
) -> anyhow::Result<()> {
    let target = target::Target::from_parts(url, server)?;
    let conn = target::connect(&target, &auth).await?;
    let tools = conn.client.list_tools().await.map_err(call_error);
    let tools = match tools {
        Ok(t) => t,
        Err(e) => {
            conn.close().await;
            return Err(e);
        }
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&tools)?);
    } else {
        let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
        for t in &tools {
            println!(
                "{:width$}  {}",
                t.name,
                t.description.as_deref().unwrap_or("")
            );
        }
    }
    conn.close().await;
    Ok(())
}

/// `oxmcp call`: one tool call, with progress on stderr.
pub(crate) async fn call(
    words: Vec<String>,
    auth: auth::Auth,
    arg: Vec<String>,
    json: bool,
    timeout: u64,
    server: Vec<String>,
    task: crate::tasks::TaskFlags,
) -> anyhow::Result<()> {
    let (url, rest) = match words.first() {
        Some(w) if w.contains("://") => (Some(w.clone()), &words[1..]),
        _ => (None, &words[..]),
    };
    let Some(tool) = rest.first().cloned() else {
        bail!("no tool name given");
    };
    if rest.len() > 2 {
        bail!("too many arguments: expected [URL] TOOL [JSON]");
    }
    let arguments = parse_args(rest.get(1).map(String::as_str), &arg)?;
    let target = target::Target::from_parts(url, server)?;
    let conn = target::connect(&target, &auth).await?;
    let client = &conn.client;
    let bar = progress::Bar::new();
    let on_progress = bar.clone();
    let options = RequestOptions::default()
        .timeout(Duration::from_secs(timeout))
        .on_progress(move |p| on_progress.update(&p));
    let result = match task.task {
        true => crate::tasks::call(client, &tool, arguments, task.ttl).await,
        false => client
            .call_tool_with(&tool, arguments, &options)
            .await
            .map_err(call_error),
    };
    bar.finish();
    conn.close().await;
    let result = result?;
    print_result(&result, json)?;
    if result.failed() {
        bail!("tool {tool} reported an error");
    }
    Ok(())
}

/// Prints a tool result: its text (other content as JSON), or all of it as JSON.
pub(crate) fn print_result(result: &oxmcp_types::CallToolResult, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(result)?);
        return Ok(());
    }
    for c in &result.content {
        match c {
            Content::Text(t) => println!("{}", t.text),
            other => println!("{}", serde_json::to_string(other)?),
        }
    }
    if let (Some(s), true) = (&result.structured_content, result.content.is_empty()) {
        println!("{}", serde_json::to_string_pretty(s)?);
    }
    Ok(())
}

pub(crate) fn call_error(e: CallError) -> anyhow::Error {
    match e {
        CallError::Rpc(e) => {
            let message = oxmcp_jsonrpc::printable(&e.message);
            match e.data {
                Some(d) => {
                    let data = d.to_string();
                    let data = oxmcp_jsonrpc::printable(&data);
                    anyhow::anyhow!("server error {}: {message} ({data})", e.code)
                }
                None => anyhow::anyhow!("server error {}: {message}", e.code),
            }
        }
        other => anyhow::anyhow!("{other}"),
    }
}

fn parse_args(json: Option<&str>, pairs: &[String]) -> anyhow::Result<JsonObject> {
    let mut obj = match json {
        Some(s) => {
            match serde_json::from_str::<Value>(s).context("tool arguments are not valid JSON")? {
                Value::Object(m) => m,
                _ => bail!("tool arguments must be a JSON object, like '{{\"message\":\"hi\"}}'"),
            }
        }
        None => JsonObject::new(),
    };
    for p in pairs {
        let (k, v) = p
            .split_once('=')
            .with_context(|| format!("--arg {p:?} is not key=value"))?;
        let v = serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_owned()));
        obj.insert(k.to_owned(), v);
    }
    Ok(obj)
}
