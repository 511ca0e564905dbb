//! The store's own limits, against a real Redis (`redis-server` from PATH on a free
//! loopback port): the stored subscriptions of a session, and the size of bus events.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use oxmcp_store::{BusEvent, SessionRecord, StateChange, Store, StoreConfig, StoreError};
use oxmcp_store_redis::RedisStore;

struct Redis {
    child: std::process::Child,
    port: u16,
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Redis {
    fn start() -> Redis {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = std::process::Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server (Debian's redis-server package) runs");
        Redis { child, port }
    }

    fn cli(&self, args: &[&str]) -> String {
        let out = std::process::Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    async fn store(&self, name: &str, config: StoreConfig) -> RedisStore {
        let url = format!("redis://127.0.0.1:{}", self.port);
        for _ in 0..200 {
            if let Ok(s) = RedisStore::connect(&url, name, config.clone()).await {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("Redis did not answer");
    }
}

fn record() -> SessionRecord {
    SessionRecord {
        version: "2025-11-25".into(),
        owner: None,
        init: "{}".into(),
        log_level: None,
        subscriptions: Vec::new(),
        created_ms: 0,
    }
}

/// Two instances adding subscriptions at once never store more than the limit; one held
/// already is not refused again, and a refusal is not transient.
#[tokio::test]
async fn stored_subscriptions_are_capped() {
    let redis = Redis::start();
    let config = StoreConfig::default().max_subscriptions(10);
    let a = redis.store("a", config.clone()).await;
    let b = redis.store("b", config).await;
    a.create_session("s", &record()).await.unwrap();
    let add = |store: RedisStore, from: usize| async move {
        let mut refused = 0;
        for i in from..from + 10 {
            match store
                .update_session("s", &StateChange::Subscribe(format!("x://{i}")))
                .await
            {
                Ok(()) => {}
                Err(e @ StoreError::Refused(_)) => {
                    assert!(!e.is_transient());
                    refused += 1;
                }
                Err(e) => panic!("{e}"),
            }
        }
        refused
    };
    let (ra, rb) = tokio::join!(add(a.clone(), 0), add(b.clone(), 10));
    assert_eq!(ra + rb, 10, "ten of twenty refused");
    let held = a.load_session("s").await.unwrap().unwrap().subscriptions;
    assert_eq!(held.len(), 10);
    // Held already: accepted again at the limit.
    a.update_session("s", &StateChange::Subscribe(held[0].clone()))
        .await
        .unwrap();
}

/// A bus event over `bus_inline` bytes is kept beside the bus and read by the others; one
/// over `max_bus_event` is refused; the bus stream itself holds small entries only.
#[tokio::test]
async fn large_bus_events_travel_beside_the_bus() {
    let redis = Redis::start();
    let config = StoreConfig::default()
        .bus_inline(1024)
        .max_bus_event(64 * 1024)
        .parcel_ttl(Duration::from_secs(2));
    let a = redis.store("a", config.clone()).await;
    let b = redis.store("b", config).await;
    let mut heard = b.bus();
    let deliver = |text: String| BusEvent::Deliver {
        session: "s".into(),
        to: Some("b".into()),
        from: "a".into(),
        message: text,
    };
    let big = deliver("y".repeat(32 * 1024));
    a.publish(&big).await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(10), heard.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got, big);
    let entries = redis.cli(&["XRANGE", "mcp:bus", "-", "+"]);
    assert!(
        entries.len() < 1024,
        "the bus holds the parcel's name only: {entries}"
    );
    match a.publish(&deliver("z".repeat(65 * 1024))).await {
        Err(e @ StoreError::Refused(_)) => assert!(!e.is_transient()),
        other => panic!("an event over the limit is refused, got {other:?}"),
    }
    // The parcel expires by itself.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(redis.cli(&["KEYS", "mcp:parcel:*"]), "");
}
