//! A legacy session's lone request is answered on its POST's own task (no hop to the engine's
//! loop and back). What that must not change, over a real endpoint on 127.0.0.1: a handler's
//! progress reaches the client while the handler still runs, a client that goes away does
//! not cancel its request, an id in flight is not taken twice, and requests one after the
//! other or at once are each answered once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::Session;
use oxmcp_http::{HttpConfig, ServeOptions};
use oxmcp_server::{Ctx, Server};
use serde_json::{Value, json};
use tokio::sync::Notify;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

/// `report` sends progress, then waits until `release` is notified; `slow` returns after
/// 300 ms and counts its ends in `ended`; `quick` answers at once.
fn server(release: Arc<Notify>, ended: Arc<AtomicUsize>) -> Server {
    Server::builder("direct-test", "1")
        .tool(
            "report",
            "progress, then wait",
            move |c: Ctx, _: Nothing| {
                let release = release.clone();
                async move {
                    c.progress(1.0, Some(2.0), Some("half way".into())).await;
                    release.notified().await;
                    Ok::<_, String>("released")
                }
            },
        )
        .tool("slow", "300 ms", move |_: Ctx, _: Nothing| {
            let ended = ended.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                ended.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>("slept")
            }
        })
        .tool("quick", "at once", |_: Ctx, _: Nothing| async {
            Ok::<_, String>("quick")
        })
        .build()
        .unwrap()
}

fn call(id: u64, tool: &str, progress: bool) -> String {
    let mut params = json!({"name": tool, "arguments": {}});
    if progress {
        params["_meta"] = json!({"progressToken": "p1"});
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
}

async fn start() -> (common::Running, Arc<Notify>, Arc<AtomicUsize>) {
    let release = Arc::new(Notify::new());
    let ended = Arc::new(AtomicUsize::new(0));
    let running = common::start_with(
        server(release.clone(), ended.clone()),
        HttpConfig::default(),
        ServeOptions::default(),
    )
    .await;
    (running, release, ended)
}

#[tokio::test]
async fn progress_reaches_the_client_while_the_handler_still_runs() {
    let (running, release, _) = start().await;
    let s = Session::open(&running.url).await;
    // The answer's head comes once the progress is sent, not when the handler returns.
    let mut r = tokio::time::timeout(
        Duration::from_secs(5),
        s.post(call(2, "report", true)).send(),
    )
    .await
    .expect("the answer's head while the handler runs")
    .unwrap();
    assert_eq!(r.status(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    // The handler waits for us: the progress must come before it returns.
    let mut seen = String::new();
    while !seen.contains("notifications/progress") {
        let chunk = tokio::time::timeout(Duration::from_secs(5), r.chunk())
            .await
            .expect("the progress while the handler runs")
            .unwrap()
            .expect("the stream is open");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(!seen.contains("released"), "{seen}");
    release.notify_one();
    let rest = tokio::time::timeout(Duration::from_secs(5), r.text())
        .await
        .unwrap()
        .unwrap();
    let (_, messages) = common::sse(&(seen + &rest));
    let last = messages.last().unwrap();
    assert_eq!(last["id"], 2);
    assert_eq!(last["result"]["content"][0]["text"], "released");
    running.shutdown.cancel();
}

#[tokio::test]
async fn a_client_that_goes_away_does_not_cancel_its_request() {
    let (running, _, ended) = start().await;
    let s = Session::open(&running.url).await;
    let gone = tokio::time::timeout(
        Duration::from_millis(50),
        s.post(call(2, "slow", false)).send(),
    )
    .await;
    assert!(gone.is_err(), "the call must still be running");
    let e = ended.clone();
    assert!(
        common::until(3, move || e.load(Ordering::SeqCst) == 1).await,
        "the handler did not run to its end"
    );
    // The session goes on, and its next request is answered.
    let r = s.post(call(3, "quick", false)).send().await.unwrap();
    assert_eq!(
        common::answer(r).await["result"]["content"][0]["text"],
        "quick"
    );
    running.shutdown.cancel();
}

#[tokio::test]
async fn an_id_in_flight_is_not_taken_twice() {
    let (running, _, _) = start().await;
    let s = Session::open(&running.url).await;
    let first = s.post(call(7, "slow", false)).send();
    let first = tokio::spawn(first);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let again = s.post(call(7, "quick", false)).send().await.unwrap();
    let again: Value = common::answer(again).await;
    assert_eq!(again["error"]["code"], -32600, "{again}");
    let first = common::answer(first.await.unwrap().unwrap()).await;
    assert_eq!(first["result"]["content"][0]["text"], "slept");
    running.shutdown.cancel();
}

#[tokio::test]
async fn many_requests_in_turn_and_at_once_are_each_answered_once() {
    let (running, _, _) = start().await;
    let s = Arc::new(Session::open(&running.url).await);
    for id in 10..60 {
        let r = s.post(call(id, "quick", false)).send().await.unwrap();
        let v = common::answer(r).await;
        assert_eq!(v["id"], id);
    }
    let mut all = tokio::task::JoinSet::new();
    for id in 100..164 {
        let s = s.clone();
        all.spawn(async move {
            let r = s.post(call(id, "quick", false)).send().await.unwrap();
            (id, common::answer(r).await)
        });
    }
    while let Some(done) = all.join_next().await {
        let (id, v) = done.unwrap();
        assert_eq!(v["id"], id, "{v}");
        assert_eq!(v["result"]["content"][0]["text"], "quick");
    }
    running.shutdown.cancel();
}
