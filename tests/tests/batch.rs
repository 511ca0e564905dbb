//! JSON-RPC batches (protocol 2025-03-26) against a real `oxmcp serve`, over stdio and
//! Streamable HTTP: each entry is a request in flight like any other — its id is taken
//! (duplicates get -32600) and it can be cancelled (a cancelled entry is left out of the
//! batch's answer).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures::StreamExt;
use serde_json::{Value, json};

fn slow(id: &str, steps: u32, delay_ms: u64) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"slow","arguments":{"steps":steps,"delay_ms":delay_ms}}})
}

fn ping(id: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"ping"})
}

fn cancel(id: &str) -> Value {
    json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":id}})
}

/// A batch answer's entries: (id, error code or `None` for a result), sorted.
fn entries(answer: &Value) -> Vec<(String, Option<i64>)> {
    let arr = answer
        .as_array()
        .unwrap_or_else(|| panic!("a batch answer: {answer}"));
    let mut v: Vec<_> = arr
        .iter()
        .map(|m| {
            (
                m["id"].as_str().unwrap().to_owned(),
                m["error"]["code"].as_i64(),
            )
        })
        .collect();
    v.sort_unstable();
    v
}

fn want(pairs: &[(&str, Option<i64>)]) -> Vec<(String, Option<i64>)> {
    pairs.iter().map(|(id, c)| ((*id).to_owned(), *c)).collect()
}

/// Reads until a batch answer (an array) arrives, skipping notifications.
async fn recv_batch(s: &mut oxmcp_tests::Raw) -> Value {
    loop {
        let m = s.recv().await;
        if m.is_array() {
            return m;
        }
        assert!(m.get("method").is_some(), "unexpected {m}");
    }
}

#[tokio::test]
async fn batch_entries_are_requests_in_flight_over_stdio() {
    let mut s = oxmcp_tests::Raw::spawn();
    s.initialize("2025-03-26").await;
    // Two entries with one id: the second is refused.
    s.send(json!([slow("a", 1, 50), slow("a", 1, 50)])).await;
    let answer = recv_batch(&mut s).await;
    assert_eq!(entries(&answer), want(&[("a", None), ("a", Some(-32600))]));
    // A cancelled entry is left out of the answer (JSON-RPC: no response for it).
    s.send(json!([slow("long", 100, 10_000), ping("p")])).await;
    s.send(cancel("long")).await;
    let answer = recv_batch(&mut s).await;
    assert_eq!(entries(&answer), want(&[("p", None)]));
    // A batch reusing the id of a request in flight.
    s.send(slow("x", 100, 10_000)).await;
    s.send(json!([ping("x"), ping("y")])).await;
    let answer = recv_batch(&mut s).await;
    assert_eq!(entries(&answer), want(&[("x", Some(-32600)), ("y", None)]));
    s.send(cancel("x")).await;
    // A request reusing the id of a batch entry in flight; then the entry is cancelled, and
    // a batch with nothing left to answer gets no answer.
    s.send(json!([slow("z", 100, 10_000)])).await;
    s.send(ping("z")).await;
    let (dup, _) = s.recv_id(json!("z")).await;
    assert_eq!(oxmcp_tests::code(&dup), -32600, "{dup}");
    s.send(cancel("z")).await;
    s.send(ping("after")).await;
    let (pong, before) = s.recv_id(json!("after")).await;
    assert_eq!(pong["result"], json!({}));
    assert!(
        before.iter().all(|m| !m.is_array()),
        "no answer for a wholly cancelled batch: {before:?}"
    );
    s.close().await;
}

/// POSTs a body and returns the messages of its SSE answer as they come.
async fn post_streaming(
    s: &oxmcp_tests::HttpSession,
    body: &Value,
) -> tokio::sync::mpsc::Receiver<Value> {
    let r = reqwest::Client::new()
        .post(&s.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &s.session)
        .header("mcp-protocol-version", &s.version)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    let mut parser = oxmcp_http::sse::SseParser::new(1 << 20);
    let mut stream = r.bytes_stream();
    tokio::spawn(async move {
        while let Some(Ok(chunk)) = stream.next().await {
            for e in parser.push(&chunk) {
                if !e.data.is_empty()
                    && tx
                        .send(serde_json::from_str(&e.data).unwrap())
                        .await
                        .is_err()
                {
                    return;
                }
            }
        }
    });
    rx
}

#[tokio::test]
async fn batch_entries_are_requests_in_flight_over_http() {
    let (_child, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    let s = oxmcp_tests::HttpSession::open(&url, "2025-03-26").await;
    // Two entries with one id: the second is refused.
    let body = json!([slow("a", 1, 50), slow("a", 1, 50)]);
    let (status, replies) = s.post(body.to_string().as_bytes()).await;
    assert_eq!(status, 200);
    assert_eq!(
        entries(&replies[0]),
        want(&[("a", None), ("a", Some(-32600))])
    );
    // A batch in flight: its first entry reports progress (so the batch has been read), and
    // its second entry's id is taken until it is cancelled, which leaves it out of the answer.
    let mut first = slow("first", 2, 200);
    first["params"]["_meta"] = json!({"progressToken": "t"});
    let mut answer = post_streaming(&s, &json!([first, slow("second", 100, 10_000)])).await;
    let progress = tokio::time::timeout(std::time::Duration::from_secs(20), answer.recv())
        .await
        .expect("progress of the first entry")
        .unwrap();
    assert_eq!(progress["method"], "notifications/progress", "{progress}");
    let (status, dup) = s.post(ping("second").to_string().as_bytes()).await;
    assert_eq!(status, 200);
    assert_eq!(oxmcp_tests::code(&dup[0]), -32600, "{dup:?}");
    let (status, _) = s.post(cancel("second").to_string().as_bytes()).await;
    assert_eq!(status, 202);
    let batch = loop {
        let m = tokio::time::timeout(std::time::Duration::from_secs(20), answer.recv())
            .await
            .expect("the batch's answer")
            .unwrap();
        if m.is_array() {
            break m;
        }
    };
    assert_eq!(entries(&batch), want(&[("first", None)]));
}
