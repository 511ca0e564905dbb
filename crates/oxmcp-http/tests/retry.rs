//! The client's retry policy against a server that fails on purpose (503 with Retry-After,
//! 502), over real sockets.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::http::{Request, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use oxmcp_client::{
    CallError, Client, ClientConfig, ClientHandlers, RequestOptions, RetryChoice, RetryPolicy,
};
use oxmcp_http::{HttpClientConfig, HttpConfig, StreamableHttp};
use oxmcp_types::JsonObject;

mod common;
use common::{TOOLS, connect_with, listen, server, until};

/// Arguments for `echo`, a tool without annotations (not safe to repeat by default).
fn echo_ok() -> JsonObject {
    serde_json::from_value(serde_json::json!({"message": "ok"})).unwrap()
}

/// Fails the next `armed` POSTs: the first with 503 + Retry-After: 1, the others with 502.
#[derive(Default)]
struct Faults {
    armed: AtomicUsize,
    failed: AtomicUsize,
    posts: AtomicUsize,
}

async fn inject(faults: Arc<Faults>, req: Request<axum::body::Body>, next: Next) -> Response {
    if req.method() == axum::http::Method::POST {
        faults.posts.fetch_add(1, Ordering::SeqCst);
        let armed = faults.armed.load(Ordering::SeqCst);
        if armed > 0 {
            faults.armed.store(armed - 1, Ordering::SeqCst);
            let n = faults.failed.fetch_add(1, Ordering::SeqCst);
            return if n == 0 {
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    [("retry-after", "1")],
                    "busy",
                )
                    .into_response()
            } else {
                (StatusCode::BAD_GATEWAY, "bad gateway").into_response()
            };
        }
    }
    next.run(req).await
}

async fn setup() -> (Client, Arc<Faults>) {
    let faults = Arc::new(Faults::default());
    let f = faults.clone();
    let app = StreamableHttp::new(server(), HttpConfig::default())
        .router()
        .layer(axum::middleware::from_fn(move |req, next| {
            inject(f.clone(), req, next)
        }));
    let url = format!("{}/mcp", listen(app).await);
    let config = ClientConfig::default().retry(
        RetryPolicy::default()
            .max_attempts(4)
            .base_delay(Duration::from_millis(20)),
    );
    let (client, _handle) = connect_with(
        &url,
        HttpClientConfig::default(),
        ClientHandlers::new(),
        config,
    )
    .await;
    let client = client.unwrap();
    // `notifications/initialized` is POSTed in the background: arm faults only after it.
    until(10, || faults.posts.load(Ordering::SeqCst) >= 2).await;
    assert_eq!(faults.posts.load(Ordering::SeqCst), 2);
    (client, faults)
}

#[tokio::test]
async fn safe_calls_are_retried_with_backoff_and_retry_after() {
    let (client, faults) = setup().await;
    faults.armed.store(3, Ordering::SeqCst);
    let before = faults.posts.load(Ordering::SeqCst);
    let start = Instant::now();
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools.len(), TOOLS.len());
    assert_eq!(
        faults.posts.load(Ordering::SeqCst) - before,
        4,
        "one call, three failures, one success"
    );
    assert!(
        start.elapsed() >= Duration::from_millis(900),
        "Retry-After: 1 was honoured"
    );
}

#[tokio::test]
async fn unsafe_calls_are_not_retried_unless_asked() {
    let (client, faults) = setup().await;
    faults.armed.store(1, Ordering::SeqCst);
    let before = faults.posts.load(Ordering::SeqCst);
    let e = client.call_tool("echo", echo_ok()).await.unwrap_err();
    assert_eq!(
        faults.posts.load(Ordering::SeqCst) - before,
        1,
        "tools/call of an unannotated tool is not repeated"
    );
    assert_eq!(e.transport().and_then(|t| t.status()), Some(503), "{e:?}");
    // The caller can opt in.
    faults.armed.store(1, Ordering::SeqCst);
    faults.failed.store(1, Ordering::SeqCst); // a 502 this time: no Retry-After
    let r = client
        .call_tool_retry(
            "echo",
            echo_ok(),
            &RequestOptions::default(),
            RetryChoice::Always,
        )
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("ok"));
    // Never retried: a request the server calls invalid.
    let e = client
        .peer()
        .request_raw(
            "tools/call",
            serde_json::json!({"nam": 1}),
            &RequestOptions::default(),
        )
        .await;
    assert!(matches!(e, Err(CallError::Rpc(_))));
}
