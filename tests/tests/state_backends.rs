//! One suite of handler-state behaviour, run against every backend: this process's memory
//! (`MemoryStateStore`), the in-process multi-instance store (`MemoryStore`), a real Redis
//! (`RedisStore`) and a real PostgreSQL (`PostgresStore`). Each backend is reached through two handles, as two instances
//! would reach it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use oxmcp_server::handler_state::{Expect, Written};
use oxmcp_server::{ScopedState, StateError, StateLimits, StateScope, StateStore};
use oxmcp_store::{MemoryStore, StoreConfig};
use oxmcp_store_postgres::PostgresStore;
use oxmcp_store_redis::RedisStore;
use oxmcp_tests::postgres::Postgres;
use oxmcp_tests::scale::Redis;
use serde_json::json;

fn limits() -> StateLimits {
    StateLimits::default()
        .max_keys(3)
        .max_scope_bytes(4096)
        .max_value_bytes(1024)
        .max_key_len(16)
}

fn scoped(store: &Arc<dyn StateStore>, scope: StateScope, limits: StateLimits) -> ScopedState {
    ScopedState::new(store.clone(), scope, Arc::new(limits))
}

fn session(name: &str) -> StateScope {
    StateScope::Session(name.to_owned())
}

fn user(name: &str) -> StateScope {
    StateScope::Principal(name.to_owned())
}

/// Every check of the suite, on two handles of one backend.
async fn suite(one: Arc<dyn StateStore>, two: Arc<dyn StateStore>) {
    basics(&one, &two).await;
    compare_and_swap(&one, &two).await;
    every_limit_is_refused(&one).await;
    concurrent_updates_lose_nothing(&one, &two).await;
    principals_expire(&one).await;
}

async fn basics(one: &Arc<dyn StateStore>, two: &Arc<dyn StateStore>) {
    let a = scoped(one, session("s1"), limits());
    let b = scoped(two, session("s1"), limits());
    assert_eq!(a.get::<String>("cwd").await.unwrap(), None);
    let v1 = a.set("cwd", "/docs").await.unwrap();
    assert_eq!(
        b.get::<String>("cwd").await.unwrap().as_deref(),
        Some("/docs")
    );
    let v2 = b.set("cwd", "/src").await.unwrap();
    assert!(v2 > v1);
    a.set("n", &json!({"x": [1, 2]})).await.unwrap();
    assert_eq!(a.keys().await.unwrap(), ["cwd", "n"]);
    // Scopes do not mix: the same name as a user, and another session.
    assert!(
        scoped(one, user("s1"), limits())
            .keys()
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        scoped(one, session("s2"), limits())
            .keys()
            .await
            .unwrap()
            .is_empty()
    );
    // A stored value read as the wrong type is an error, not a default.
    assert!(matches!(
        a.get::<u64>("cwd").await,
        Err(StateError::Decode(_))
    ));
    assert!(b.delete("cwd").await.unwrap());
    assert!(!a.delete("cwd").await.unwrap());
    // Written again after a delete: a version never seen before.
    let v3 = a.set("cwd", "/").await.unwrap();
    assert!(v3 > v2, "{v3} > {v2}");
    b.clear().await.unwrap();
    assert!(a.keys().await.unwrap().is_empty());
}

async fn compare_and_swap(one: &Arc<dyn StateStore>, two: &Arc<dyn StateStore>) {
    let a = scoped(one, session("cas"), limits());
    let b = scoped(two, session("cas"), limits());
    let Written::Done(v1) = a.set_if("k", &1, Expect::Absent).await.unwrap() else {
        panic!("an absent key is written");
    };
    assert_eq!(
        b.set_if("k", &2, Expect::Absent).await.unwrap(),
        Written::Conflict(Some(v1))
    );
    let Written::Done(v2) = b.set_if("k", &3, Expect::Version(v1)).await.unwrap() else {
        panic!("the version read is current");
    };
    assert_eq!(
        a.set_if("k", &4, Expect::Version(v1)).await.unwrap(),
        Written::Conflict(Some(v2)),
        "a stale version loses"
    );
    let read = a.get_versioned::<u64>("k").await.unwrap().unwrap();
    assert_eq!((read.value, read.version), (3, v2));
    a.delete("k").await.unwrap();
    assert_eq!(
        a.set_if("k", &5, Expect::Version(v2)).await.unwrap(),
        Written::Conflict(None)
    );
    a.clear().await.unwrap();
}

