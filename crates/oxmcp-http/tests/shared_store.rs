//! Two endpoints in one process sharing an in-memory store behave as two instances of one
//! deployment: a session made on one is served by the other, and ends on both.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::*;
use oxmcp_http::{HttpConfig, ServeOptions, StreamableHttp};
use oxmcp_store::{MemoryStore, StoreConfig};
use reqwest::StatusCode;
use serde_json::json;
use tokio_util::sync::CancellationToken;

async fn instance(store: MemoryStore) -> Running {
    let shutdown = CancellationToken::new();
    let config = HttpConfig::default().shutdown(shutdown.clone());
    let http = StreamableHttp::new(server(), config).with_store(Arc::new(store));
    serve(http, shutdown, ServeOptions::default()).await
}

#[tokio::test]
async fn a_session_made_on_one_instance_is_served_by_the_other() {
    let store = MemoryStore::new("a", StoreConfig::default());
    let a = instance(store.clone()).await;
    let b = instance(store.instance_handle("b")).await;
    let sid = session(&a.url).await;
    assert_eq!(b.http.session_count(), 0);
    let r = post(&b.url, Some(&sid), call(1, "sleep", json!({"ms": 1})))
        .header("mcp-protocol-version", VERSION)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(answer(r).await["result"]["content"][0]["text"], "slept 1");
    assert_eq!(b.http.session_count(), 1, "b restored the session");
    // A session nobody made is unknown everywhere.
    let r = post(
        &b.url,
        Some("00112233445566778899aabbccddeeff"),
        call(2, "sleep", json!({"ms": 1})),
    )
    .header("mcp-protocol-version", VERSION)
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    // DELETE on b: gone from the store, and a drops it too.
    let r = delete(&b.url, &sid)
        .header("mcp-protocol-version", VERSION)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    // a hears of it on the bus, a moment later.
    let t0 = std::time::Instant::now();
    let status = loop {
        let r = post(&a.url, Some(&sid), call(3, "sleep", json!({"ms": 1})))
            .header("mcp-protocol-version", VERSION)
            .send()
            .await
            .unwrap();
        if r.status() != StatusCode::OK || t0.elapsed() > std::time::Duration::from_secs(5) {
            break r.status();
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        until(5, || a.http.session_count() == 0).await,
        "a let go of it"
    );
    assert_eq!(store.session_count(), 0);
}
