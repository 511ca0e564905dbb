//! Hostile and busy clients over real sockets (issue 11): typed checks instead of string
//! sniffing, parallel calls in one session, cancelled requests and reopened streams that must
//! not leak.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use oxmcp_http::{HttpConfig, ResponseMode, ServeOptions, StreamableHttp};
use oxmcp_server::Server;
use oxmcp_store::{AppendEvent, EventLog, MemoryEventLog};
use reqwest::StatusCode;
use serde_json::{Value, json};

mod common;
use common::*;

#[tokio::test]
async fn a_server_named_error_keeps_its_sessions() {
    let server = with_tools(Server::builder("error", "1")).build().unwrap();
    let s = start_with(server, HttpConfig::default(), ServeOptions::default()).await;
    let r = init(&s.url, None).await;
    assert_eq!(r.status(), StatusCode::OK);
    let id = r
        .headers()
        .get("mcp-session-id")
        .expect("a successful initialize gets a session, whatever the server's name")
        .to_str()
        .unwrap()
        .to_owned();
    let init_result = answer(r).await;
    assert_eq!(init_result["result"]["serverInfo"]["name"], "error");
    ping_ok(&s.url, &id).await;
    assert_eq!(s.http.session_count(), 1);
}

#[tokio::test]
async fn a_legacy_request_mentioning_the_modern_key_stays_legacy() {
    let s = start(HttpConfig::default(), ServeOptions::default()).await;
    let id = session(&s.url).await;
    let text = "io.modelcontextprotocol/protocolVersion";
    let r = post(
        &s.url,
        Some(&id),
        call(1, "echo", json!({ "message": text })),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let v = answer(r).await;
    assert_eq!(v["result"]["content"][0]["text"], text, "{v}");
}

/// `n` connections calling `sleep` at once in one session: every call gets its result.
async fn parallel_calls_in_one_session(mode: ResponseMode, n: u64) {
    let s = start(
        HttpConfig::default().response_mode(mode),
        ServeOptions::default(),
    )
    .await;
    let id = session(&s.url).await;
    let calls = (1..=n).map(|i| {
        let (url, id) = (s.url.clone(), id.clone());
        async move {
            let r = post(&url, Some(&id), call(i, "sleep", json!({"ms": 200})))
                .send()
                .await
                .unwrap();
            (r.status(), answer(r).await)
        }
    });
    let answers = futures::future::join_all(calls).await;
    let bad: Vec<String> = answers
        .iter()
        .filter(|(status, v)| {
            *status != StatusCode::OK || v["result"]["content"][0]["text"] != "slept 200"
        })
        .map(|(status, v)| format!("{status} {v}"))
        .collect();
    assert!(
        bad.is_empty(),
        "{} of {n} calls refused, first: {:?}",
        bad.len(),
        bad.first()
    );
    for (i, (_, v)) in answers.iter().enumerate() {
        assert_eq!(v["id"], i as u64 + 1);
    }
}

#[tokio::test]
async fn parallel_calls_in_one_session_are_all_answered_json() {
    parallel_calls_in_one_session(ResponseMode::Auto, 256).await;
}

#[tokio::test]
async fn parallel_calls_in_one_session_are_all_answered_sse() {
    parallel_calls_in_one_session(ResponseMode::Sse, 256).await;
}

/// Sends `notifications/cancelled` for request `id` of the session.
async fn cancel(http: &reqwest::Client, url: &str, session: &str, id: u64) {
    let body = json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":id,"reason":"test"}});
    let r = post_with(http, url, Some(session), body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::ACCEPTED);
}

/// The POST of a cancelled request ends (headers and body), without a result.
async fn ends_without_a_result(
    pending: tokio::task::JoinHandle<reqwest::Result<reqwest::Response>>,
) {
    let r = tokio::time::timeout(Duration::from_secs(10), pending)
        .await
        .expect("the POST of a cancelled request ends")
        .unwrap()
        .unwrap();
    let body = tokio::time::timeout(Duration::from_secs(10), r.text())
        .await
        .expect("its body ends too")
        .unwrap();
    assert!(!body.contains("slept"), "{body}");
}

#[tokio::test]
async fn cancelled_requests_leave_nothing_behind() {
    // MCP_TEST_CANCEL_ROUNDS=10000 for the long run.
    let rounds: u64 = std::env::var("MCP_TEST_CANCEL_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(2000);
    let http = reqwest::Client::new();
    for mode in [ResponseMode::Json, ResponseMode::Sse] {
        let store = Arc::new(MemoryEventLog::new(1024));
        let endpoint = StreamableHttp::with_event_log(
            server(),
            HttpConfig::default().response_mode(mode),
            store.clone(),
        );
        let s = serve(endpoint, Default::default(), ServeOptions::default()).await;
        let id = session(&s.url).await;
        let mut after_warmup = None;
        // In SSE mode each request leaves an event in the store before it is cancelled.
        let tool = if mode == ResponseMode::Sse {
            "chatty_sleep"
        } else {
            "sleep"
        };
        for round in 1..=rounds {
            let before = s.http.tracked_streams();
            let pending = post_with(
                &http,
                &s.url,
                Some(&id),
                call(round, tool, json!({"ms": 60_000})),
            )
            .send();
            let pending = tokio::spawn(pending);
            // The request is in flight once the server has seen it.
            assert!(
                until(10, || s.http.tracked_streams() != before).await,
                "round {round}: the server never saw the request"
            );
            cancel(&http, &s.url, &id, round).await;
            ends_without_a_result(pending).await;
            if round == 100 {
                after_warmup = Some((s.http.tracked_streams(), store.event_count()));
            }
        }
        let (streams, events) = after_warmup.unwrap();
        assert_eq!(
            (s.http.tracked_streams(), store.event_count()),
            (streams, events),
            "{mode:?}: streams and stored events stay flat"
        );
        assert!(streams <= 65, "{streams} streams kept");
        if mode == ResponseMode::Sse {
            assert!(events > 0, "the test stores events");
        }
        ping_ok(&s.url, &id).await;
    }
}

#[tokio::test]
async fn a_reopened_get_stream_frees_the_old_streams_events() {
    let store = Arc::new(MemoryEventLog::new(1024));
    let server = server();
    let http = StreamableHttp::with_event_log(server.clone(), HttpConfig::default(), store.clone());
    let s = serve(http, Default::default(), ServeOptions::default()).await;
    let id = session(&s.url).await;
    let mut baseline = None;
    for round in 0..20 {
        let mut stream = get_stream(&s.url, &id).send().await.unwrap();
        assert_eq!(stream.status(), StatusCode::OK);
        server.notify_resource_list_changed();
        server.notify_resource_list_changed();
        // Both were stored and sent on this stream: the client has them.
        let mut body = String::new();
        let both = tokio::time::timeout(Duration::from_secs(10), async {
            while body.matches("notifications/resources/list_changed").count() < 2 {
                let chunk = stream
                    .chunk()
                    .await
                    .unwrap()
                    .expect("the stream stays open");
                body.push_str(&String::from_utf8_lossy(&chunk));
            }
        })
        .await;
        assert!(
            both.is_ok(),
            "round {round}: the notifications arrived: {body:?}"
        );
        drop(stream);
        assert!(
            until(10, || s.http.stream_count() == 0).await,
            "round {round}: the server noticed the dropped stream"
        );
        if round == 2 {
            baseline = Some(store.event_count());
        }
    }
    assert_eq!(
        Some(store.event_count()),
        baseline,
        "abandoned GET streams' events are dropped"
    );
}

#[tokio::test]
async fn stored_events_have_a_byte_cap() {
    fn event<'a>(session: &'a str, stream: &'a str, seq: u64, data: &'a str) -> AppendEvent<'a> {
        AppendEvent {
            session,
            stream,
            seq,
            data,
            last: false,
            info: None,
        }
    }
    let store = MemoryEventLog::new(1024).with_byte_limits(10_000, 1_000_000);
    let x = "x".repeat(1000);
    for i in 1..=100u64 {
        store.append(event("a", "s1", i, &x)).await.unwrap();
    }
    assert!(store.byte_count() <= 10_000, "{}", store.byte_count());
    let kept = store.replay("a", "s1", 0).await.unwrap();
    assert!(!kept.is_empty() && kept.len() <= 10);
    assert_eq!(kept.last().unwrap().seq, 100, "the newest events are kept");
    // Over the total cap, other sessions evict nothing of this one's but stop storing.
    let small_total = MemoryEventLog::new(1024).with_byte_limits(1_000_000, 5_000);
    let y = "y".repeat(1000);
    for i in 1..=10u64 {
        let session = format!("s{i}");
        small_total
            .append(event(&session, "t", 1, &y))
            .await
            .unwrap();
    }
    assert!(small_total.byte_count() <= 5_000);
    let small_total = &small_total;
    let events_of =
        |session: &'static str| async move { small_total.replay(session, "t", 0).await.unwrap() };
    assert_eq!(
        events_of("s1").await.len(),
        1,
        "the first sessions keep theirs"
    );
    assert!(
        events_of("s10").await.is_empty(),
        "the last ones store nothing"
    );
}

