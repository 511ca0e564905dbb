//! WebSocket connections and gRPC streams count per client (principal, else address) like
//! Streamable HTTP sessions, over real sockets: one client at its limit is refused (429 /
//! `RESOURCE_EXHAUSTED`) while another still gets in, and a slot comes free when one of its
//! connections ends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

// The helpers of oxmcp-http's endpoint tests (servers, clients, SSE), shared rather than copied.
#[path = "../../oxmcp-http/tests/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use oxmcp_grpc::client::{GrpcClientConfig, call as grpc_call, connect as grpc_connect};
use oxmcp_grpc::{CONNECT_PATH, Grpc};
use oxmcp_http::{HttpAuth, HttpConfig};
use oxmcp_proto::Envelope;
use oxmcp_ws::client::{WsClientConfig, connect as ws_connect};
use oxmcp_ws::{WebSocket, WsConfig};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tonic::Code;

/// Accepts `token-NAME` as subject NAME.
#[derive(Debug)]
struct ByName;

impl oxmcp_http::TokenVerifier for ByName {
    fn verify<'a>(
        &'a self,
        token: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<oxmcp_http::Identity, oxmcp_http::TokenError>> {
        let subject = token.strip_prefix("token-").map(str::to_owned);
        Box::pin(async move {
            subject
                .map(|subject| oxmcp_http::Identity {
                    subject,
                    ..Default::default()
                })
                .ok_or_else(|| oxmcp_http::TokenError::Invalid("unknown token".into()))
        })
    }
}

fn protected(config: HttpConfig) -> HttpConfig {
    let auth = HttpAuth {
        verifier: Arc::new(ByName),
        metadata: json!({"resource": "http://127.0.0.1/mcp", "authorization_servers": ["https://as.example"]}),
        metadata_url: "http://127.0.0.1/.well-known/oauth-protected-resource/mcp".into(),
        scopes: Default::default(),
    };
    config.auth(Some(Arc::new(auth)))
}

async fn ws_endpoint(config: HttpConfig) -> String {
    let ws = WebSocket::new(server(), config, WsConfig::default());
    let base = listen(ws.router()).await;
    format!("{}/ws", base.replacen("http://", "ws://", 1))
}

