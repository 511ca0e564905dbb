//! The 2024-11-05 HTTP+SSE transport, and the client's backward-compatibility probe, over real
//! sockets.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcp_client::{Client, ClientConfig, ClientHandlers};
use mcp_http::{HttpClientConfig, HttpConfig, LegacySse, StreamableHttp};
use mcp_server::{Ctx, Server};
use mcp_types::{JsonObject, LoggingLevel};
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    message: String,
}

fn server() -> Server {
    Server::builder("legacy-test", "1")
        .tool("echo", "echo", |c: Ctx, a: Echo| async move {
            c.log(LoggingLevel::Info, None, json!("echoing")).await;
            Ok::<_, String>(a.message)
        })
        .build()
        .unwrap()
}

async fn listen(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { mcp_http::serve_router(listener, router).await });
    base
}

async fn echo_through(url: &str) -> (String, u32) {
    let t = mcp_http::client::connect(url, HttpClientConfig::default()).unwrap();
    let handle = t.handle.clone();
    let client = Client::connect(
        t.incoming,
        t.outgoing,
        ClientHandlers::new(),
        ClientConfig::default(),
    )
    .await
    .unwrap();
    let mut args = JsonObject::new();
    args.insert("message".into(), json!("hello"));
    let r = client.call_tool("echo", args).await.unwrap();
    let tools = client.list_tools().await.unwrap().len();
    client.close().await;
    handle.close().await;
    (
        r.content[0].as_text().unwrap().to_owned(),
        u32::try_from(tools).unwrap(),
    )
}

#[tokio::test]
async fn legacy_only_server_is_reached_through_the_probe() {
    let legacy = LegacySse::new(server(), HttpConfig::default());
    let base = listen(legacy.router()).await;
    // The URL of the SSE stream: POST initialize there gets 405, so the client falls back.
    assert_eq!(
        echo_through(&format!("{base}/sse")).await,
        ("hello".to_owned(), 1)
    );
}

#[tokio::test]
async fn streamable_only_server_needs_no_fallback() {
    let http = StreamableHttp::new(server(), HttpConfig::default());
    let base = listen(http.router()).await;
    assert_eq!(
        echo_through(&format!("{base}/mcp")).await,
        ("hello".to_owned(), 1)
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
    for _ in 0..50 {
        if legacy.session_count() == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(legacy.session_count(), 0);
    assert_eq!(
        post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await
            .unwrap()
            .status(),
        404
    );
}
