//! What a hostile client can put into the shared Redis, and a live session's GET stream
//! after its instance died, with real `oxmcp serve --store` instances and a real Redis.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use oxmcp_tests::scale::{Instance, Redis, SseReader, call, open_session, resume, tool};
use serde_json::{Value, json};

const V: &str = "2025-11-25";

/// Redis's `used_memory`, in bytes.
fn used_memory(redis: &Redis) -> u64 {
    let info = redis.cli(&["INFO", "memory"]);
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("INFO memory has used_memory")
}

/// The length of the bus stream, in bytes of its entries (approximately: `MEMORY USAGE`).
fn bus_bytes(redis: &Redis) -> u64 {
    redis
        .cli(&["MEMORY", "USAGE", "mcp:bus", "SAMPLES", "0"])
        .trim()
        .parse()
        .unwrap_or(0)
}

fn big(n: usize) -> String {
    "x".repeat(n)
}

/// Ten oversized subscriptions and ten oversized cancellations cost Redis nothing worth
/// counting: the refused subscriptions are neither stored nor sent on the bus, and a
/// cancellation travels as its request id. An accepted subscription is still shared, and
/// restoring the session elsewhere replays it and nothing else.
#[tokio::test]
async fn refused_input_never_reaches_the_shared_store() {
    let redis = Redis::start().await;
    let mut a = Instance::start(&redis, "a", &[]).await;
    let sid = open_session(&a.url, V).await;
    // Let the instance's first writes (heartbeat, bus reader) settle.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = used_memory(&redis);
    let bus_before = bus_bytes(&redis);
    let uri = format!("demo://greeting/{}", big(3 << 20));
    for i in 0..10 {
        let sub = json!({"jsonrpc":"2.0","id":100 + i,"method":"resources/subscribe","params":{"uri":uri}});
        let (status, answer) = call(&a.url, &sid, V, &sub).await;
        assert_eq!(status, 200);
        assert_eq!(answer[0]["error"]["code"], -32602, "{}", answer[0]);
    }
    let reason = big(3 << 20);
    for i in 0..10 {
        let cancel = json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1000 + i,"reason":reason}});
        let (status, _) = call(&a.url, &sid, V, &cancel).await;
        assert_eq!(status, 202);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = used_memory(&redis);
    let grown = after.saturating_sub(before);
    assert!(
        grown < 1 << 20,
        "Redis grew by {grown} bytes (bus {} -> {} bytes)",
        bus_before,
        bus_bytes(&redis)
    );
    let subs_key = format!("mcp:{{{sid}}}:subs");
    assert_eq!(redis.cli(&["SCARD", &subs_key]), "0");
    // A subscription to a resource nobody serves is refused too.
    let junk = json!({"jsonrpc":"2.0","id":99,"method":"resources/subscribe","params":{"uri":"nowhere://junk"}});
    let (_, answer) = call(&a.url, &sid, V, &junk).await;
    assert!(answer[0].get("error").is_some(), "{}", answer[0]);
    assert_eq!(redis.cli(&["SCARD", &subs_key]), "0");

    // An accepted subscription is shared, after it was accepted.
    let ok = json!({"jsonrpc":"2.0","id":7,"method":"resources/subscribe","params":{"uri":"demo://readme"}});
    let (_, answer) = call(&a.url, &sid, V, &ok).await;
    assert!(answer[0].get("result").is_some(), "{}", answer[0]);
    assert_eq!(
        redis.cli(&["SMEMBERS", &subs_key]),
        "demo://readme",
        "the accepted subscription is stored"
    );

    // Another instance restores the session with that subscription only, and its updates
    // reach the client there.
    a.kill().await;
    let b = Instance::start(&redis, "b", &[]).await;
    let held = call(&b.url, &sid, V, &tool(8, "subscriptions", json!({}))).await;
    assert_eq!(held.0, 200);
    assert_eq!(
        oxmcp_tests::scale::result_text(&held.1[0]).trim(),
        "1",
        "{:?}",
        held.1
    );
}

/// The bus carries small events: each has a byte cap, and a cancellation carries the
/// request id only (not the client's text).
#[tokio::test]
async fn a_cancellation_crosses_instances_as_its_request_id() {
    let redis = Redis::start().await;
    let a = Instance::start(&redis, "a", &[]).await;
    let sid = open_session(&a.url, V).await;
    let cancel = json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r-1","reason":big(100_000)}});
    let (status, _) = call(&a.url, &sid, V, &cancel).await;
    assert_eq!(status, 202);
    let entries = redis.cli(&["XRANGE", "mcp:bus", "-", "+"]);
    assert!(
        entries.contains("r-1"),
        "the cancellation is on the bus: {entries}"
    );
    assert!(
        !entries.contains("xxxxxxxx"),
        "the reason is not on the bus ({} bytes)",
        entries.len()
    );
}