async fn grpc_endpoint(config: HttpConfig) -> String {
    let grpc = Grpc::new(server(), config);
    let base = listen(oxmcp_grpc::split(axum::Router::new(), grpc.router())).await;
    base.replacen("http://", "grpc://", 1)
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A raw WebSocket upgrade, with `who`'s token if given: the socket, or the refusal's text.
async fn ws_open(url: &str, who: Option<&str>) -> Result<Socket, String> {
    let mut req = url.into_client_request().unwrap();
    req.headers_mut()
        .insert("sec-websocket-protocol", "mcp".parse().unwrap());
    if let Some(who) = who {
        req.headers_mut().insert(
            "authorization",
            format!("Bearer token-{who}").parse().unwrap(),
        );
    }
    tokio_tungstenite::connect_async(req)
        .await
        .map(|(s, _)| s)
        .map_err(|e| e.to_string())
}

/// A raw `Connect` stream, with `who`'s token if given: the sender keeping it open, or the
/// refusal's code.
async fn grpc_open(url: &str, who: Option<&str>) -> Result<mpsc::Sender<Envelope>, Code> {
    let base = url.replacen("grpc://", "http://", 1);
    let channel = tonic::transport::Endpoint::from_shared(base)
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    let (tx, rx) = mpsc::channel(16);
    let mut request = tonic::Request::new(ReceiverStream::new(rx));
    if let Some(who) = who {
        request.metadata_mut().insert(
            "authorization",
            format!("Bearer token-{who}").parse().unwrap(),
        );
    }
    let path = axum::http::uri::PathAndQuery::from_static(CONNECT_PATH);
    let codec = tonic_prost::ProstCodec::<Envelope, Envelope>::default();
    let answers = grpc
        .streaming(request, path, codec)
        .await
        .map_err(|s| s.code())?
        .into_inner();
    // Keep reading so that the stream stays open as long as the sender does.
    tokio::spawn(async move {
        let mut answers = answers;
        while let Ok(Some(_)) = answers.message().await {}
    });
    Ok(tx)
}

fn unary_echo() -> serde_json::Value {
    json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"},"_meta":modern_meta()}})
}

#[tokio::test]
async fn websocket_connections_count_per_principal() {
    let url = ws_endpoint(protected(
        HttpConfig::default().max_sessions_per_principal(2),
    ))
    .await;
    let first = ws_open(&url, Some("alice")).await.unwrap();
    let _second = ws_open(&url, Some("alice")).await.unwrap();
    let e = ws_open(&url, Some("alice")).await.err().unwrap();
    assert!(e.contains("429"), "alice is at her limit: {e}");
    // Another principal is not held back by alice.
    let bob = ws_open(&url, Some("bob")).await.unwrap();
    // Our client sees the refusal too.
    let config = WsClientConfig::default()
        .headers(vec![("authorization".into(), "Bearer token-alice".into())]);
    let e = ws_connect(&url, config.clone()).await.unwrap_err();
    assert!(e.to_string().contains("429"), "{e}");
    drop(first);
    drop(bob);
    let freed = until_async(10, || {
        let config = config.clone();
        let url = url.clone();
        async move {
            match ws_connect(&url, config).await {
                Ok((channels, link)) => {
                    let client = client_over(channels, link).await;
                    client.close().await;
                    true
                }
                Err(_) => false,
            }
        }
    })
    .await;
    assert!(
        freed,
        "a slot came free when one of alice's connections closed"
    );
}

#[tokio::test]
async fn websocket_connections_count_per_address() {
    let config = HttpConfig::default()
        .limit_loopback(true)
        .max_sessions_per_address(1);
    let url = ws_endpoint(config).await;
    let _first = ws_open(&url, None).await.unwrap();
    let e = ws_open(&url, None).await.err().unwrap();
    assert!(e.contains("429"), "{e}");
}

#[tokio::test]
async fn websocket_connections_are_rate_limited_per_client() {
    let config = HttpConfig::default()
        .limit_loopback(true)
        .client_session_rate(1)
        .client_session_burst(2);
    let url = ws_endpoint(config).await;
    drop(ws_open(&url, None).await.unwrap());
    drop(ws_open(&url, None).await.unwrap());
    let e = ws_open(&url, None).await.err().unwrap();
    assert!(
        e.contains("429"),
        "a third new connection at once is too fast: {e}"
    );
}

#[tokio::test]
async fn grpc_streams_count_per_principal() {
    let url = grpc_endpoint(protected(
        HttpConfig::default().max_sessions_per_principal(2),
    ))
    .await;
    let first = grpc_open(&url, Some("alice")).await.unwrap();
    let _second = grpc_open(&url, Some("alice")).await.unwrap();
    let e = grpc_open(&url, Some("alice")).await.err().unwrap();
    assert_eq!(e, Code::ResourceExhausted, "alice is at her limit");
    // A unary call holds a slot while it runs, so alice gets none now either.
    let alice = GrpcClientConfig::default()
        .headers(vec![("authorization".into(), "Bearer token-alice".into())]);
    let e = grpc_call(&url, &unary_echo(), &alice).await.unwrap_err();
    assert!(e.to_string().contains("ResourceExhausted"), "{e}");
    // Bob is not held back by alice.
    let _bob = grpc_open(&url, Some("bob")).await.unwrap();
    let bob = GrpcClientConfig::default()
        .headers(vec![("authorization".into(), "Bearer token-bob".into())]);
    let answer = grpc_call(&url, &unary_echo(), &bob).await.unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "x", "{answer}");
    drop(first);
    let freed = until_async(10, || {
        let (url, alice) = (url.clone(), alice.clone());
        async move {
            match grpc_connect(&url, alice).await {
                Ok((channels, link)) => {
                    let client = client_over(channels, link).await;
                    client.close().await;
                    true
                }
                Err(_) => false,
            }
        }
    })
    .await;
    assert!(freed, "a slot came free when one of alice's streams ended");
}

#[tokio::test]
async fn grpc_streams_count_per_address() {
    let config = HttpConfig::default()
        .limit_loopback(true)
        .max_sessions_per_address(1);
    let url = grpc_endpoint(config).await;
    let _first = grpc_open(&url, None).await.unwrap();
    let e = grpc_open(&url, None).await.err().unwrap();
    assert_eq!(e, Code::ResourceExhausted);
    tokio::time::sleep(Duration::from_millis(10)).await;
}
