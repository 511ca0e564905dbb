//! An idle session's engine connection is parked (`HttpConfig::park_idle_after`) and started
//! again by its next message, over a real endpoint on 127.0.0.1: what the session held (its
//! handler state, log level and subscriptions) lives on, requests that come at once start
//! one connection, a GET stream wakes it, and a parked session that is deleted ends as any
//! session does.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{Session, answer, call};
use oxmcp_http::{HttpConfig, ServeOptions};
use oxmcp_server::{Ctx, Server};
use oxmcp_types::LoggingLevel;
use reqwest::StatusCode;
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

/// `count` counts its calls in the session's handler state; `chat` logs at debug level;
/// `quick` answers at once. Unsubscriptions are counted in `released`.
fn server(released: Arc<AtomicUsize>) -> Server {
    Server::builder("parking-test", "1")
        .tool("count", "calls so far", |c: Ctx, _: Nothing| async move {
            let state = c.session_state().map_err(|e| e.to_string())?;
            let n = state
                .get::<u64>("n")
                .await
                .map_err(|e| e.to_string())?
                .unwrap_or(0)
                + 1;
            state.set("n", &n).await.map_err(|e| e.to_string())?;
            Ok::<_, String>(n.to_string())
        })
        .tool(
            "chat",
            "logs at debug level",
            |c: Ctx, _: Nothing| async move {
                c.log(LoggingLevel::Debug, None, json!("a debug line"))
                    .await;
                Ok::<_, String>("said")
            },
        )
        .tool("quick", "at once", |_: Ctx, _: Nothing| async {
            Ok::<_, String>("quick")
        })
        .tool(
            "linger",
            "keeps its peer 600 ms",
            |c: Ctx, _: Nothing| async move {
                // Work that outlives its request, with a handle on the connection.
                let peer = c.peer().clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(600)).await;
                    drop(peer);
                });
                Ok::<_, String>("lingering")
            },
        )
        .text_resource("test://readme", "readme", "text/plain", "read me")
        .on_unsubscribe(move |_, _| {
            released.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .unwrap()
}

async fn start(released: Arc<AtomicUsize>) -> (common::Running, Server) {
    let server = server(released);
    let config = HttpConfig::default().park_idle_after(Some(Duration::from_millis(100)));
    let running = common::start_with(server.clone(), config, ServeOptions::default()).await;
    (running, server)
}

/// Waits (up to 5 s) until `n` sessions are parked.
async fn parked(running: &common::Running, n: usize) {
    for _ in 0..500 {
        if running.http.parked_count() == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{} sessions parked, not {n}", running.http.parked_count());
}

async fn ask(s: &Session, id: u64, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let r = s.post(body.to_string()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    answer(r).await
}

fn text(v: &Value) -> &str {
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

#[tokio::test]
async fn a_parked_session_keeps_its_state_and_ends_as_any_other() {
    let released = Arc::new(AtomicUsize::new(0));
    let (running, server) = start(released.clone()).await;
    let s = Session::open(&running.url).await;
    assert_eq!(
        text(&ask(&s, 1, "tools/call", json!({"name": "count"})).await),
        "1"
    );
    let set = ask(&s, 2, "logging/setLevel", json!({"level": "debug"})).await;
    assert_eq!(set["result"], json!({}), "{set}");
    let sub = ask(
        &s,
        3,
        "resources/subscribe",
        json!({"uri": "test://readme"}),
    )
    .await;
    assert_eq!(sub["result"], json!({}), "{sub}");

    parked(&running, 1).await;
    assert_eq!(server.session_count(), 0, "no engine connection runs");
    assert_eq!(
        released.load(Ordering::SeqCst),
        0,
        "parking released nothing"
    );

    // Taken up again: the handler state, the log level and the subscription are the same.
    assert_eq!(
        text(&ask(&s, 4, "tools/call", json!({"name": "count"})).await),
        "2"
    );
    assert_eq!(running.http.parked_count(), 0);
    assert_eq!(server.session_count(), 1);
    let r = s
        .post(call(5, "chat", json!({})))
        .header("accept", "text/event-stream, application/json")
        .send()
        .await
        .unwrap();
    let body = r.text().await.unwrap();
    let (_, messages) = common::sse(&body);
    assert!(
        messages
            .iter()
            .any(|m| m["method"] == "notifications/message" && m["params"]["level"] == "debug"),
        "the debug line (log level kept): {body}"
    );
    let unsub = ask(
        &s,
        6,
        "resources/unsubscribe",
        json!({"uri": "test://readme"}),
    )
    .await;
    assert_eq!(unsub["result"], json!({}), "{unsub}");
    assert_eq!(
        released.load(Ordering::SeqCst),
        1,
        "the subscription was still held"
    );
    let sub = ask(
        &s,
        7,
        "resources/subscribe",
        json!({"uri": "test://readme"}),
    )
    .await;
    assert_eq!(sub["result"], json!({}), "{sub}");

    // Parked again, then deleted: its subscription is released and the session is gone.
    parked(&running, 1).await;
    let r = s.delete().send().await.unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    assert_eq!(released.load(Ordering::SeqCst), 2, "ended with the session");
    assert_eq!(running.http.session_count(), 0);
    let r = s.post(call(8, "quick", json!({}))).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn requests_at_once_start_one_connection() {
    let (running, server) = start(Arc::new(AtomicUsize::new(0))).await;
    let s = Session::open(&running.url).await;
    parked(&running, 1).await;
    let calls = (0..16).map(|i| {
        let s = &s;
        async move {
            let r = s
                .post(call(100 + i, "quick", json!({})))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), StatusCode::OK);
            let v = answer(r).await;
            assert_eq!(v["id"], 100 + i);
            text(&v).to_owned()
        }
    });
    let answers = futures::future::join_all(calls).await;
    assert!(answers.iter().all(|a| a == "quick"), "{answers:?}");
    assert_eq!(server.session_count(), 1, "one engine connection");
    assert_eq!(running.http.session_count(), 1);
}

#[tokio::test]
async fn a_get_stream_wakes_a_parked_session_for_broadcasts() {
    let (running, server) = start(Arc::new(AtomicUsize::new(0))).await;
    let s = Session::open(&running.url).await;
    parked(&running, 1).await;
    let mut get = s.get().send().await.unwrap();
    assert_eq!(get.status(), StatusCode::OK);
    assert_eq!(
        server.session_count(),
        1,
        "the GET stream started the connection"
    );
    // While the stream is open the session is not idle: it stays up.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(running.http.parked_count(), 0);
    server.notify_tool_list_changed();
    let chunk = tokio::time::timeout(Duration::from_secs(5), async {
        let mut seen = String::new();
        while !seen.contains("list_changed") {
            let bytes = get.chunk().await.unwrap().expect("the stream ended");
            seen.push_str(&String::from_utf8_lossy(&bytes));
        }
        seen
    })
    .await
    .expect("the broadcast reached the GET stream");
    assert!(
        chunk.contains("notifications/tools/list_changed"),
        "{chunk}"
    );
}

#[tokio::test]
async fn work_holding_the_connection_keeps_it_up() {
    let (running, server) = start(Arc::new(AtomicUsize::new(0))).await;
    let s = Session::open(&running.url).await;
    let v = ask(&s, 1, "tools/call", json!({"name": "linger"})).await;
    assert_eq!(text(&v), "lingering", "{v}");
    // Idle past 100 ms, but a task still holds the connection: not parked.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(running.http.parked_count(), 0);
    assert_eq!(server.session_count(), 1);
    // Once it lets go, the session is parked.
    parked(&running, 1).await;
}

#[tokio::test]
async fn a_session_parks_once_its_handshake_is_handled() {
    let server = server(Arc::new(AtomicUsize::new(0)));
    // An idle period far longer than the test: only the handshake's end parks them.
    let config = HttpConfig::default().park_idle_after(Some(Duration::from_secs(600)));
    let running = common::start_with(server.clone(), config, ServeOptions::default()).await;
    let (a, b) = (
        Session::open(&running.url).await,
        Session::open(&running.url).await,
    );
    parked(&running, 2).await;
    // (A parked session's engine may still be ending for a moment.)
    for _ in 0..500 {
        if server.session_count() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(server.session_count(), 0, "no engine connection runs");
    for s in [&a, &b] {
        let v = ask(s, 1, "tools/call", json!({"name": "count"})).await;
        assert_eq!(text(&v), "1", "{v}");
    }
    assert_eq!(running.http.parked_count(), 0, "their calls started them");
    // In use since their handshake: they stay up until the idle period.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(running.http.parked_count(), 0);
    assert_eq!(server.session_count(), 2);
    let v = ask(&a, 2, "tools/call", json!({"name": "count"})).await;
    assert_eq!(text(&v), "2", "{v}");
}

#[tokio::test]
async fn without_parking_the_handshake_parks_nothing() {
    let server = server(Arc::new(AtomicUsize::new(0)));
    let config = HttpConfig::default().park_idle_after(None);
    let running = common::start_with(server.clone(), config, ServeOptions::default()).await;
    let s = Session::open(&running.url).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(running.http.parked_count(), 0);
    assert_eq!(server.session_count(), 1);
    let v = ask(&s, 1, "tools/call", json!({"name": "count"})).await;
    assert_eq!(text(&v), "1", "{v}");
}
