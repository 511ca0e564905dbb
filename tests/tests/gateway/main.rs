//! `oxmcp serve --config`: the gateway over real processes and sockets (upstreams are real
//! `oxmcp serve` children, stdio or HTTP; clients are real clients of the gateway's process).
//! `passthrough`: naming, routing, failover, and what passes through for both client eras and
//! both upstream eras. `reload`: SIGHUP serves the file as it now reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod environment;
mod hostile;
mod interrupted;
mod isolation;
mod passthrough;
mod reload;
mod subscriptions;

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use oxmcp_client::{Client, ClientConfig, ClientHandlers, EraChoice, RequestOptions, ServerEvent};
use oxmcp_http::HttpClientConfig;
use oxmcp_types::{
    CompleteParams, CompletionArgument, CompletionReference, Content, CreateMessageResult,
    ElicitAction, ElicitResult, JsonObject, LoggingLevel, OneOrMany, Role,
};
use serde_json::json;

use oxmcp_tests::oxmcp;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A client of `url` over HTTP with `handlers`, speaking `era`, and its transport's handle.
async fn connect(
    url: &str,
    handlers: ClientHandlers,
    era: EraChoice,
) -> (Client, oxmcp_http::HttpClientHandle) {
    let t = oxmcp_http::client::connect(url, HttpClientConfig::default()).unwrap();
    let config = ClientConfig::default().era(era);
    let c = Client::connect(t.incoming, t.outgoing, handlers, config)
        .await
        .unwrap();
    (c, t.handle)
}

async fn client(url: &str, era: EraChoice) -> Client {
    connect(url, ClientHandlers::new(), era).await.0
}

/// Writes a gateway config into a fresh temporary folder: (folder, file).
fn config_file(tag: &str, toml: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("mcp.toml");
    std::fs::write(&config, toml).unwrap();
    (dir, config)
}

/// `oxmcp serve --config CONFIG` on a free port: the process and its URL.
async fn serve_gateway(config: &std::path::Path) -> (tokio::process::Child, String) {
    oxmcp_tests::serve_http(&[
        "--config",
        config.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ])
    .await
}

fn args(v: serde_json::Value) -> JsonObject {
    serde_json::from_value(v).unwrap()
}

async fn names(c: &Client) -> Vec<String> {
    c.invalidate_lists();
    let mut n: Vec<String> = c
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    n.sort();
    n
}

async fn until(c: &Client, what: &str, pred: impl Fn(&[String]) -> bool) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let n = names(c).await;
        if pred(&n) {
            return n;
        }
        assert!(Instant::now() < deadline, "{what}: tools are {n:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A client that answers sampling and elicitation and records notifications.
async fn answering_client(
    url: &str,
    era: EraChoice,
) -> (Client, Arc<std::sync::Mutex<Vec<ServerEvent>>>) {
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = events.clone();
    let handlers = ClientHandlers::new()
        .sampling(|p| async move {
            let asked = serde_json::to_value(&p.messages[0].content).unwrap();
            let text = asked["text"].as_str().unwrap_or_default().to_owned();
            Ok(CreateMessageResult::new(
                "test-model",
                OneOrMany::One(Content::text(format!("model says: {text}"))),
            )
            .with_role(Role::Assistant))
        })
        .elicitation(|p| async move {
            assert_eq!(p.message, "What is your name?");
            Ok(ElicitResult::cancel()
                .with_action(ElicitAction::Accept)
                .with_content(Some(args(json!({"name": "Grace"})))))
        })
        .on_event(move |e| sink.lock().unwrap().push(e));
    let (c, _handle) = connect(url, handlers, era).await;
    (c, events)
}

/// Waits until `pred` holds for the recorded events.
async fn seen(
    events: &std::sync::Mutex<Vec<ServerEvent>>,
    what: &str,
    pred: impl Fn(&ServerEvent) -> bool,
) -> ServerEvent {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(e) = events.lock().unwrap().iter().find(|e| pred(e)) {
            return e.clone();
        }
        assert!(Instant::now() < deadline, "never saw {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
