//! Server limits over real sockets: every limit answers with a clear error, never a crash,
//! and other sessions are not affected. Graceful shutdown drains in-flight requests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use oxmcp_http::{HttpConfig, ResponseMode, ServeOptions};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod common;
use common::*;

#[tokio::test]
async fn body_size_is_limited_while_streaming() {
    let s = start(
        HttpConfig::default().max_body(1024),
        ServeOptions::default(),
    )
    .await;
    let id = session(&s.url).await;
    // Declared too large: refused before the body is read.
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(5000)
    );
    let r = post(&s.url, Some(&id), big.clone()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let v: Value = r.json().await.unwrap();
    assert!(
        v["id"].is_null() && v["error"]["message"].is_string(),
        "{v}"
    );
    // Chunked (no Content-Length): counted as it streams.
    let chunks: Vec<Result<String, std::io::Error>> = big
        .as_bytes()
        .chunks(100)
        .map(|c| Ok(String::from_utf8(c.to_vec()).unwrap()))
        .collect();
    let body = reqwest::Body::wrap_stream(futures::stream::iter(chunks));
    let r = post(&s.url, Some(&id), body).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    ping_ok(&s.url, &id).await;
}

/// Serves with a stand-in for an authentication layer: the `x-test-user` header becomes the
/// request's verified [`Principal`].
async fn start_with_principals(config: HttpConfig) -> Running {
    start_server_with_principals(server(), config).await
}

async fn start_server_with_principals(server: oxmcp_server::Server, config: HttpConfig) -> Running {
    let shutdown = tokio_util::sync::CancellationToken::new();
    let http = oxmcp_http::StreamableHttp::new(server, config.shutdown(shutdown.clone()));
    let router = http.router().layer(axum::middleware::from_fn(
        |mut req: axum::extract::Request, next: axum::middleware::Next| async move {
            let user = req
                .headers()
                .get("x-test-user")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            if let Some(u) = user {
                req.extensions_mut().insert(oxmcp_http::Principal(u));
            }
            next.run(req).await
        },
    ));
    serve_routed(http, router, shutdown, ServeOptions::default()).await
}

