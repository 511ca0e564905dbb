//! The Streamable HTTP server and client over real sockets on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use oxmcp_client::{ClientConfig, ClientHandlers};
use oxmcp_http::{HttpClientConfig, HttpConfig, ResponseMode, ServeOptions, StreamableHttp};
use oxmcp_server::Server;
use oxmcp_store::{AppendEvent, EventLog, MemoryEventLog, StoreResult, StoredEvent, StreamInfo};
use oxmcp_types::JsonObject;
use reqwest::StatusCode;
use serde_json::{Value, json};

mod common;
use common::*;

#[tokio::test]
async fn status_codes() {
    let srv = start(
        HttpConfig::default().max_body(4096),
        ServeOptions::default(),
    )
    .await;
    let url = srv.url.clone();
    let raw = reqwest::Client::new();
    // No session on a non-initialize request: 400.
    let r = post(&url, None, r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32600);
    // Malformed JSON: 400 with a parse error.
    let r = post(&url, None, "{nope").send().await.unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert_eq!(r.json::<Value>().await.unwrap()["error"]["code"], -32700);
    // Unknown session: 404.
    let r = post(&url, Some("00ff"), INIT).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    // Content-Type: 415. Accept: 406. Body size: 413.
    let r = raw
        .post(&url)
        .header("content-type", "text/plain")
        .header("accept", "application/json, text/event-stream")
        .body(INIT)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let r = raw
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(INIT)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_ACCEPTABLE);
    let r = post(&url, None, format!(r#"{{"pad":"{}"}}"#, "x".repeat(8192)))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    // DNS rebinding: 403 for a foreign Host or Origin.
    let r = post(&url, None, INIT)
        .header("host", "evil.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let r = post(&url, None, INIT)
        .header("origin", "http://evil.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    // Unsupported protocol version header: 400.
    let s = Session::open(&url).await;
    let r = post(
        &url,
        Some(&s.id),
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
    )
    .header("mcp-protocol-version", "1999-01-01")
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    // Absent version header means 2025-03-26, which is accepted.
    let r = post(
        &url,
        Some(&s.id),
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
    )
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    // Batches only on a 2025-03-26 session.
    let r = s
        .post(r#"[{"jsonrpc":"2.0","id":3,"method":"ping"}]"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    // GET: Accept 406; a second standalone stream 409.
    let r = raw
        .get(&url)
        .header("mcp-session-id", &s.id)
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_ACCEPTABLE);
    let first = s.get().send().await.unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    assert_eq!(s.get().send().await.unwrap().status(), StatusCode::CONFLICT);
    drop(first);
    // Unsupported method: 405.
    let r = raw.put(&url).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
    // DELETE ends the session; it is then 404.
    let r = s.delete().send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = s
        .post(r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn batches_on_2025_03_26() {
    let srv = start(HttpConfig::default(), ServeOptions::default()).await;
    let r = post(&srv.url, None, INIT.replace(VERSION, "2025-03-26"))
        .send()
        .await
        .unwrap();
    let id = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    // `initialized` comes in the batch.
    let r = post(&srv.url, Some(&id), r#"[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]"#)
        .header("mcp-protocol-version", "2025-03-26")
        .send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body.as_array().unwrap().len(), 2, "{body}");
}

#[tokio::test]
async fn json_and_sse_responses_and_three_concurrent_posts() {
    let srv = start(HttpConfig::default(), ServeOptions::default()).await;
    let s = Session::open(&srv.url).await;
    // Auto mode: a plain answer is JSON...
    let r = s.post(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}"#).send().await.unwrap();
    assert_eq!(r.headers()["content-type"], "application/json");
    assert_eq!(
        r.json::<Value>().await.unwrap()["result"]["content"][0]["text"],
        "hi"
    );
    // ...and a handler that notifies gets a stream, with a priming event first.
    let r = s.post(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"chatty","arguments":{}}}"#).send().await.unwrap();
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let (ids, data) = sse(&r.text().await.unwrap());
    assert!(ids[0].ends_with("-0"), "priming event first: {ids:?}");
    assert_eq!(data[0]["method"], "notifications/message");
    assert_eq!(data[1]["id"], 2);
    // Three POSTs at once in one session all answer.
    let bodies: Vec<String> = (10..13)
        .map(|i| format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/list"}}"#))
        .collect();
    let answers = futures::future::join_all(bodies.iter().map(|b| s.post(b.clone()).send())).await;
    for (i, a) in answers.into_iter().enumerate() {
        let a = a.unwrap();
        assert_eq!(a.status(), StatusCode::OK);
        assert_eq!(a.json::<Value>().await.unwrap()["id"], 10 + i as i64);
    }
}

#[tokio::test]
async fn resumption_replays_the_right_stream_only() {
    let store = Arc::new(MemoryEventLog::new(1024));
    let config = HttpConfig::default().response_mode(ResponseMode::Sse);
    let http = StreamableHttp::with_event_log(server(), config, store.clone());
    let srv = serve(http, Default::default(), ServeOptions::default()).await;
    let url = srv.url.clone();
    let a = Session::open(&url).await;
    // A second stream in the same session, finished, whose events must not leak into the first.
    let other = a.post(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"chatty","arguments":{}}}"#).send().await.unwrap();
    let (other_ids, _) = sse(&other.text().await.unwrap());
    // The polling tool closes its stream after the priming event (which is not stored).
    let stored = store.event_count();
    let r = a.post(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"polling","arguments":{}}}"#).send().await.unwrap();
    let (ids, data) = sse(&r.text().await.unwrap());
    assert!(
        data.is_empty(),
        "the answer is not on the closed stream: {data:?}"
    );
    let last = ids.last().unwrap().clone();
    // Resumed once the answer is stored, so that it is replayed rather than sent live.
    assert!(
        until(10, || store.event_count() > stored).await,
        "the late answer was stored"
    );
    let r = a.get().header("last-event-id", &last).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let (_, data) = sse(&r.text().await.unwrap());
    assert_eq!(data.len(), 1, "{data:?}");
    assert_eq!(data[0]["id"], 7);
    assert_eq!(data[0]["result"]["content"][0]["text"], "late answer");
    // Resuming the other stream from its start replays only its own events.
    let first_of_other = other_ids[0].clone();
    let r = a
        .get()
        .header("last-event-id", &first_of_other)
        .send()
        .await
        .unwrap();
    let (_, data) = sse(&r.text().await.unwrap());
    assert!(data.iter().all(|m| m["id"] != 7), "{data:?}");
    assert_eq!(data.last().unwrap()["id"], 5);
    // Another session cannot resume it: it gets a new GET stream of its own, where nothing
    // of the other session's stream is replayed (a 404 would end the session for it).
    let b = Session::open(&url).await;
    let mut r = b.get().header("last-event-id", &last).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let first = tokio::time::timeout(Duration::from_secs(5), r.chunk())
        .await
        .expect("the priming event")
        .unwrap()
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&first);
    assert!(
        !text.contains("late answer") && !text.contains("jsonrpc"),
        "{text:?}"
    );
}

#[tokio::test]
async fn idle_sessions_expire() {
    let config = HttpConfig::default().session_idle_timeout(Duration::from_millis(200));
    let srv = start(config, ServeOptions::default()).await;
    let s = Session::open(&srv.url).await;
    assert_eq!(srv.http.session_count(), 1);
    assert!(
        until(10, || srv.http.session_count() == 0).await,
        "the idle session was not reaped"
    );
    let r = s
        .post(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn many_sessions_leave_nothing_behind() {
    let srv = server();
    let http = StreamableHttp::new(srv.clone(), HttpConfig::default());
    let running = serve(http, Default::default(), ServeOptions::default()).await;
    let (url, http) = (&running.url, &running.http);
    for _ in 0..5 {
        let sessions = futures::future::join_all((0..100).map(|_| Session::open(url))).await;
        assert_eq!(http.session_count(), 100);
        // Each runs an engine connection, or was parked once its handshake was handled.
        assert!(
            srv.session_count() + http.parked_count() >= 100,
            "an engine connection each, or parked"
        );
        futures::future::join_all(sessions.iter().map(|s| s.delete().send())).await;
        assert_eq!(http.session_count(), 0);
    }
    // Every engine connection behind those sessions has ended too.
    assert!(
        until(10, || srv.session_count() == 0).await,
        "engine connections left behind: {}",
        srv.session_count()
    );
}

#[tokio::test]
async fn client_over_http() {
    let srv = start(HttpConfig::default(), ServeOptions::default()).await;
    let (url, http) = (&srv.url, &srv.http);
    let (client, handle) = connect(url).await;
    let mut args = JsonObject::new();
    args.insert("message".into(), json!("over http"));
    let r = client.call_tool("echo", args.clone()).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("over http"));
    // SSE answers with notifications, and a stream closed early and resumed.
    assert_eq!(
        client
            .call_tool("chatty", JsonObject::new())
            .await
            .unwrap()
            .content[0]
            .as_text(),
        Some("done")
    );
    assert_eq!(
        client
            .call_tool("polling", JsonObject::new())
            .await
            .unwrap()
            .content[0]
            .as_text(),
        Some("late answer")
    );
    // The server forgets the session: the client starts a new one by itself.
    let old = handle.session_id().unwrap();
    delete(url, &old).send().await.unwrap();
    let r = client.call_tool("echo", args).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("over http"));
    assert_ne!(handle.session_id().unwrap(), old);
    assert_eq!(http.session_count(), 1);
    client.close().await;
    handle.close().await;
    assert_eq!(http.session_count(), 0, "close sends DELETE");
}

/// A log that counts what passes through it, around the in-memory one.
struct Counting {
    inner: MemoryEventLog,
    appends: AtomicUsize,
    replays: AtomicUsize,
}

type Step<'a, T> = futures::future::BoxFuture<'a, StoreResult<T>>;

impl EventLog for Counting {
    fn open_stream<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        info: &'a StreamInfo,
    ) -> Step<'a, ()> {
        self.inner.open_stream(session, stream, info)
    }
    fn append<'a>(&'a self, event: AppendEvent<'a>) -> Step<'a, ()> {
        self.appends.fetch_add(1, Ordering::Relaxed);
        self.inner.append(event)
    }
    fn replay<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        after: u64,
    ) -> Step<'a, Vec<StoredEvent>> {
        self.replays.fetch_add(1, Ordering::Relaxed);
        self.inner.replay(session, stream, after)
    }
    fn stream_info<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
    ) -> Step<'a, Option<StreamInfo>> {
        self.inner.stream_info(session, stream)
    }
    fn forget_stream<'a>(&'a self, session: &'a str, stream: &'a str) -> Step<'a, ()> {
        self.inner.forget_stream(session, stream)
    }
    fn forget_session<'a>(&'a self, session: &'a str) -> Step<'a, ()> {
        self.inner.forget_session(session)
    }
}

