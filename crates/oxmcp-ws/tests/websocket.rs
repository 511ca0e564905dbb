//! MCP over WebSocket (`/ws`), over real sockets: our client against our server, and raw
//! frames (bad ones included) against the server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

// The helpers of oxmcp-http's endpoint tests (servers, clients, SSE), shared rather than copied.
#[path = "../../oxmcp-http/tests/common/mod.rs"]
mod common;

use std::time::Duration;

use common::*;
use futures::{SinkExt, StreamExt};
use oxmcp_http::HttpConfig;
use oxmcp_ws::client::{WsClientConfig, connect as ws_connect};
use oxmcp_ws::{WebSocket, WsConfig};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

async fn endpoint(config: HttpConfig) -> String {
    endpoint_with(server(), config).await
}

async fn endpoint_with(server: oxmcp_server::Server, config: HttpConfig) -> String {
    let ws = WebSocket::new(server, config, WsConfig::default());
    let base = listen(ws.router()).await;
    format!("{}/ws", base.replacen("http://", "ws://", 1))
}

type Raw =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn raw(url: &str) -> Raw {
    let mut req = url.into_client_request().unwrap();
    req.headers_mut()
        .insert("sec-websocket-protocol", "mcp".parse().unwrap());
    let (socket, resp) = tokio_tungstenite::connect_async(req).await.unwrap();
    assert_eq!(resp.headers()["sec-websocket-protocol"], "mcp");
    socket
}

/// A raw socket with a legacy session on it (initialize, then notifications/initialized).
async fn session(url: &str) -> Raw {
    let mut s = raw(url).await;
    send(&mut s, json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}})).await;
    next(&mut s).await.unwrap();
    send(
        &mut s,
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    )
    .await;
    s
}

/// The next text message as JSON, or the close frame's code.
async fn next(socket: &mut Raw) -> Result<Value, u16> {
    loop {
        let m = tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .expect("a frame in time");
        match m {
            Some(Ok(Message::Text(t))) => return Ok(serde_json::from_str(&t).unwrap()),
            Some(Ok(Message::Close(f))) => return Err(f.map_or(1005, |f| u16::from(f.code))),
            Some(Ok(_)) => {}
            other => panic!("{other:?}"),
        }
    }
}

/// Asks for logs from `info` up (request id 1) and reads the answer.
async fn info_logs(socket: &mut Raw) {
    send(
        socket,
        json!({"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"info"}}),
    )
    .await;
    next(socket).await.unwrap();
}

async fn send(socket: &mut Raw, v: Value) {
    socket
        .send(Message::Text(v.to_string().into()))
        .await
        .unwrap();
}

#[tokio::test]
async fn our_client_lists_calls_and_gets_notifications() {
    let url = endpoint(HttpConfig::default()).await;
    let (channels, link) = ws_connect(&url, WsClientConfig::default()).await.unwrap();
    let client = client_over(channels, link).await;
    let tools = client.list_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "echo"));
    let r = client
        .call_tool(
            "echo",
            json!({"message": "over the socket"})
                .as_object()
                .cloned()
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("over the socket"));
    // A tool's log message arrives on the same socket before its result.
    let r = client
        .call_tool(
            "chatty_echo",
            json!({"message": "x"}).as_object().cloned().unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("x"));
    client.close().await;
}

