//! Cancellation over Streamable HTTP with a real client and server on 127.0.0.1: a client
//! that drops a call, or whose `RequestOptions` timeout fires, cancels the server's handler.
//! In a legacy session by `notifications/cancelled`; in 2026-07-28, which has no session, by
//! closing the POST's response (the SSE stream, or the connection awaiting a JSON answer).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use oxmcp_client::{CallError, Client, ClientConfig, ClientHandlers, EraChoice, RequestOptions};
use oxmcp_http::{HttpClientConfig, HttpConfig, ResponseMode, ServeOptions};
use oxmcp_server::{Ctx, Server};
use oxmcp_types::{JsonObject, LoggingLevel};
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Wait {
    /// Log a message first (so that an automatic answer becomes an SSE stream).
    chatty: bool,
}

/// A server whose `wait` tool runs for a minute unless cancelled; `seen` counts the calls
/// whose `ctx.cancellation()` fired (watched by a task of its own, whatever happens to the
/// handler).
fn server(seen: Arc<AtomicUsize>) -> Server {
    Server::builder("cancel-test", "1")
        .tool("wait", "waits for cancellation", move |c: Ctx, a: Wait| {
            let seen = seen.clone();
            async move {
                let token = c.cancellation().clone();
                tokio::spawn(async move {
                    token.cancelled().await;
                    seen.fetch_add(1, Ordering::SeqCst);
                });
                if a.chatty {
                    c.log(LoggingLevel::Info, None, json!("waiting")).await;
                }
                tokio::time::sleep(Duration::from_secs(60)).await;
                Ok::<_, String>("not cancelled")
            }
        })
        .build()
        .unwrap()
}

async fn client(url: &str, era: EraChoice) -> Client {
    let (client, _handle) = common::connect_with(
        url,
        HttpClientConfig::default(),
        ClientHandlers::new(),
        ClientConfig::default().era(era),
    )
    .await;
    client.unwrap()
}

fn args(chatty: bool) -> JsonObject {
    let mut a = JsonObject::new();
    a.insert("chatty".into(), json!(chatty));
    a
}

/// Drops one call and times out another; each must reach the handler's token within 3 s.
async fn check(mode: ResponseMode, era: EraChoice, chatty: bool) {
    let seen = Arc::new(AtomicUsize::new(0));
    let config = HttpConfig::default().response_mode(mode);
    let running = common::start_with(server(seen.clone()), config, ServeOptions::default()).await;
    let client = client(&running.url, era).await;

    let call = client.call_tool("wait", args(chatty));
    let dropped = tokio::time::timeout(Duration::from_millis(300), call).await;
    assert!(dropped.is_err(), "the call must still be running");
    let s = seen.clone();
    assert!(
        common::until(3, move || s.load(Ordering::SeqCst) == 1).await,
        "{era:?} {mode:?} chatty={chatty}: dropping the call did not cancel the handler"
    );

    let options = RequestOptions::default().timeout(Duration::from_millis(300));
    let timed_out = client.call_tool_with("wait", args(chatty), &options).await;
    assert!(
        matches!(timed_out, Err(CallError::Timeout(_))),
        "{timed_out:?}"
    );
    let s = seen.clone();
    assert!(
        common::until(3, move || s.load(Ordering::SeqCst) == 2).await,
        "{era:?} {mode:?} chatty={chatty}: the timeout did not cancel the handler"
    );
    running.shutdown.cancel();
}

#[tokio::test]
async fn modern_sse_answers_are_cancelled_by_closing_the_stream() {
    check(ResponseMode::Auto, EraChoice::Modern, true).await;
    check(ResponseMode::Sse, EraChoice::Modern, false).await;
}

#[tokio::test]
async fn modern_requests_awaiting_their_answer_are_cancelled_by_closing_the_connection() {
    check(ResponseMode::Auto, EraChoice::Modern, false).await;
    check(ResponseMode::Json, EraChoice::Modern, true).await;
}

#[tokio::test]
async fn legacy_sessions_are_cancelled_by_notification() {
    check(ResponseMode::Auto, EraChoice::Legacy, false).await;
    check(ResponseMode::Sse, EraChoice::Legacy, true).await;
    check(ResponseMode::Json, EraChoice::Legacy, false).await;
}
