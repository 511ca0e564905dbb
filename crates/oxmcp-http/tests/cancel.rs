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

/// A server whose `observe` tool waits on `ctx.cancellation()` in the handler itself (no
/// spawned task), counts in `seen` when that branch runs, and logs then (which must not be
/// sent); `ignore` pays no attention to
/// cancellation and counts in `dropped` when its future is dropped.
fn observing_server(seen: Arc<AtomicUsize>, dropped: Arc<AtomicUsize>) -> Server {
    struct CountOnDrop(Arc<AtomicUsize>);
    impl Drop for CountOnDrop {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    Server::builder("observe-test", "1")
        .tool(
            "observe",
            "waits for cancellation",
            move |c: Ctx, _a: Wait| {
                let seen = seen.clone();
                async move {
                    tokio::select! {
                        () = c.cancellation().cancelled() => {
                            seen.fetch_add(1, Ordering::SeqCst);
                            // Its last words still reach the client (no response does).
                            let bye = json!("saw the cancellation");
                            c.log(LoggingLevel::Info, None, bye).await;
                            Ok::<_, String>("saw the cancellation")
                        }
                        () = tokio::time::sleep(Duration::from_secs(60)) => Ok("not cancelled"),
                    }
                }
            },
        )
        .tool(
            "ignore",
            "ignores cancellation",
            move |_c: Ctx, _a: Wait| {
                let guard = CountOnDrop(dropped.clone());
                async move {
                    let _guard = guard;
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    Ok::<_, String>("not cancelled")
                }
            },
        )
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_handler_sees_its_own_cancellation_in_both_eras() {
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let (seen, dropped) = (Arc::default(), Arc::default());
        let server = observing_server(Arc::clone(&seen), dropped);
        let running =
            common::start_with(server, HttpConfig::default(), ServeOptions::default()).await;
        let client = client(&running.url, era).await;
        let call = client.call_tool("observe", args(false));
        assert!(
            tokio::time::timeout(Duration::from_millis(300), call)
                .await
                .is_err()
        );
        let s = Arc::clone(&seen);
        assert!(
            common::until(3, move || s.load(Ordering::SeqCst) == 1).await,
            "{era:?}: the handler's own select on ctx.cancellation() never ran"
        );
        running.shutdown.cancel();
    }
}

#[tokio::test]
async fn a_cancelled_request_that_returns_gets_no_response() {
    let seen = Arc::new(AtomicUsize::new(0));
    let server = observing_server(seen.clone(), Arc::default());
    let config = HttpConfig::default().response_mode(ResponseMode::Sse);
    let running = common::start_with(server, config, ServeOptions::default()).await;
    let session = common::Session::open(&running.url).await;
    // The GET stream is where a message about no open request would go.
    let mut get = session.get().send().await.unwrap();
    assert_eq!(get.status(), reqwest::StatusCode::OK);
    let answer = session
        .post(common::call(5, "observe", json!({"chatty": false})))
        .send()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let cancel =
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}});
    let r = session.post(cancel.to_string()).send().await.unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::ACCEPTED);
    let body = tokio::time::timeout(Duration::from_secs(3), answer.text())
        .await
        .expect("the cancelled request's stream must end")
        .unwrap();
    let (_ids, messages) = common::sse(&body);
    assert!(
        messages.iter().all(|m| m.get("id").is_none()),
        "no response for a cancelled request: {messages:?}"
    );
    assert_eq!(
        seen.load(Ordering::SeqCst),
        1,
        "the handler saw the cancellation"
    );
    let mut on_get = String::new();
    while let Ok(Ok(Some(chunk))) =
        tokio::time::timeout(Duration::from_millis(500), get.chunk()).await
    {
        on_get.push_str(&String::from_utf8_lossy(&chunk));
    }
    let (_ids, messages) = common::sse(&on_get);
    assert!(
        messages.iter().all(|m| m.get("id").is_none()),
        "no response on the GET stream either: {messages:?}"
    );
}

#[tokio::test]
async fn a_handler_that_ignores_cancellation_is_still_ended() {
    let dropped = Arc::new(AtomicUsize::new(0));
    let server = observing_server(Arc::default(), dropped.clone());
    let running = common::start_with(server, HttpConfig::default(), ServeOptions::default()).await;
    let client = client(&running.url, EraChoice::Legacy).await;
    let call = client.call_tool("ignore", args(false));
    assert!(
        tokio::time::timeout(Duration::from_millis(300), call)
            .await
            .is_err()
    );
    let d = dropped.clone();
    assert!(
        common::until(5, move || d.load(Ordering::SeqCst) == 1).await,
        "a handler that ignores its cancellation is aborted after the grace period"
    );
}
