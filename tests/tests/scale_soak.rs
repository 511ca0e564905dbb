//! Soak with the store: waves of sessions over three instances behind the proxy, with
//! streams cut at random, sessions deleted or abandoned. Once they are gone (the abandoned
//! ones by expiry) nothing of them is left in Redis, and the instances' RSS stays flat.
//! SOAK_SESSIONS sets the sessions per wave (200 here; scripts/soak.sh runs 1,000).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use oxmcp_tests::scale::{Instance, Proxy, Redis, SseReader, call, open_session, post, tool};
use serde_json::json;

const V: &str = "2025-11-25";

fn rss_kib(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// One session's life; `fate` picks how it ends: 0 DELETE, 1 abandoned, 2 a stream cut and
/// resumed, then DELETE.
async fn life(url: String, fate: u64) {
    let sid = open_session(&url, V).await;
    let (status, m) = call(&url, &sid, V, &tool(1, "echo", json!({"message":"x"}))).await;
    assert_eq!(status, 200);
    assert_eq!(m[0]["result"]["content"][0]["text"], "x");
    if fate == 2 {
        let mut slow = tool(2, "slow", json!({"steps": 3, "delay_ms": 20}));
        slow["params"]["_meta"] = json!({"progressToken": 2});
        let r = post(&url, &sid, V, &slow).send().await.unwrap();
        let mut sse = SseReader::new(r);
        let first = sse.next_message(20).await.unwrap();
        drop(sse);
        let resumed = oxmcp_tests::scale::resume(&url, &sid, V, &first.id.unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(resumed.status(), 200);
        let mut sse = SseReader::new(resumed);
        let mut results = 0;
        while let Some(e) = sse.next_message(20).await {
            if e.data.unwrap()["id"] == 2 {
                results += 1;
            }
        }
        assert_eq!(results, 1, "the result exactly once");
    }
    if fate != 1 {
        assert_eq!(oxmcp_tests::scale::delete(&url, &sid, V).await, 200);
    }
}

async fn wave(url: &str, sessions: u64, seed: &mut u64) {
    let mut tasks = Vec::new();
    for _ in 0..sessions {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        tasks.push(tokio::spawn(life(url.to_owned(), (*seed >> 33) % 3)));
        if tasks.len() == 50 {
            for t in tasks.drain(..) {
                t.await.unwrap();
            }
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
}

/// Waits until Redis holds no session key (expiry included), at most `secs`.
async fn drained(redis: &Redis, secs: u64) -> Vec<String> {
    let t0 = Instant::now();
    loop {
        let left = redis.keys("mcp:{*");
        if left.is_empty() || t0.elapsed() > Duration::from_secs(secs) {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_over_three_instances_leave_nothing_behind() {
    let sessions: u64 = std::env::var("SOAK_SESSIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let redis = Redis::start().await;
    let mut all = Vec::new();
    for name in ["a", "b", "c"] {
        all.push(Instance::start(&redis, name, &["--session-idle-timeout", "5s"]).await);
    }
    let proxy = Proxy::start(&all.iter().collect::<Vec<_>>()).await;
    let mut seed = 7;
    wave(&proxy.url, sessions, &mut seed).await;
    let left = drained(&redis, 30).await;
    assert!(left.is_empty(), "left after the first wave: {left:?}");
    let after_first: Vec<u64> = all.iter().map(|i| rss_kib(i.pid())).collect();
    for _ in 0..2 {
        wave(&proxy.url, sessions, &mut seed).await;
        let left = drained(&redis, 30).await;
        assert!(left.is_empty(), "left after a wave: {left:?}");
    }
    let after_last: Vec<u64> = all.iter().map(|i| rss_kib(i.pid())).collect();
    eprintln!(
        "soak: {sessions} sessions a wave; RSS KiB after the first wave {after_first:?}, after the third {after_last:?}"
    );
    for (first, last) in after_first.iter().zip(&after_last) {
        assert!(
            *last <= first + first / 5 + 2048,
            "RSS grew from {first} to {last} KiB"
        );
    }
    // Nothing but the instances' heartbeats, the bus and the shared key.
    let mut rest = redis.keys("mcp:*");
    rest.sort();
    assert!(
        rest.iter()
            .all(|k| k.starts_with("mcp:node:") || k == "mcp:bus" || k.starts_with("mcp:secret:")),
        "{rest:?}"
    );
}