async fn init_as(url: &str, user: &str) -> reqwest::Response {
    post(url, None, INIT)
        .header("x-test-user", user)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn sessions_per_principal() {
    let s = start_with_principals(HttpConfig::default().max_sessions_per_principal(2)).await;
    let a1 = init_as(&s.url, "alice").await;
    assert_eq!(a1.status(), StatusCode::OK);
    let a1 = a1.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    assert_eq!(init_as(&s.url, "alice").await.status(), StatusCode::OK);
    let over = init_as(&s.url, "alice").await;
    assert_eq!(over.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(over.headers().get("mcp-session-id").is_none());
    // A raw Authorization header is not an identity: it neither counts nor escapes the count.
    let r = post(&s.url, None, INIT)
        .header("x-test-user", "alice")
        .header("authorization", "Bearer someone-else")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    // Another user is not affected; neither are unauthenticated loopback clients.
    assert_eq!(init_as(&s.url, "bob").await.status(), StatusCode::OK);
    assert_eq!(init(&s.url, None).await.status(), StatusCode::OK);
    assert_eq!(
        s.http.session_count(),
        4,
        "a refused initialize allocates nothing"
    );
    // Only its principal may end a session; ending it frees a slot.
    let r = delete(&s.url, &a1).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let r = delete(&s.url, &a1)
        .header("x-test-user", "alice")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(init_as(&s.url, "alice").await.status(), StatusCode::OK);
}

#[tokio::test]
async fn sessions_and_new_session_rate_per_address() {
    // Loopback is exempt by default (a local server's clients share its address); this test
    // counts it like a remote address.
    let s = start(
        HttpConfig::default()
            .limit_loopback(true)
            .max_sessions_per_address(3)
            .client_session_rate(1000),
        ServeOptions::default(),
    )
    .await;
    for _ in 0..3 {
        assert_eq!(init(&s.url, None).await.status(), StatusCode::OK);
    }
    let over = init(&s.url, Some("Bearer whoever")).await;
    assert_eq!(
        over.status(),
        StatusCode::TOO_MANY_REQUESTS,
        "requests without a principal count by address, whatever their headers"
    );
    assert_eq!(s.http.session_count(), 3);

    let s = start(
        HttpConfig::default()
            .limit_loopback(true)
            .client_session_rate(2)
            .client_session_burst(2),
        ServeOptions::default(),
    )
    .await;
    // A burst of 10 at once: the bucket holds 2 (plus what refills meanwhile).
    let burst = futures::future::join_all((0..10).map(|_| init(&s.url, None))).await;
    let ok = burst
        .iter()
        .filter(|r| r.status() == StatusCode::OK)
        .count();
    let refused: Vec<_> = burst
        .iter()
        .filter(|r| r.status() == StatusCode::TOO_MANY_REQUESTS)
        .collect();
    assert!((2..=4).contains(&ok), "{ok} of 10 admitted");
    assert_eq!(ok + refused.len(), 10);
    assert!(
        refused
            .iter()
            .all(|r| r.headers().contains_key("retry-after")),
        "429 says when to come back"
    );
    assert_eq!(s.http.session_count(), ok, "refusals allocate nothing");
    // Emptied by the burst, the bucket refills (2 a second): a new session is admitted again.
    assert!(
        until_async(10, || async {
            init(&s.url, None).await.status() == StatusCode::OK
        })
        .await,
        "the bucket refills"
    );
}

/// `n` initializes at once to a server with these settings: every one gets a session.
async fn burst_is_served(config: HttpConfig, n: usize) {
    let s = start(config, ServeOptions::default()).await;
    let http = reqwest::Client::new();
    let burst =
        futures::future::join_all((0..n).map(|_| post_with(&http, &s.url, None, INIT).send()))
            .await;
    let refused: Vec<String> = burst
        .into_iter()
        .map(Result::unwrap)
        .filter(|r| r.status() != StatusCode::OK)
        .map(|r| r.status().to_string())
        .collect();
    assert!(
        refused.is_empty(),
        "{} of {n} refused: {:?}",
        refused.len(),
        refused.first()
    );
    assert_eq!(s.http.session_count(), n);
}

#[tokio::test]
async fn a_burst_of_2000_new_sessions_is_served_by_default() {
    burst_is_served(HttpConfig::default(), 2000).await;
}

#[tokio::test]
async fn a_burst_of_2000_from_one_counted_address_is_served_by_default() {
    // Loopback counted like any remote address: the defaults still admit the burst.
    let config = HttpConfig::default().limit_loopback(true);
    burst_is_served(config, 2000).await;
}

#[tokio::test]
async fn a_session_with_a_request_in_progress_is_not_idle() {
    let s = start(
        HttpConfig::default()
            .session_idle_timeout(Duration::from_millis(300))
            .response_mode(ResponseMode::Json),
        ServeOptions::default(),
    )
    .await;
    let id = session(&s.url).await;
    let started = Instant::now();
    let (url, sid) = (s.url.clone(), id.clone());
    let slow = tokio::spawn(async move {
        let r = post(&url, Some(&sid), call(1, "sleep", json!({"ms": 1500})))
            .send()
            .await
            .unwrap();
        answer(r).await
    });
    // The call sleeps 1.5 s from after `started`, so for the first 1.4 s it is surely in
    // progress: over four idle timeouts (and reaper rounds), the session must stay. (Not
    // checked after the answer: the idle clock runs from a request's arrival, so an answered
    // session may expire at the reaper's next round.)
    let ran = until(10, || {
        assert_eq!(
            s.http.session_count(),
            1,
            "the session expired while its request was in progress"
        );
        started.elapsed() >= Duration::from_millis(1400)
    })
    .await;
    assert!(ran);
    assert_eq!(
        slow.await.unwrap()["result"]["content"][0]["text"],
        "slept 1500"
    );
}

#[tokio::test]
async fn a_modern_request_counts_until_its_handler_finishes() {
    // `watched` sleeps 1500 ms, paying no attention to cancellation; `done` is set when its
    // handler ends: it returned, or (its client hung up, which cancels the request) it was
    // aborted after the engine's grace.
    struct SetOnDrop(Arc<AtomicBool>);
    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let server = with_tools(oxmcp_server::Server::builder("limits", "1"))
        .tool(
            "watched",
            "sleeps, then says so",
            move |_c: oxmcp_server::Ctx, a: Sleep| {
                let ended = SetOnDrop(d.clone());
                async move {
                    let _ended = ended;
                    tokio::time::sleep(Duration::from_millis(a.ms)).await;
                    Ok::<_, String>(format!("slept {}", a.ms))
                }
            },
        )
        .build()
        .unwrap();
    let config = HttpConfig::default().max_stateless_requests(1);
    let s = start_with(server, config, ServeOptions::default()).await;
    let modern = |id: u64| {
        let params = json!({"name":"watched","arguments":{"ms":1500}});
        modern_post(&s.url, id, "tools/call", Some("watched"), params).send()
    };
    // The client hangs up while its call runs.
    let hung_up = tokio::spawn(modern(1));
    assert!(until(10, || s.http.stateless_in_flight() == 1).await);
    hung_up.abort();
    let r = modern(2).await.unwrap();
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    // The slot stays taken until the handler has ended (read in this order: a slot given
    // back before `done` was set would be seen).
    let finished = until(10, || {
        let in_flight = s.http.stateless_in_flight();
        let finished = done.load(Ordering::SeqCst);
        assert!(
            in_flight == 1 || finished,
            "the slot came back while the handler ran"
        );
        finished
    })
    .await;
    assert!(finished, "the handler ended");
    assert!(until(10, || s.http.stateless_in_flight() == 0).await);
}

#[tokio::test]
async fn sessions_that_never_initialize_expire() {
    let s = start(
        HttpConfig::default().session_init_timeout(Duration::from_millis(300)),
        ServeOptions::default(),
    )
    .await;
    let stalled = init(&s.url, None).await;
    assert_eq!(stalled.status(), StatusCode::OK);
    let stalled = stalled.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let done = session(&s.url).await;
    assert!(
        until(10, || s.http.session_count() == 1).await,
        "a session was reaped"
    );
    let r = post(
        &s.url,
        Some(&stalled),
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
    )
    .send()
    .await
    .unwrap();
    assert_eq!(
        r.status(),
        StatusCode::NOT_FOUND,
        "the stalled session is gone"
    );
    ping_ok(&s.url, &done).await;
    assert_eq!(s.http.session_count(), 1);
}

#[tokio::test]
async fn requests_and_streams_per_session() {
    let s = start(
        HttpConfig::default()
            .max_requests_per_session(2)
            .max_streams_per_session(3)
            .response_mode(ResponseMode::Sse),
        ServeOptions::default(),
    )
    .await;
    let id = session(&s.url).await;
    let other = session(&s.url).await;
    let slow = |n: u64| {
        let url = s.url.clone();
        let id = id.clone();
        tokio::spawn(async move {
            answer(
                post(&url, Some(&id), call(n, "sleep", json!({"ms": 600})))
                    .send()
                    .await
                    .unwrap(),
            )
            .await
        })
    };
    let a = slow(1);
    let b = slow(2);
    assert!(
        until(10, || s.http.stream_count() == 2).await,
        "both slow calls are running"
    );
    // Third request while two run: busy at once, marked transient.
    let r = post(&s.url, Some(&id), call(3, "sleep", json!({"ms": 1})))
        .send()
        .await
        .unwrap();
    let busy = answer(r).await;
    assert_eq!(busy["id"], 3);
    assert_eq!(busy["error"]["code"], -32000, "{busy}");
    assert_eq!(busy["error"]["data"]["transient"], true);
    // The other session is not affected.
    ping_ok(&s.url, &other).await;
    // Streams: two POST streams are attached; a GET stream makes three; a fourth is refused.
    let get = get_stream(&s.url, &id).send().await.unwrap();
    assert_eq!(get.status(), StatusCode::OK);
    let r = post(
        &s.url,
        Some(&id),
        r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#,
    )
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        a.await.unwrap()["result"]["content"][0]["text"],
        "slept 600"
    );
    assert_eq!(
        b.await.unwrap()["result"]["content"][0]["text"],
        "slept 600"
    );
    drop(get);
    assert!(
        until(10, || s.http.stream_count() == 0).await,
        "the streams are let go"
    );
    ping_ok(&s.url, &id).await;
}

#[tokio::test]
async fn a_panicking_handler_fails_only_its_request() {
    let s = start(HttpConfig::default(), ServeOptions::default()).await;
    let id = session(&s.url).await;
    let r = post(&s.url, Some(&id), call(5, "boom", json!({})))
        .send()
        .await
        .unwrap();
    let v = answer(r).await;
    assert_eq!(v["id"], 5);
    assert_eq!(v["error"]["code"], -32603, "{v}");
    assert!(
        !v.to_string().contains("boom on purpose"),
        "panic text is not sent"
    );
    let r = post(&s.url, Some(&id), call(6, "sleep", json!({"ms": 1})))
        .send()
        .await
        .unwrap();
    assert_eq!(answer(r).await["result"]["content"][0]["text"], "slept 1");
}

#[tokio::test]
async fn slowloris_connections_are_closed() {
    let s = start(
        HttpConfig::default().body_read_timeout(Duration::from_millis(300)),
        ServeOptions::default()
            .header_read_timeout(Duration::from_millis(300))
            .idle_timeout(Duration::from_millis(400)),
    )
    .await;
    let closed_within = |mut tcp: tokio::net::TcpStream| async move {
        let start = Instant::now();
        let mut buf = Vec::new();
        let r = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut buf)).await;
        assert!(r.is_ok(), "the server closed the connection");
        (start.elapsed(), String::from_utf8_lossy(&buf).into_owned())
    };
    // Idle: nothing sent at all.
    let tcp = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    let (t, _) = closed_within(tcp).await;
    assert!(
        t < Duration::from_secs(2),
        "idle connection closed after {t:?}"
    );
    // Headers dribbled and never finished.
    let mut tcp = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    tcp.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .await
        .unwrap();
    let (t, _) = closed_within(tcp).await;
    assert!(
        t < Duration::from_secs(2),
        "slow headers closed after {t:?}"
    );
    // Body dribbled: 408.
    let mut tcp = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    tcp.write_all(
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"",
    )
    .await
    .unwrap();
    let (_, text) = closed_within(tcp).await;
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    // The server still serves, also a request that takes longer than the idle timeout.
    let id = session(&s.url).await;
    ping_ok(&s.url, &id).await;
    let r = post(&s.url, Some(&id), call(8, "sleep", json!({"ms": 900})))
        .send()
        .await
        .unwrap();
    assert_eq!(answer(r).await["result"]["content"][0]["text"], "slept 900");
    // A keep-alive connection waiting for its next request is closed after the idle timeout.
    let mut tcp = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: {id}\r\nContent-Length: {}\r\n\r\n{ping}",
        ping.len()
    );
    tcp.write_all(req.as_bytes()).await.unwrap();
    let (t, text) = closed_within(tcp).await;
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        t < Duration::from_secs(2),
        "idle keep-alive closed after {t:?}"
    );
}