#[tokio::test]
async fn raw_frames_both_eras_and_bad_ones() {
    let url = endpoint(HttpConfig::default()).await;
    let mut s = raw(&url).await;
    // Legacy: initialize first, on the socket.
    send(&mut s, json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}})).await;
    let init = next(&mut s).await.unwrap();
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    send(
        &mut s,
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    )
    .await;
    send(&mut s, json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}})).await;
    let r = next(&mut s).await.unwrap();
    assert_eq!(r["result"]["content"][0]["text"], "hi", "{r}");
    // Not JSON: a parse error, and the socket stays open.
    s.send(Message::Text("{not json".into())).await.unwrap();
    let e = next(&mut s).await.unwrap();
    assert_eq!(e["error"]["code"], -32700, "{e}");
    send(&mut s, json!({"jsonrpc":"2.0","id":3,"method":"ping"})).await;
    assert_eq!(next(&mut s).await.unwrap()["result"], json!({}));
    // A binary frame: closed with 1003.
    s.send(Message::Binary(vec![1, 2, 3].into())).await.unwrap();
    assert_eq!(next(&mut s).await, Err(1003));

    // 2026-07-28 on another socket: no initialize, `_meta` per request.
    let mut m = raw(&url).await;
    send(&mut m, json!({"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"message":"modern"},"_meta": modern_meta()}})).await;
    let r = next(&mut m).await.unwrap();
    assert_eq!(r["result"]["content"][0]["text"], "modern", "{r}");
}

#[tokio::test]
async fn oversized_messages_wrong_subprotocol_and_origin() {
    let url = endpoint(HttpConfig::default().max_body(1024)).await;
    let mut s = raw(&url).await;
    send(
        &mut s,
        json!({"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"x".repeat(4096)}}),
    )
    .await;
    assert_eq!(next(&mut s).await, Err(1009));
    // Another subprotocol: refused before the upgrade.
    let mut req = url.as_str().into_client_request().unwrap();
    req.headers_mut()
        .insert("sec-websocket-protocol", "graphql-ws".parse().unwrap());
    let e = tokio_tungstenite::connect_async(req).await.unwrap_err();
    assert!(e.to_string().contains("400"), "{e}");
    // A foreign Origin: 403, as on /mcp.
    let mut req = url.as_str().into_client_request().unwrap();
    req.headers_mut()
        .insert("origin", "https://evil.example".parse().unwrap());
    let e = tokio_tungstenite::connect_async(req).await.unwrap_err();
    assert!(e.to_string().contains("403"), "{e}");
}

#[tokio::test]
async fn the_upgrade_needs_the_bearer_token() {
    let auth = oxmcp_http::HttpAuth {
        verifier: std::sync::Arc::new(OneToken),
        metadata: json!({"resource": "http://127.0.0.1/ws", "authorization_servers": ["https://as.example"]}),
        metadata_url: "http://127.0.0.1/.well-known/oauth-protected-resource/ws".into(),
        scopes: Default::default(),
    };
    let url = endpoint(HttpConfig::default().auth(Some(std::sync::Arc::new(auth)))).await;
    let e = tokio_tungstenite::connect_async(url.as_str())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("401"), "{e}");
    let bad =
        WsClientConfig::default().headers(vec![("authorization".into(), "Bearer nope".into())]);
    let e = ws_connect(&url, bad).await.unwrap_err();
    assert!(e.to_string().contains("401"), "{e}");
    let good = WsClientConfig::default()
        .headers(vec![("authorization".into(), "Bearer let-me-in".into())]);
    let (channels, link) = ws_connect(&url, good).await.unwrap();
    let client = client_over(channels, link).await;
    assert!(!client.list_tools().await.unwrap().is_empty());
    client.close().await;
}

/// A peer that stops answering pings is dropped after two intervals.
#[tokio::test]
async fn a_silent_peer_is_dropped() {
    let ws = WebSocket::new(
        server(),
        HttpConfig::default(),
        WsConfig::default().ping_interval(Duration::from_millis(100)),
    );
    let base = listen(ws.router()).await;
    let url = format!("{}/ws", base.replacen("http://", "ws://", 1));
    let mut s = raw(&url).await;
    // Not reading: the pings go unanswered.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let mut ended = false;
    for _ in 0..20 {
        match tokio::time::timeout(Duration::from_secs(2), s.next()).await {
            Ok(Some(Ok(Message::Ping(_)))) => continue,
            Ok(Some(Ok(Message::Close(_))) | None | Some(Err(_))) => {
                ended = true;
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(ended, "the server closed the connection");
}

/// Shutdown: no more input, the request in flight is still answered, then 1001.
#[tokio::test]
async fn shutdown_answers_what_was_accepted_then_closes_1001() {
    let shutdown = tokio_util::sync::CancellationToken::new();
    let url = endpoint(HttpConfig::default().shutdown(shutdown.clone())).await;
    let mut s = raw(&url).await;
    send(&mut s, json!({"jsonrpc":"2.0","id":"m","method":"tools/call","params":{"name":"sleep","arguments":{"ms":300},"_meta": modern_meta()}})).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    shutdown.cancel();
    let r = next(&mut s).await.unwrap();
    assert_eq!(r["result"]["content"][0]["text"], "slept 300", "{r}");
    assert_eq!(next(&mut s).await, Err(1001));
}

/// Per-tool scopes hold on every frame, not only at the upgrade.
#[tokio::test]
async fn per_tool_scopes_hold_on_every_frame() {
    let mut scopes = oxmcp_http::ScopePolicy::default();
    scopes.tools.insert("sleep".into(), vec!["admin".into()]);
    let auth = oxmcp_http::HttpAuth {
        verifier: std::sync::Arc::new(BasicScope),
        metadata: json!({"resource": "http://127.0.0.1/ws", "authorization_servers": ["https://as.example"]}),
        metadata_url: "http://127.0.0.1/.well-known/oauth-protected-resource/ws".into(),
        scopes,
    };
    let url = endpoint(HttpConfig::default().auth(Some(std::sync::Arc::new(auth)))).await;
    let mut req = url.as_str().into_client_request().unwrap();
    req.headers_mut()
        .insert("authorization", "Bearer t".parse().unwrap());
    let (mut s, _) = tokio_tungstenite::connect_async(req).await.unwrap();
    send(&mut s, json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":1},"_meta":modern_meta()}})).await;
    let e = next(&mut s).await.unwrap();
    assert_eq!(e["error"]["data"]["error"], "insufficient_scope", "{e}");
    send(&mut s, json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"ok"},"_meta":modern_meta()}})).await;
    let r = next(&mut s).await.unwrap();
    assert_eq!(r["result"]["content"][0]["text"], "ok", "{r}");
}

/// A client that stops reading: the server waits (TCP flow control) and loses nothing.
#[tokio::test]
async fn a_slow_reader_loses_nothing() {
    let url = endpoint_with(flooding_server(Default::default()), HttpConfig::default()).await;
    let mut s = session(&url).await;
    info_logs(&mut s).await;
    let n = 3000; // about 3 MiB: more than the socket buffers and queues hold
    send(&mut s, json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"flood","arguments":{"n":n}}})).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut flood = Flooded::default();
    while flood.take(next(&mut s).await.unwrap()) {}
    flood.check(n);
}