/// A live session's GET stream is resumed on another instance after its own died: 200, and
/// a resource update sent afterwards arrives on it.
#[tokio::test]
async fn a_get_stream_resumes_after_its_instance_died() {
    let redis = Redis::start().await;
    let mut a = Instance::start(&redis, "a", &[]).await;
    let b = Instance::start(&redis, "b", &[]).await;
    let sid = open_session(&a.url, V).await;
    let sub = json!({"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"demo://readme"}});
    let (_, answer) = call(&a.url, &sid, V, &sub).await;
    assert!(answer[0].get("result").is_some(), "{}", answer[0]);
    let get = reqwest::Client::new()
        .get(&a.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", V)
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 200);
    let mut stream = SseReader::new(get);
    let priming = tokio::time::timeout(Duration::from_secs(10), stream.next_event())
        .await
        .unwrap()
        .expect("a priming event");
    let last = priming.id.expect("the priming event has an id");
    a.kill().await;
    drop(stream);

    let resumed = resume(&b.url, &sid, V, &last).send().await.unwrap();
    assert_eq!(
        resumed.status(),
        200,
        "{:?}",
        resumed.text().await.unwrap_or_default()
    );
    let mut stream = SseReader::new(resumed);
    // The update is announced after the resumption (on B): it arrives on the resumed stream.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let touch = tool(2, "touch", json!({"uri": "demo://readme"}));
    let (status, answer) = call(&b.url, &sid, V, &touch).await;
    assert_eq!(status, 200, "{answer:?}");
    let update: Value = loop {
        let e = stream
            .next_message(10)
            .await
            .expect("the stream stays open");
        let m = e.data.unwrap();
        if m["method"] == "notifications/resources/updated" {
            break m;
        }
    };
    assert_eq!(update["params"]["uri"], "demo://readme");
}

/// Where a stream's events are truly gone (an id no instance knows), a live session gets a
/// fresh GET stream, not a 404 that would tell the client its session ended.
#[tokio::test]
async fn an_unknown_last_event_id_gets_a_fresh_stream() {
    let redis = Redis::start().await;
    let a = Instance::start(&redis, "a", &[]).await;
    let sid = open_session(&a.url, V).await;
    let resumed = resume(&a.url, &sid, V, "gone-7").send().await.unwrap();
    assert_eq!(resumed.status(), 200);
    // The session is alive.
    let (status, _) = call(&a.url, &sid, V, &tool(3, "echo", json!({"message":"hi"}))).await;
    assert_eq!(status, 200);
}

/// An `initialize` too large to be a session record is refused, and nothing is stored.
#[tokio::test]
async fn an_oversized_initialize_is_not_stored() {
    let redis = Redis::start().await;
    let a = Instance::start(&redis, "a", &[]).await;
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":V,"capabilities":{},"clientInfo":{"name":big(1 << 20),"version":"1"}}});
    let r = reqwest::Client::new()
        .post(&a.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(init.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.headers().get("mcp-session-id").is_none());
    assert!(redis.keys("mcp:{*}:sess").is_empty());
    // A usual one still makes a session.
    open_session(&a.url, V).await;
    assert_eq!(redis.keys("mcp:{*}:sess").len(), 1);
}

/// What is refused before it runs (a batch the version does not allow, the second of two
/// requests of one id in a batch, an id already in use) leaves no state change behind that
/// a success of the same id would share.
#[tokio::test]
async fn refused_requests_leave_no_change_behind() {
    let redis = Redis::start().await;
    let a = Instance::start(&redis, "a", &[]).await;
    let subscribe = |id: i64, uri: &str| json!({"jsonrpc":"2.0","id":id,"method":"resources/subscribe","params":{"uri":uri}});
    let ping = |id: i64| json!({"jsonrpc":"2.0","id":id,"method":"ping"});
    let stored = |sid: &str| redis.cli(&["SCARD", &format!("mcp:{{{sid}}}:subs")]);

    // A batch on a version without batching is refused; a later ping of its id shares nothing.
    let sid = open_session(&a.url, "2025-06-18").await;
    let (status, _) = call(
        &a.url,
        &sid,
        "2025-06-18",
        &json!([subscribe(5, "nowhere://a")]),
    )
    .await;
    assert_eq!(status, 400);
    let (status, _) = call(&a.url, &sid, "2025-06-18", &ping(5)).await;
    assert_eq!(status, 200);
    assert_eq!(
        stored(&sid),
        "0",
        "a refused batch's subscription was shared"
    );

    // Two requests of one id in a batch: the engine refuses the second, nothing is shared.
    let sid = open_session(&a.url, "2025-03-26").await;
    let batch = json!([ping(6), subscribe(6, "nowhere://b")]);
    let (_, answer) = call(&a.url, &sid, "2025-03-26", &batch).await;
    assert_eq!(
        stored(&sid),
        "0",
        "a duplicate id shared its twin's change: {answer:?}"
    );

    // An id in use: refused, and the first request's success shares nothing of it.
    let sid = open_session(&a.url, V).await;
    let slow = {
        let (url, sid) = (a.url.clone(), sid.clone());
        tokio::spawn(async move {
            call(
                &url,
                &sid,
                V,
                &tool(7, "slow", json!({"steps": 2, "delay_ms": 500})),
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, answer) = call(&a.url, &sid, V, &subscribe(7, "nowhere://c")).await;
    assert!(answer[0].get("error").is_some(), "{answer:?}");
    let (status, _) = slow.await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(
        stored(&sid),
        "0",
        "an id in use shared the first request's success"
    );
}