#[tokio::test]
async fn host_and_origin_are_checked_before_the_body_is_read() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = start(HttpConfig::default(), ServeOptions::default()).await;
    let mut tcp = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    // Headers announce a body that never comes.
    tcp.write_all(
        b"POST /mcp HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n",
    )
    .await
    .unwrap();
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf))
        .await
        .expect("answered without waiting for the body")
        .unwrap();
    let text = String::from_utf8_lossy(&buf[..n]);
    assert!(text.starts_with("HTTP/1.1 403"), "{text}");
}

#[tokio::test]
async fn modern_requests_and_listen_streams_are_capped() {
    let s = start(
        HttpConfig::default()
            .max_stateless_requests(3)
            .max_listen_streams(1),
        ServeOptions::default(),
    )
    .await;
    let modern = |id: u64, method: &str, params: Value| {
        let name = params["name"].as_str().map(str::to_owned);
        modern_post(&s.url, id, method, name.as_deref(), params).send()
    };
    let listen = modern(
        1,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    )
    .await
    .unwrap();
    assert_eq!(listen.status(), StatusCode::OK);
    let second = modern(
        2,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    )
    .await
    .unwrap();
    assert_eq!(second.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(second.headers().contains_key("retry-after"));
    let v: Value = second.json().await.unwrap();
    assert_eq!(
        (v["id"].clone(), v["error"]["code"].clone()),
        (json!(2), json!(-32000))
    );
    // Two slow calls fill the remaining slots; a fourth request is refused, not queued.
    let slow: Vec<_> = (3..5)
        .map(|i| {
            tokio::spawn(modern(
                i,
                "tools/call",
                json!({"name":"sleep","arguments":{"ms":800}}),
            ))
        })
        .collect();
    assert!(until(10, || s.http.stateless_in_flight() == 3).await);
    let over = modern(9, "tools/list", json!({})).await.unwrap();
    assert_eq!(over.status(), StatusCode::SERVICE_UNAVAILABLE);
    for h in slow {
        assert_eq!(h.await.unwrap().unwrap().status(), StatusCode::OK);
    }
    drop(listen);
    assert!(
        until(10, || s.http.stateless_in_flight() == 0).await,
        "permits come back"
    );
    let again = modern(10, "tools/list", json!({})).await.unwrap();
    assert_eq!(again.status(), StatusCode::OK);
}

#[tokio::test]
async fn connections_are_capped() {
    let s = start(
        HttpConfig::default(),
        ServeOptions::default().max_connections(2),
    )
    .await;
    use tokio::io::AsyncReadExt;
    async fn ping(tcp: &mut tokio::net::TcpStream, wait: Duration) -> Option<String> {
        use tokio::io::AsyncWriteExt;
        let req = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{INIT}",
            INIT.len()
        );
        tcp.write_all(req.as_bytes()).await.unwrap();
        let mut buf = vec![0u8; 8192];
        tokio::time::timeout(wait, tcp.read(&mut buf))
            .await
            .ok()
            .map(|n| String::from_utf8_lossy(&buf[..n.unwrap()]).into_owned())
    }
    let mut a = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    let mut b = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    let served = Duration::from_secs(10);
    assert!(
        ping(&mut a, served)
            .await
            .unwrap()
            .starts_with("HTTP/1.1 200")
    );
    assert!(
        ping(&mut b, served)
            .await
            .unwrap()
            .starts_with("HTTP/1.1 200")
    );
    let mut c = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    assert_eq!(
        ping(&mut c, Duration::from_millis(700)).await,
        None,
        "a third connection waits"
    );
    drop(a);
    let mut buf = vec![0u8; 8192];
    let n = tokio::time::timeout(Duration::from_secs(5), c.read(&mut buf))
        .await
        .expect("served once a slot is free")
        .unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
}

