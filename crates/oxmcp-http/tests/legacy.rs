//! The 2024-11-05 HTTP+SSE transport, and the client's backward-compatibility probe, over real
//! sockets.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use oxmcp_http::{HttpConfig, LegacySse, StreamableHttp};
use oxmcp_types::JsonObject;
use serde_json::json;

mod common;
use common::{TOOLS, connect, listen, server, until};

/// Calls `chatty_echo` (a log message, then the answer) and lists the tools through `url`.
async fn echo_through(url: &str) -> (String, usize) {
    let (client, handle) = connect(url).await;
    let mut args = JsonObject::new();
    args.insert("message".into(), json!("hello"));
    let r = client.call_tool("chatty_echo", args).await.unwrap();
    let tools = client.list_tools().await.unwrap().len();
    client.close().await;
    handle.close().await;
    (r.content[0].as_text().unwrap().to_owned(), tools)
}

#[tokio::test]
async fn legacy_only_server_is_reached_through_the_probe() {
    let legacy = LegacySse::new(server(), HttpConfig::default());
    let base = listen(legacy.router()).await;
    // The URL of the SSE stream: POST initialize there gets 405, so the client falls back.
    assert_eq!(
        echo_through(&format!("{base}/sse")).await,
        ("hello".to_owned(), TOOLS.len())
    );
}

#[tokio::test]
async fn streamable_only_server_needs_no_fallback() {
    let http = StreamableHttp::new(server(), HttpConfig::default());
    let base = listen(http.router()).await;
    assert_eq!(
        echo_through(&format!("{base}/mcp")).await,
        ("hello".to_owned(), TOOLS.len())
    );
}

#[tokio::test]
async fn both_transports_on_one_server() {
    let s = server();
    let legacy = LegacySse::new(s.clone(), HttpConfig::default());
    let http = StreamableHttp::new(s, HttpConfig::default());
    let base = listen(http.router().merge(legacy.router())).await;
    let (mcp, sse) = (format!("{base}/mcp"), format!("{base}/sse"));
    let (a, b) = tokio::join!(echo_through(&mcp), echo_through(&sse));
    assert_eq!(a.0, "hello");
    assert_eq!(b.0, "hello");
}

#[tokio::test]
async fn legacy_wire_format_and_checks() {
    let legacy = LegacySse::new(server(), HttpConfig::default());
    let base = listen(legacy.router()).await;
    let http = reqwest::Client::new();
    let resp = http.get(format!("{base}/sse")).send().await.unwrap();
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let mut stream = resp.bytes_stream();
    use futures::StreamExt;
    let first = String::from_utf8(stream.next().await.unwrap().unwrap().to_vec()).unwrap();
    assert!(
        first.starts_with("event: endpoint\ndata: /message?sessionId="),
        "{first}"
    );
    let path = first
        .lines()
        .nth(1)
        .unwrap()
        .trim_start_matches("data: ")
        .to_owned();
    let post = |body: &str| {
        http.post(format!("{base}{path}"))
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
    };
    let r = post(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#).await.unwrap();
    assert_eq!(r.status(), 202);
    let ev = String::from_utf8(stream.next().await.unwrap().unwrap().to_vec()).unwrap();
    assert!(
        ev.starts_with("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\""),
        "{ev}"
    );
    assert!(ev.contains(r#""protocolVersion":"2024-11-05""#));
    // Bad JSON: 400; unknown session: 404; foreign Host: 403.
    assert_eq!(post("{nope").await.unwrap().status(), 400);
    let r = http
        .post(format!("{base}/message?sessionId=ffff"))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let r = http
        .get(format!("{base}/sse"))
        .header("host", "evil.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    // Closing the stream ends the session.
    drop(stream);
    assert!(
        until(10, || legacy.session_count() == 0).await,
        "the session ended with its stream"
    );
    assert_eq!(
        post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await
            .unwrap()
            .status(),
        404
    );
}