#[tokio::test]
async fn graceful_shutdown_drains_in_flight_requests() {
    let s = start(
        HttpConfig::default().response_mode(ResponseMode::Json),
        ServeOptions::default().drain_deadline(Duration::from_secs(5)),
    )
    .await;
    let id = session(&s.url).await;
    let get = get_stream(&s.url, &id).send().await.unwrap();
    assert_eq!(get.status(), StatusCode::OK);
    let before = s.http.tracked_streams();
    let url = s.url.clone();
    let sid = id.clone();
    let slow = tokio::spawn(async move {
        answer(
            post(&url, Some(&sid), call(1, "sleep", json!({"ms": 700})))
                .send()
                .await
                .unwrap(),
        )
        .await
    });
    assert!(
        until(10, || s.http.tracked_streams() != before).await,
        "the slow call is in flight"
    );
    let start = Instant::now();
    s.shutdown.cancel();
    // The standalone stream ends rather than holding the drain open.
    let body = tokio::time::timeout(Duration::from_secs(3), get.text()).await;
    assert!(body.is_ok(), "the GET stream ended");
    // The in-flight request is answered.
    let v = slow.await.unwrap();
    assert_eq!(v["result"]["content"][0]["text"], "slept 700");
    // The server stopped: new connections are refused or answered 503.
    tokio::time::timeout(Duration::from_secs(5), s.done)
        .await
        .expect("serve returned within the deadline")
        .unwrap()
        .unwrap();
    assert!(start.elapsed() < Duration::from_secs(4));
    let r = post(
        &s.url,
        Some(&id),
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
    )
    .send()
    .await;
    assert!(
        r.is_err() || r.unwrap().status() == StatusCode::SERVICE_UNAVAILABLE,
        "no new work after shutdown"
    );
}

