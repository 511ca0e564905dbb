//! A server in `ResponseMode::Json` (real client and server on 127.0.0.1): a JSON answer
//! carries nothing but the response, so a legacy request's notifications and its requests to
//! the client go on the session's GET stream; without one, a request to the client fails at
//! once with a clear error instead of hanging.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use oxmcp_client::{Client, ClientConfig, ClientHandlers, EraChoice, RequestOptions};
use oxmcp_http::{HttpClientConfig, HttpConfig, ResponseMode, ServeOptions};
use oxmcp_jsonrpc::ErrorObject;
use oxmcp_server::{Ctx, Server};
use oxmcp_types::{
    CallToolResult, Content, CreateMessageParams, CreateMessageResult, JsonObject, OneOrMany,
};
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

/// `ask` samples the client's model and answers with its text; `steps` reports progress 3
/// times, then answers "stepped" 300 ms later; `roots` sends the client a raw `roots/list`.
fn server() -> Server {
    Server::builder("json-mode", "1")
        .tool("ask", "samples", |c: Ctx, _a: Nothing| async move {
            let params: CreateMessageParams = serde_json::from_value(json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                "maxTokens": 5
            }))
            .unwrap();
            let answer = c.create_message(&params).await.map_err(|e| e.to_string())?;
            match answer.content {
                OneOrMany::One(c) => Ok(c.as_text().unwrap_or_default().to_owned()),
                OneOrMany::Many(_) => Err("many".to_owned()),
            }
        })
        .tool(
            "steps",
            "reports progress",
            |c: Ctx, _a: Nothing| async move {
                for i in 1..=3 {
                    c.progress(f64::from(i), Some(3.0), None).await;
                }
                // The GET stream is another connection than the POST's answer: progress sent
                // just before the response could reach the client after it (and be ignored then,
                // its request being over).
                tokio::time::sleep(Duration::from_millis(300)).await;
                Ok::<_, String>("stepped")
            },
        )
        .tool(
            "roots",
            "asks for roots",
            |c: Ctx, _a: Nothing| async move {
                // A raw request to the client, which 2026-07-28 has no way to carry back.
                let options = RequestOptions::default();
                let asked = c
                    .peer()
                    .request_raw("roots/list", json!({}), &options)
                    .await;
                asked.map(|_| "answered").map_err(|e| e.to_string())
            },
        )
        .build()
        .unwrap()
}

async fn model(_p: CreateMessageParams) -> Result<CreateMessageResult, ErrorObject> {
    Ok(serde_json::from_value(json!({
        "role": "assistant",
        "content": {"type": "text", "text": "sampled"},
        "model": "m"
    }))
    .unwrap())
}

async fn client(url: &str, era: EraChoice, get_stream: bool) -> Client {
    let (client, _handle) = common::connect_with(
        url,
        HttpClientConfig::default().standalone_stream(get_stream),
        ClientHandlers::new().sampling(model),
        ClientConfig::default().era(era),
    )
    .await;
    client.unwrap()
}

async fn start() -> common::Running {
    let config = HttpConfig::default().response_mode(ResponseMode::Json);
    common::start_with(server(), config, ServeOptions::default()).await
}

fn text(r: &CallToolResult) -> &str {
    r.content
        .first()
        .and_then(Content::as_text)
        .unwrap_or_default()
}

/// Calls `tool`, failing the test if that takes more than 5 s.
async fn call(client: &Client, tool: &str, options: &RequestOptions) -> CallToolResult {
    let call = client.call_tool_with(tool, JsonObject::new(), options);
    tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("the call must not hang")
        .unwrap()
}

#[tokio::test]
async fn legacy_sampling_inside_a_tool_goes_over_the_get_stream() {
    let running = start().await;
    let client = client(&running.url, EraChoice::Legacy, true).await;
    let r = call(&client, "ask", &RequestOptions::default()).await;
    assert_eq!(text(&r), "sampled", "{r:?}");
}

#[tokio::test]
async fn legacy_progress_goes_over_the_get_stream() {
    let running = start().await;
    let client = client(&running.url, EraChoice::Legacy, true).await;
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    let options = RequestOptions::default().on_progress(move |_p| {
        s.fetch_add(1, Ordering::SeqCst);
    });
    let r = call(&client, "steps", &options).await;
    assert_eq!(text(&r), "stepped");
    assert_eq!(
        seen.load(Ordering::SeqCst),
        3,
        "every progress notification"
    );
}

#[tokio::test]
async fn legacy_sampling_without_a_get_stream_fails_at_once() {
    let running = start().await;
    let client = client(&running.url, EraChoice::Legacy, false).await;
    let started = std::time::Instant::now();
    let r = call(&client, "ask", &RequestOptions::default()).await;
    assert!(r.is_error == Some(true), "{r:?}");
    assert!(
        text(&r).contains("no stream to the client"),
        "a clear error: {}",
        text(&r)
    );
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn modern_sampling_in_json_mode_works() {
    // 2026-07-28 sampling is an `input_required` round: it needs no stream to the client.
    let running = start().await;
    let client = client(&running.url, EraChoice::Modern, true).await;
    let r = call(&client, "ask", &RequestOptions::default()).await;
    assert_eq!(text(&r), "sampled", "{r:?}");
}

#[tokio::test]
async fn modern_requests_to_the_client_fail_at_once() {
    // 2026-07-28 has no server-to-client requests, whatever the response mode: not sent, and
    // failed at once rather than left waiting for an answer that cannot come.
    for mode in [ResponseMode::Json, ResponseMode::Sse, ResponseMode::Auto] {
        let config = HttpConfig::default().response_mode(mode);
        let running = common::start_with(server(), config, ServeOptions::default()).await;
        let client = client(&running.url, EraChoice::Modern, true).await;
        let started = std::time::Instant::now();
        let r = call(&client, "roots", &RequestOptions::default()).await;
        assert!(r.is_error == Some(true), "{mode:?}: {r:?}");
        assert!(
            text(&r).contains("no stream to the client"),
            "{mode:?}: a clear error: {}",
            text(&r)
        );
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}
