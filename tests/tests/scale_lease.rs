//! An instance serving a session trusts the store's word that it exists for a lease
//! (`--store-lease`), with a real Redis: calls within a lease cost the store nothing, a DELETE
//! elsewhere ends the session by the bus at once, and a session gone from the store without a
//! word on the bus is noticed within the lease.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use oxmcp_tests::scale::{Instance, Redis, call, ended_within, open_session, tool};
use serde_json::json;

const V: &str = "2025-11-25";

/// `calls` echo calls on session `sid` at `url`: the `EXPIRE`s Redis ran meanwhile (every
/// check that a session exists renews its keys' expiry, five of them).
async fn expires_during(redis: &Redis, url: &str, sid: &str, calls: i64) -> u64 {
    let before = redis.calls_of("expire");
    for i in 0..calls {
        let (status, m) = call(url, sid, V, &tool(i, "echo", json!({"message":"x"}))).await;
        assert_eq!(status, 200, "{m:?}");
    }
    redis.calls_of("expire") - before
}

/// Forty calls on a leased session ask Redis once; with `--store-lease 0`, every call asks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_within_a_lease_ask_the_store_once() {
    let redis = Redis::start().await;
    let leased = Instance::start(&redis, "a", &["--store-lease", "60s"]).await;
    let asking = Instance::start(&redis, "b", &["--store-lease", "0"]).await;
    let sid = open_session(&leased.url, V).await;
    let each = expires_during(&redis, &asking.url, &sid, 40).await;
    assert!(
        each >= 40 * 5,
        "every call asked: {each} EXPIREs for 40 calls"
    );
    let once = expires_during(&redis, &leased.url, &sid, 40).await;
    assert!(
        once <= 2 * 5,
        "one ask per lease: {once} EXPIREs for 40 calls"
    );
}

/// DELETE on one instance: another one serving the session under a long lease refuses it
/// (404) as soon as the bus tells it, not when its lease ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_elsewhere_ends_a_leased_session_by_the_bus() {
    let redis = Redis::start().await;
    let a = Instance::start(&redis, "a", &["--store-lease", "60s"]).await;
    let b = Instance::start(&redis, "b", &["--store-lease", "60s"]).await;
    let sid = open_session(&a.url, V).await;
    for inst in [&a, &b] {
        let (status, m) = call(&inst.url, &sid, V, &tool(1, "echo", json!({"message":"x"}))).await;
        assert_eq!(status, 200, "{}: {m:?}", inst.name);
    }
    assert_eq!(oxmcp_tests::scale::delete(&b.url, &sid, V).await, 200);
    assert_eq!(
        ended_within(&a.url, &sid, V, Duration::from_secs(5)).await,
        Some(404),
        "a still serves the session 5 s after its DELETE on b"
    );
}

/// A session's keys vanish from Redis with no word on the bus (deleted by hand, or lost
/// with a Redis that failed over): an instance holding it refuses it within its lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_gone_from_the_store_is_refused_within_the_lease() {
    let redis = Redis::start().await;
    let a = Instance::start(&redis, "a", &["--store-lease", "500ms"]).await;
    let sid = open_session(&a.url, V).await;
    let (status, _) = call(&a.url, &sid, V, &tool(1, "echo", json!({"message":"x"}))).await;
    assert_eq!(status, 200);
    let keys = redis.keys(&format!("mcp:{{{sid}}}:*"));
    assert!(!keys.is_empty());
    let mut del = vec!["DEL"];
    del.extend(keys.iter().map(String::as_str));
    redis.cli(&del);
    let t0 = Instant::now();
    let status = ended_within(&a.url, &sid, V, Duration::from_secs(5)).await;
    assert_eq!(status, Some(404), "still served 5 s after its keys went");
    assert!(
        t0.elapsed() < Duration::from_millis(500 + 1500),
        "refused {:?} after its keys went, past the 500 ms lease",
        t0.elapsed()
    );
}
