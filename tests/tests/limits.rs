//! Hostile sizes against a real `oxmcp serve`: resource URIs over the cap, and error messages
//! that echo only a short prefix of what the client sent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use oxmcp_tests::code;

/// The default cap on a resource URI (`ServerConfig::max_uri_len`).
const MAX_URI: usize = 8 * 1024;

/// The `_meta` of a self-describing 2026-07-28 request.
fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// An error whose message and data echo at most a short prefix of the client's text.
fn assert_short_error(r: &Value, want: i64, what: &str) {
    assert_eq!(code(r), want, "{what}: {r:.300}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(
        message.chars().count() <= 200,
        "{what}: the message echoes too much ({} chars): {message:.300}",
        message.chars().count()
    );
    let whole = r["error"].to_string();
    assert!(
        whole.len() <= 600,
        "{what}: the error echoes too much ({} bytes): {whole:.300}",
        whole.len()
    );
}

#[tokio::test]
async fn resource_uris_over_the_cap_are_refused_with_a_short_message() {
    let long = format!("demo://greeting/{}/", "a".repeat(200_000));
    // A 2025-11-25 session.
    let mut s = oxmcp_tests::Raw::spawn();
    s.initialize("2025-11-25").await;
    let r = s.request(1, "resources/read", json!({"uri": long})).await;
    assert_short_error(&r, -32602, "200,000-byte URI");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("demo://greeting/aaa"),
        "names the URI by its prefix: {r:.300}"
    );
    // Just under the cap, the template still matches.
    let name = "a".repeat(MAX_URI - "demo://greeting/".len());
    let uri = format!("demo://greeting/{name}");
    let r = s.request(2, "resources/read", json!({"uri": uri})).await;
    assert_eq!(
        r["result"]["contents"][0]["text"],
        format!("Hello, {name}!"),
        "{r:.300}"
    );
    // One byte over it is refused.
    let r = s
        .request(3, "resources/read", json!({"uri": format!("{uri}a")}))
        .await;
    assert_short_error(&r, -32602, "one byte over the cap");
    s.close().await;

    // A 2026-07-28 request needs no handshake first.
    let mut s = oxmcp_tests::Raw::spawn();
    let r = s
        .request(
            1,
            "resources/read",
            json!({"uri": long, "_meta": modern_meta()}),
        )
        .await;
    assert_short_error(&r, -32602, "200,000-byte URI, 2026-07-28");
    let r = s
        .request(
            2,
            "resources/read",
            json!({"uri": uri, "_meta": modern_meta()}),
        )
        .await;
    assert_eq!(
        r["result"]["contents"][0]["text"],
        format!("Hello, {name}!"),
        "{r:.300}"
    );
    s.close().await;
}

#[tokio::test]
async fn router_errors_echo_a_short_prefix() {
    let long = "x".repeat(100_000);
    let mut s = oxmcp_tests::Raw::spawn();
    s.initialize("2025-11-25").await;
    let cases = [
        ("tools/call", json!({"name": long})),
        ("prompts/get", json!({"name": long})),
        ("tools/list", json!({"cursor": long})),
        (
            "resources/read",
            json!({"uri": format!("demo://nothing/{}", "x".repeat(MAX_URI - 20))}),
        ),
        (long.as_str(), json!({})),
    ];
    for (id, (method, params)) in cases.into_iter().enumerate() {
        let r = s.request(id as i64 + 1, method, params).await;
        let want = match method {
            "resources/read" => -32002,
            m if m == long => -32601,
            _ => -32602,
        };
        assert_short_error(&r, want, &format!("{method:.20}"));
    }
    // The same for 2026-07-28 requests (resource not found is -32602 there).
    let r = s
        .request(
            9,
            "tools/call",
            json!({"name": long, "_meta": modern_meta()}),
        )
        .await;
    assert_short_error(&r, -32602, "unknown tool, 2026-07-28");
    let r = s
        .request(
            10,
            "resources/read",
            json!({"uri": format!("demo://nothing/{}", "x".repeat(MAX_URI - 20)), "_meta": modern_meta()}),
        )
        .await;
    assert_short_error(&r, -32602, "resource not found, 2026-07-28");
    s.close().await;
}

/// `[1,1,...,1]`: as many entries as fit in `bytes` bytes.
fn ones_batch(bytes: usize) -> Vec<u8> {
    let n = (bytes - 1) / 2;
    let mut body = Vec::with_capacity(bytes);
    body.push(b'[');
    for i in 0..n {
        body.extend_from_slice(if i + 1 == n { b"1]" } else { b"1," });
    }
    body
}

/// Just under the stdio line cap and the HTTP body cap (both 4 MiB).
const HUGE_BATCH: usize = 4 * 1024 * 1024 - 64;

/// The most a 4 MiB batch may raise the server's peak RSS (it once decoded every entry of
/// the batch before checking its size: about 400 MB).
const MAX_GROWTH_KIB: u64 = 20 * 1024;

/// One -32600 error with `"id": null` about the batch cap.
fn assert_over_cap(replies: &[Value]) {
    assert_eq!(replies.len(), 1, "{replies:.300?}");
    let r = &replies[0];
    assert_eq!(code(r), -32600, "{r:.300}");
    assert!(r["id"].is_null(), "{r:.300}");
    assert!(
        r["error"].to_string().contains("more than 50 entries"),
        "names the limit: {r:.300}"
    );
}

#[tokio::test]
async fn a_huge_batch_is_refused_in_bounded_memory_over_stdio() {
    let mut s = oxmcp_tests::Raw::spawn();
    s.initialize("2025-03-26").await;
    let pid = s.child.id().unwrap();
    // Warm up every path the huge batch takes, with a batch just over the cap.
    s.send_bytes(&ones_batch(200)).await;
    let (_, before) = s.recv_id(json!(null)).await;
    assert!(before.is_empty(), "{before:?}");
    let base = oxmcp_tests::peak_rss_kib(pid);
    s.send_bytes(&ones_batch(HUGE_BATCH)).await;
    let (answer, before) = s.recv_id(json!(null)).await;
    assert!(before.is_empty(), "{before:?}");
    assert_over_cap(&[answer]);
    let grown = oxmcp_tests::peak_rss_kib(pid).saturating_sub(base);
    assert!(
        grown < MAX_GROWTH_KIB,
        "peak RSS grew by {grown} KiB for a 4 MiB batch"
    );
    assert_eq!(s.request(1, "ping", json!({})).await["result"], json!({}));
    s.close().await;
}

#[tokio::test]
async fn a_huge_batch_is_refused_in_bounded_memory_over_http() {
    let (child, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    let pid = child.id().unwrap();
    let s = oxmcp_tests::HttpSession::open(&url, "2025-03-26").await;
    let (status, replies) = s.post(&ones_batch(200)).await;
    assert_eq!(status, 400);
    assert_over_cap(&replies);
    let base = oxmcp_tests::peak_rss_kib(pid);
    let (status, replies) = s.post(&ones_batch(HUGE_BATCH)).await;
    assert_eq!(status, 400);
    assert_over_cap(&replies);
    let grown = oxmcp_tests::peak_rss_kib(pid).saturating_sub(base);
    assert!(
        grown < MAX_GROWTH_KIB,
        "peak RSS grew by {grown} KiB for a 4 MiB batch"
    );
    let (status, replies) = s.post(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).await;
    assert_eq!((status, &replies[0]["result"]), (200, &json!({})));
}