async fn every_limit_is_refused(one: &Arc<dyn StateStore>) {
    let s = scoped(one, user("limits"), limits());
    for bad in ["", "a\nb", "tab\tkey"] {
        assert!(
            matches!(s.set(bad, &1).await, Err(StateError::BadKey(_))),
            "{bad:?}"
        );
    }
    assert_eq!(
        s.set("k".repeat(17).as_str(), &1).await,
        Err(StateError::KeyTooLong { len: 17, limit: 16 })
    );
    let big = "x".repeat(1100);
    assert!(matches!(
        s.set("big", &big).await,
        Err(StateError::ValueTooLarge { limit: 1024, .. })
    ));
    for k in ["a", "b", "c"] {
        s.set(k, &1).await.unwrap();
    }
    assert_eq!(
        s.set("d", &1).await,
        Err(StateError::TooManyKeys { limit: 3 })
    );
    s.set("a", &2).await.expect("a key held already may change");
    // Three values of ~1000 bytes would be ~3 KiB; four 1,000-byte values are over 4 KiB.
    let kilo = "y".repeat(1000);
    for k in ["a", "b", "c"] {
        s.set(k, &kilo).await.unwrap();
    }
    s.delete("c").await.unwrap();
    let tight = limits().max_scope_bytes(2500);
    let t = scoped(one, user("limits"), tight);
    assert!(matches!(
        t.set("c", &kilo).await,
        Err(StateError::ScopeFull { limit: 2500, .. })
    ));
    assert_eq!(
        t.keys().await.unwrap(),
        ["a", "b"],
        "nothing written by a refusal"
    );
    t.delete("b").await.unwrap();
    t.set("c", &kilo).await.expect("room again after a delete");
    t.clear().await.unwrap();
}

async fn concurrent_updates_lose_nothing(one: &Arc<dyn StateStore>, two: &Arc<dyn StateStore>) {
    let updates = (0..64).map(|i| {
        let store = if i % 2 == 0 { one } else { two };
        let s = scoped(store, user("counter"), StateLimits::default());
        async move {
            s.update("n", |n: Option<u64>| Some(n.unwrap_or(0) + 1))
                .await
                .unwrap();
            s.update("seen", |v: Option<Vec<u32>>| {
                let mut v = v.unwrap_or_default();
                v.push(i);
                Some(v)
            })
            .await
            .unwrap();
        }
    });
    futures::future::join_all(updates).await;
    let s = scoped(one, user("counter"), StateLimits::default());
    assert_eq!(s.get::<u64>("n").await.unwrap(), Some(64));
    let mut seen = s.get::<Vec<u32>>("seen").await.unwrap().unwrap();
    seen.sort_unstable();
    assert_eq!(seen, (0..64).collect::<Vec<_>>());
    // An update returning None deletes.
    assert_eq!(s.update("n", |_: Option<u64>| None).await.unwrap(), None);
    assert_eq!(s.get::<u64>("n").await.unwrap(), None);
    s.clear().await.unwrap();
}

async fn principals_expire(one: &Arc<dyn StateStore>) {
    let short = StateLimits::default().principal_ttl(Duration::from_millis(300));
    let s = scoped(one, user("brief"), short);
    s.set("k", &1).await.unwrap();
    assert_eq!(s.get::<u64>("k").await.unwrap(), Some(1));
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(s.get::<u64>("k").await.unwrap(), None, "gone after its TTL");
    assert!(s.keys().await.unwrap().is_empty());
}

#[tokio::test]
async fn memory_state_store() {
    let store: Arc<dyn StateStore> = oxmcp_server::MemoryStateStore::new();
    suite(store.clone(), store).await;
}

#[tokio::test]
async fn memory_store_two_instances() {
    let one = MemoryStore::new("a", StoreConfig::default());
    let two = one.instance_handle("b");
    suite(Arc::new(one), Arc::new(two)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_two_instances() {
    let redis = Redis::start().await;
    let one = RedisStore::connect(&redis.url(), "a", StoreConfig::default())
        .await
        .unwrap();
    let two = RedisStore::connect(&redis.url(), "b", StoreConfig::default())
        .await
        .unwrap();
    suite(Arc::new(one), Arc::new(two)).await;
    // The suite clears every scope it wrote: nothing is left behind.
    let left = redis.keys("mcp:*state*");
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_two_instances() {
    let pg = Postgres::start().await;
    let one = PostgresStore::connect(&pg.url(), "a", StoreConfig::default())
        .await
        .unwrap();
    let two = PostgresStore::connect(&pg.url(), "b", StoreConfig::default())
        .await
        .unwrap();
    suite(Arc::new(one.clone()), Arc::new(two)).await;
    one.sweep().await.unwrap();
    assert_eq!(pg.count("state"), 0, "nothing is left behind");
    assert_eq!(pg.count("state_scopes"), 0);
}