#[tokio::test]
async fn a_plugged_in_event_log_is_used() {
    let store = Arc::new(Counting {
        inner: MemoryEventLog::new(16),
        appends: Default::default(),
        replays: Default::default(),
    });
    let config = HttpConfig::default().response_mode(ResponseMode::Sse);
    let http = StreamableHttp::with_event_log(server(), config, store.clone());
    let srv = serve(http, Default::default(), ServeOptions::default()).await;
    let a = Session::open(&srv.url).await;
    let appended = store.appends.load(Ordering::Relaxed);
    let r = a.post(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"polling","arguments":{}}}"#).send().await.unwrap();
    let (ids, _) = sse(&r.text().await.unwrap());
    // Resumed once the late answer went into the store, so that it is replayed from there.
    assert!(
        until(10, || store.appends.load(Ordering::Relaxed) > appended).await,
        "the late answer was appended"
    );
    let r = a
        .get()
        .header("last-event-id", ids.last().unwrap())
        .send()
        .await
        .unwrap();
    let (_, data) = sse(&r.text().await.unwrap());
    assert_eq!(data[0]["id"], 7);
    assert!(store.appends.load(Ordering::Relaxed) >= 2);
    assert_eq!(store.replays.load(Ordering::Relaxed), 1);
}

#[tokio::test]
async fn modern_requests_are_stateless_and_headers_checked() {
    let srv = start(HttpConfig::default(), ServeOptions::default()).await;
    let (url, http) = (&srv.url, &srv.http);
    let echo = |message: &str| json!({"name":"echo","arguments":{"message":message}});
    let r = modern_post(url, 1, "tools/call", Some("echo"), echo("stateless"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(
        r.headers().get("mcp-session-id").is_none(),
        "no session in 2026-07-28"
    );
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["result"]["content"][0]["text"], "stateless");
    assert_eq!(body["result"]["resultType"], "complete");
    assert_eq!(http.session_count(), 0);
    // Without a log level in _meta the handler's log message is not sent: plain JSON.
    let chatty = json!({"name":"chatty","arguments":{}});
    let r = modern_post(url, 1, "tools/call", Some("chatty"), chatty.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["content-type"], "application/json");
    // With one, the request's notification comes first on an SSE stream, then the result.
    let mut params = chatty;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/logLevel": "info"
    });
    let r = modern_post(url, 2, "tools/call", Some("chatty"), params)
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let (_, data) = sse(&r.text().await.unwrap());
    assert_eq!(data[0]["method"], "notifications/message");
    assert_eq!(data[1]["result"]["content"][0]["text"], "done");
    // Base64 sentinel names are decoded before comparing.
    let r = modern_post(
        url,
        1,
        "tools/call",
        Some("=?base64?ZWNobw==?="),
        echo("b64"),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    // Header mismatches: 400 with -32020.
    for (method, name) in [
        ("tools/list", Some("x")),
        ("tools/call", Some("other")),
        ("tools/call", None),
    ] {
        let mut req = modern_post(url, 1, "tools/call", name, echo("x"));
        if method != "tools/call" {
            req = req.header("mcp-method", method);
        }
        let r = req.send().await.unwrap();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
        assert_eq!(r.json::<Value>().await.unwrap()["error"]["code"], -32020);
    }
    // Unknown method: 404 with -32601; unknown version: 400 with -32022.
    let r = modern_post(url, 1, "no/such", None, json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert_eq!(r.json::<Value>().await.unwrap()["error"]["code"], -32601);
    let r = modern_post(url, 1, "tools/list", None, json!({}))
        .header("mcp-protocol-version", "1900-01-01")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert_eq!(r.json::<Value>().await.unwrap()["error"]["code"], -32022);
    // server/discover, and no GET stream in the modern era.
    let r = modern_post(url, 1, "server/discover", None, json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.json::<Value>().await.unwrap()["result"]["supportedVersions"][0],
        "2026-07-28"
    );
    let r = reqwest::Client::new()
        .get(url)
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn legacy_and_modern_clients_on_one_server_at_once() {
    let srv = start(HttpConfig::default(), ServeOptions::default()).await;
    let url = &srv.url;
    let legacy = async {
        let (client, handle) = connect(url).await;
        let mut args = JsonObject::new();
        args.insert("message".into(), json!("legacy"));
        let r = client.call_tool("echo", args).await.unwrap();
        handle.close().await;
        r.content[0].as_text().unwrap().to_owned()
    };
    let modern = async {
        let params = json!({"name":"echo","arguments":{"message":"modern"}});
        let r = modern_post(url, 1, "tools/call", Some("echo"), params)
            .send()
            .await
            .unwrap();
        let v: Value = r.json().await.unwrap();
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(
        tokio::join!(legacy, modern),
        ("legacy".to_owned(), "modern".to_owned())
    );
}

#[tokio::test]
async fn auto_client_over_http_picks_the_era() {
    let auto = ClientConfig::default().era(oxmcp_client::EraChoice::Auto);
    // A dual-era server: the client speaks 2026-07-28, statelessly.
    let srv = start(HttpConfig::default(), ServeOptions::default()).await;
    let http = HttpClientConfig::default();
    let (client, _handle) =
        connect_with(&srv.url, http.clone(), ClientHandlers::new(), auto.clone()).await;
    let client = client.unwrap();
    assert!(client.is_modern());
    let mut args = JsonObject::new();
    args.insert("message".into(), json!("modern over http"));
    let r = client.call_tool("echo", args.clone()).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("modern over http"));
    assert_eq!(srv.http.session_count(), 0, "no session in 2026-07-28");
    assert_eq!(
        client
            .call_tool("polling", JsonObject::new())
            .await
            .unwrap()
            .content[0]
            .as_text(),
        Some("late answer")
    );
    // A legacy-only server: the probe fails, the client falls back to a session.
    let legacy_only = with_tools(
        Server::builder("old", "1").config(oxmcp_server::ServerConfig::default().modern(false)),
    )
    .build()
    .unwrap();
    let old = start_with(legacy_only, HttpConfig::default(), ServeOptions::default()).await;
    let (client, _handle) = connect_with(&old.url, http, ClientHandlers::new(), auto).await;
    let client = client.unwrap();
    assert!(!client.is_modern());
    assert_eq!(
        client.call_tool("echo", args).await.unwrap().content[0].as_text(),
        Some("modern over http")
    );
    assert_eq!(old.http.session_count(), 1);
}