/// At most `max_sessions` connections at once: the next upgrade gets 503.
#[tokio::test]
async fn open_connections_are_capped() {
    let url = endpoint(HttpConfig::default().max_sessions(1)).await;
    let first = raw(&url).await;
    let mut req = url.as_str().into_client_request().unwrap();
    req.headers_mut()
        .insert("sec-websocket-protocol", "mcp".parse().unwrap());
    let e = tokio_tungstenite::connect_async(req).await.unwrap_err();
    assert!(e.to_string().contains("503"), "{e}");
    drop(first);
    let mut freed = false;
    for _ in 0..50 {
        let mut req = url.as_str().into_client_request().unwrap();
        req.headers_mut()
            .insert("sec-websocket-protocol", "mcp".parse().unwrap());
        if tokio_tungstenite::connect_async(req).await.is_ok() {
            freed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(freed, "a slot came free when the connection closed");
}

/// Waits up to 5 s for `flag`.
async fn set_soon(flag: &std::sync::atomic::AtomicBool) -> bool {
    for _ in 0..100 {
        if flag.load(std::sync::atomic::Ordering::SeqCst) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// A lone request is answered on the socket's own task, under the loop's rules: a
/// cancellation stops it (no answer, and the socket goes on), its id stays taken while it
/// runs, and a closed socket stops what still runs.
#[tokio::test]
async fn requests_answered_on_the_socket_task_are_cancelled_and_stopped() {
    let dropped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let url = endpoint_with(flooding_server(dropped.clone()), HttpConfig::default()).await;
    let mut s = session(&url).await;
    let stuck = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"stuck","arguments":{}}});
    send(&mut s, stuck.clone()).await;
    // Its id is in use while it runs.
    send(&mut s, stuck.clone()).await;
    let e = next(&mut s).await.unwrap();
    assert_eq!(e["id"], 2, "{e}");
    assert_eq!(e["error"]["code"], -32600, "{e}");
    // Other requests go on meanwhile.
    send(&mut s, json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"beside"}}})).await;
    let r = next(&mut s).await.unwrap();
    assert_eq!(r["result"]["content"][0]["text"], "beside", "{r}");
    send(
        &mut s,
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}),
    )
    .await;
    assert!(
        set_soon(&dropped).await,
        "the cancelled handler was stopped"
    );
    send(&mut s, json!({"jsonrpc":"2.0","id":4,"method":"ping"})).await;
    let r = next(&mut s).await.unwrap();
    assert_eq!(r["id"], 4, "no answer for the cancelled request: {r}");

    dropped.store(false, std::sync::atomic::Ordering::SeqCst);
    send(&mut s, stuck).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!dropped.load(std::sync::atomic::Ordering::SeqCst));
    s.close(None).await.unwrap();
    drop(s);
    assert!(
        set_soon(&dropped).await,
        "a closed socket stops its running handler"
    );
}

/// A request that sent something (a log message) goes on on a task of its own: a closed
/// socket stops it all the same.
#[tokio::test]
async fn a_closed_socket_stops_a_request_that_spoke() {
    struct SetOnDrop(std::sync::Arc<std::sync::atomic::AtomicBool>);
    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
    let dropped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = dropped.clone();
    let server = with_tools(oxmcp_server::Server::builder("t", "1"))
        .tool(
            "chatty_stuck",
            "logs, then never answers",
            move |c: oxmcp_server::Ctx, _a: Nothing| {
                let guard = SetOnDrop(flag.clone());
                async move {
                    let _guard = guard;
                    c.log(oxmcp_types::LoggingLevel::Info, None, json!("working"))
                        .await;
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Ok::<_, String>("woke")
                }
            },
        )
        .build()
        .unwrap();
    let url = endpoint_with(server, HttpConfig::default()).await;
    let mut s = session(&url).await;
    info_logs(&mut s).await;
    send(&mut s, json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"chatty_stuck","arguments":{}}})).await;
    let log = next(&mut s).await.unwrap();
    assert_eq!(log["method"], "notifications/message", "{log}");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!dropped.load(std::sync::atomic::Ordering::SeqCst));
    s.close(None).await.unwrap();
    drop(s);
    assert!(
        set_soon(&dropped).await,
        "a closed socket stops a handler that spoke"
    );
}
