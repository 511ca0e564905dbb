//! `oxmcp listen`: resource updates, list changes and log messages as they arrive, until Ctrl-C.
//!
//! Legacy era: `logging/setLevel`, `resources/subscribe` for each `--resource`, and the
//! notifications of the session (over HTTP on its standalone GET stream). 2026-07-28: one
//! `subscriptions/listen` request for the list changes the server declares and the resources
//! given; such a server sends log messages only within requests, so a listener sees none.

use anyhow::{Context, bail};
use oxmcp_client::{Client, ServerEvent, Subscription};
use oxmcp_jsonrpc::printable;
use oxmcp_types::{ListenFilter, LoggingLevel, LoggingMessageParams};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::call_error;
use crate::inspect::Reach;
use crate::target::{self, Target};

/// The method of the server's acknowledgement of a `subscriptions/listen`.
const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

/// A `--log-level` value.
pub(crate) fn parse_level(s: &str) -> Result<LoggingLevel, String> {
    serde_json::from_value(Value::String(s.to_owned())).map_err(|_| {
        format!(
            "unknown level {s:?} (debug, info, notice, warning, error, critical, alert, emergency)"
        )
    })
}

/// `oxmcp listen`.
pub(crate) async fn listen(
    url: Option<String>,
    resources: Vec<String>,
    level: Option<LoggingLevel>,
    reach: Reach,
) -> anyhow::Result<()> {
    let stop = oxmcp_http::shutdown_on_signal();
    let target = Target::from_parts(url, reach.server.clone())?;
    let (tx, mut events) = mpsc::unbounded_channel();
    let handlers = reach.auth.side.handlers()?.on_event(move |e| {
        let _ = tx.send(e);
    });
    let conn = target::connect_as(&target, &reach.auth, handlers).await?;
    let started = start(&conn.client, &resources, level).await;
    let mut subscription = match started {
        Ok(s) => s,
        Err(e) => {
            conn.close().await;
            return Err(e);
        }
    };
    if let Some(s) = subscription.as_mut() {
        // The acknowledgement says the server is listening for us.
        match s.next().await {
            Some(ServerEvent::Other { method, .. }) if method == ACKNOWLEDGED => {}
            Some(other) => print(&other, reach.json),
            None => {
                conn.close().await;
                bail!("the server ended the subscription at once");
            }
        }
    }
    eprintln!(
        "oxmcp: listening to {} (Ctrl-C to stop)",
        printable(&target.describe())
    );
    let outcome = loop {
        tokio::select! {
            Some(e) = events.recv() => print(&e, reach.json),
            e = next(&mut subscription) => match e {
                Some(e) => print(&e, reach.json),
                None => break Err(anyhow::anyhow!("the server ended the subscription")),
            },
            () = conn.client.closed() => break Err(anyhow::anyhow!("the server closed the connection")),
            () = stop.cancelled() => break Ok(()),
        }
    };
    drop(subscription);
    if outcome.is_ok() && !conn.client.is_modern() {
        for uri in &resources {
            let _ = conn.client.unsubscribe(uri).await;
        }
    }
    conn.close().await;
    outcome
}

/// The next event of the subscription; never, without one.
async fn next(subscription: &mut Option<Subscription>) -> Option<ServerEvent> {
    match subscription {
        Some(s) => s.next().await,
        None => std::future::pending().await,
    }
}

/// Asks the server for what `oxmcp listen` prints; a 2026-07-28 server gives a subscription.
async fn start(
    client: &Client,
    resources: &[String],
    level: Option<LoggingLevel>,
) -> anyhow::Result<Option<Subscription>> {
    if let Some(level) = level {
        client
            .set_log_level(level)
            .await
            .map_err(call_error)
            .context("cannot set the log level")?;
    }
    if !client.is_modern() {
        for uri in resources {
            client
                .subscribe(uri)
                .await
                .map_err(call_error)
                .with_context(|| format!("cannot subscribe to {uri}"))?;
        }
        return Ok(None);
    }
    let caps = client.server_capabilities();
    let filter = ListenFilter::default()
        .with_tools_list_changed(caps.tools.as_ref().map(|_| true))
        .with_prompts_list_changed(caps.prompts.as_ref().map(|_| true))
        .with_resources_list_changed(caps.resources.as_ref().map(|_| true))
        .with_resource_subscriptions((!resources.is_empty()).then(|| resources.to_vec()));
    Ok(Some(client.listen(filter).map_err(call_error)?))
}

/// Prints one event on stdout: a line of text, or its notification as one line of JSON.
fn print(event: &ServerEvent, json: bool) {
    if json {
        let (method, params) = notification(event);
        println!("{}", json!({"method": method, "params": params}));
        return;
    }
    match event {
        ServerEvent::Log(p) => println!("{}", log_line(p)),
        ServerEvent::ResourceUpdated(uri) => println!("updated {}", printable(uri)),
        ServerEvent::ToolsChanged => println!("tools changed"),
        ServerEvent::PromptsChanged => println!("prompts changed"),
        ServerEvent::ResourcesChanged => println!("resources changed"),
        ServerEvent::ElicitationComplete(id) => {
            println!("elicitation complete {}", printable(id))
        }
        other => {
            let (method, params) = notification(other);
            println!("{} {}", printable(&method), printable(&params.to_string()));
        }
    }
}

/// `log LEVEL [LOGGER]: DATA` (a string as it is, anything else as JSON).
fn log_line(p: &LoggingMessageParams) -> String {
    let level = serde_json::to_value(p.level)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let logger = p
        .logger
        .as_deref()
        .map(|l| format!(" {}", printable(l)))
        .unwrap_or_default();
    let data = match &p.data {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    format!("log {level}{logger}: {}", printable(&data))
}

/// The notification an event came as.
fn notification(event: &ServerEvent) -> (String, Value) {
    let (method, params) = match event {
        ServerEvent::Log(p) => (
            "notifications/message",
            serde_json::to_value(p).unwrap_or(Value::Null),
        ),
        ServerEvent::ToolsChanged => ("notifications/tools/list_changed", json!({})),
        ServerEvent::PromptsChanged => ("notifications/prompts/list_changed", json!({})),
        ServerEvent::ResourcesChanged => ("notifications/resources/list_changed", json!({})),
        ServerEvent::ResourceUpdated(uri) => {
            ("notifications/resources/updated", json!({ "uri": uri }))
        }
        ServerEvent::ElicitationComplete(id) => (
            "notifications/elicitation/complete",
            json!({ "elicitationId": id }),
        ),
        ServerEvent::Other { method, params } => return (method.clone(), params.clone()),
        _ => ("unknown", Value::Null),
    };
    (method.to_owned(), params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_print_as_lines() {
        let p: LoggingMessageParams = serde_json::from_value(
            json!({"level": "warning", "logger": "demo", "data": "disk\u{1b} full"}),
        )
        .expect("params");
        assert_eq!(
            log_line(&p),
            "log warning demo: disk\\u{1b} full".replace("\\u{1b}", &printable("\u{1b}"))
        );
        let (m, params) = notification(&ServerEvent::ResourceUpdated("demo://readme".into()));
        assert_eq!(
            (m.as_str(), params),
            (
                "notifications/resources/updated",
                json!({"uri": "demo://readme"})
            )
        );
        assert!(parse_level("warning").is_ok());
        assert!(parse_level("loud").is_err());
    }
}