/// Reads HTTP/2 frames until both the server's SETTINGS and its ACK of ours have come.
async fn settings_exchanged(tcp: &mut tokio::net::TcpStream) {
    use tokio::io::AsyncReadExt;
    const SETTINGS: u8 = 0x4;
    let (mut settings, mut ack) = (false, false);
    let mut bytes = Vec::new();
    let mut buf = vec![0u8; 4096];
    while !(settings && ack) {
        let n = tcp.read(&mut buf).await.unwrap();
        assert!(n > 0, "the connection closed during the SETTINGS exchange");
        bytes.extend_from_slice(&buf[..n]);
        // Whole frames: a 9-byte header (24-bit length, type, flags, stream), then the payload.
        while bytes.len() >= 9 {
            let len =
                usize::from(bytes[0]) << 16 | usize::from(bytes[1]) << 8 | usize::from(bytes[2]);
            if bytes.len() < 9 + len {
                break;
            }
            if bytes[3] == SETTINGS {
                if bytes[4] & 0x1 == 0 {
                    settings = true;
                } else {
                    ack = true;
                }
            }
            bytes.drain(..9 + len);
        }
    }
}

#[tokio::test]
async fn idle_http2_connections_are_closed() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = start(
        HttpConfig::default(),
        ServeOptions::default().idle_timeout(Duration::from_millis(400)),
    )
    .await;
    let mut tcp = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    // Preface and an empty SETTINGS frame.
    tcp.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .await
        .unwrap();
    // The server's SETTINGS, and its ACK of ours: it has nothing more to write.
    tokio::time::timeout(Duration::from_secs(10), settings_exchanged(&mut tcp))
        .await
        .expect("the server's SETTINGS and its ACK of ours");
    let mut buf = vec![0u8; 4096];
    // ACK the server's SETTINGS: the last bytes moved are a read on the server's side.
    tcp.write_all(b"\x00\x00\x00\x04\x01\x00\x00\x00\x00")
        .await
        .unwrap();
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {} // GOAWAY or anything else before the close
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "an idle HTTP/2 connection is closed");
}