#[tokio::test]
async fn request_state_belongs_to_its_principal() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct NoArgs {}
    let asking = oxmcp_server::Server::builder("asking", "1")
        .tool(
            "ask",
            "asks a name",
            |ctx: oxmcp_server::Ctx, _a: NoArgs| async move {
                let who = ctx.principal().unwrap_or("nobody").to_owned();
                let params: oxmcp_types::ElicitParams = serde_json::from_value(json!({
                    "message": "name?",
                    "requestedSchema": {"type":"object","properties":{"name":{"type":"string"}}}
                }))
                .unwrap();
                let r = ctx.elicit(&params).await.map_err(|e| e.to_string())?;
                let name = r
                    .content
                    .and_then(|c| c.get("name").and_then(|n| n.as_str().map(str::to_owned)))
                    .unwrap_or_default();
                Ok::<_, String>(format!("{who} named {name}"))
            },
        )
        .build()
        .unwrap();
    let s = start_server_with_principals(asking, HttpConfig::default()).await;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}
    });
    let call = |user: &str, extra: Value| {
        let mut params = json!({"_meta": meta, "name": "ask", "arguments": {}});
        if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
            p.extend(e.clone());
        }
        modern_post(&s.url, 1, "tools/call", Some("ask"), params)
            .header("x-test-user", user)
            .send()
    };
    let first = answer(call("alice", json!({})).await.unwrap()).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].clone();
    let key = first["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let retry = json!({
        "requestState": state,
        "inputResponses": { key: {"action": "accept", "content": {"name": "Ada"}} }
    });
    let stolen = answer(call("bob", retry.clone()).await.unwrap()).await;
    assert_eq!(stolen["error"]["code"], -32602, "{stolen}");
    let own = answer(call("alice", retry).await.unwrap()).await;
    assert_eq!(
        own["result"]["content"][0]["text"], "alice named Ada",
        "{own}"
    );
}