#[tokio::test]
async fn a_legacy_client_that_never_reads_blocks_nobody() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let server = server();
    let config = HttpConfig::default().stall_timeout(Duration::from_secs(1));
    let legacy = oxmcp_http::LegacySse::new(server.clone(), config.clone());
    let http = StreamableHttp::new(server.clone(), config);
    let app = http.router().merge(legacy.router());
    let s = serve_routed(http, app, Default::default(), ServeOptions::default()).await;
    let addr = s.addr;
    // The stuck client: a small receive buffer, reads the endpoint event, then nothing.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let stuck = socket.connect(addr).await.unwrap();
    let (rd, mut wr) = stuck.into_split();
    wr.write_all(b"GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
        .await
        .unwrap();
    let mut rd = BufReader::new(rd);
    let endpoint = loop {
        let mut line = String::new();
        rd.read_line(&mut line).await.unwrap();
        if let Some(e) = line.strip_prefix("data: ") {
            break e.trim().to_owned();
        }
    };
    let message_url = format!("http://{addr}{endpoint}");
    let to_legacy = |body: &str| {
        reqwest::Client::new()
            .post(&message_url)
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
    };
    assert!(to_legacy(INIT).await.unwrap().status().is_success());
    assert!(
        to_legacy(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await
            .unwrap()
            .status()
            .is_success()
    );
    // A healthy Streamable HTTP client listening on its GET stream (for list changes only).
    let id = session(&s.url).await;
    let r = post(
        &s.url,
        Some(&id),
        r#"{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"emergency"}}"#,
    )
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let get = get_stream(&s.url, &id).send().await.unwrap();
    assert_eq!(get.status(), StatusCode::OK);
    let reader = tokio::spawn(async move {
        let mut get = get;
        let mut tail = String::new();
        while let Ok(Some(chunk)) = get.chunk().await {
            tail.push_str(&String::from_utf8_lossy(&chunk));
            if tail.contains("notifications/resources/list_changed") {
                return true;
            }
            let keep = tail.len().saturating_sub(200);
            tail.drain(..keep);
        }
        false
    });
    assert!(
        until(10, || legacy.session_count() == 1).await,
        "the stuck client's session is open"
    );
    // Server-wide messages, far more than the stuck client's buffers hold: none waits.
    let big = "x".repeat(8 * 1024);
    let started = std::time::Instant::now();
    for _ in 0..3000 {
        server.log(oxmcp_types::LoggingLevel::Error, None, json!(big));
    }
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "broadcasts do not wait for a client that stopped reading"
    );
    server.notify_resource_list_changed();
    // The healthy client, reading as it should, got the last one; the stuck one was
    // disconnected.
    let got = tokio::time::timeout(Duration::from_secs(10), reader).await;
    assert_eq!(got.map(Result::unwrap), Ok(true));
    assert!(
        until(10, || legacy.session_count() == 0).await,
        "the stuck client was disconnected"
    );
}

#[tokio::test]
async fn a_batch_whose_requests_are_all_cancelled_ends_its_post() {
    let s = start(HttpConfig::default(), ServeOptions::default()).await;
    let old = Session::open_at(&s.url, "2025-03-26").await;
    let id = old.id.clone();
    let before = s.http.tracked_streams();
    let batch = format!("[{}]", call(7, "sleep", json!({"ms": 60_000})));
    let pending = tokio::spawn(old.post(batch).send());
    assert!(
        until(10, || s.http.tracked_streams() != before).await,
        "the server never saw the batch"
    );
    cancel(&old.http, &s.url, &id, 7).await;
    ends_without_a_result(pending).await;
    ping_ok(&s.url, &id).await;
}
