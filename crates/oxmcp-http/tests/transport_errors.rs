//! A request the HTTP transport cannot deliver fails with `CallError::Transport` and its
//! cause (the HTTP status, or why there was no answer), never with a made-up JSON-RPC error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use axum::http::StatusCode;
use axum::response::IntoResponse;
use oxmcp_client::{CallError, Client, ClientConfig, ClientHandlers, ConnectError};
use oxmcp_http::HttpClientConfig;
use oxmcp_jsonrpc::TransportError;

async fn handshake(url: &str) -> Result<Client, ConnectError> {
    let t = oxmcp_http::client::connect(url, HttpClientConfig::default()).unwrap();
    let connect = Client::connect(
        t.incoming,
        t.outgoing,
        ClientHandlers::new(),
        ClientConfig::default(),
    );
    tokio::time::timeout(Duration::from_secs(20), connect)
        .await
        .expect("a transport failure must not hang the handshake")
}

#[tokio::test]
async fn an_http_status_without_a_json_rpc_body_is_a_transport_error() {
    let app = axum::Router::new().fallback(|| async {
        (
            StatusCode::UNAUTHORIZED,
            [("www-authenticate", "Bearer")],
            "no token",
        )
            .into_response()
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let Err(err) = handshake(&url).await else {
        panic!("the handshake must fail")
    };
    // The message names the cause, not just "initialize failed" (and the cause is not
    // repeated by `source()`, so error-chain printers do not print it twice).
    assert_eq!(err.to_string(), "initialize failed: HTTP 401 Unauthorized");
    assert!(std::error::Error::source(&err).is_none());
    let ConnectError::Initialize(CallError::Transport(e)) = err else {
        panic!("expected a transport error")
    };
    let TransportError::Http {
        status, ref body, ..
    } = e
    else {
        panic!("{e:?}")
    };
    assert_eq!(status, 401);
    assert_eq!(body, "no token");
    assert_eq!(e.to_string(), "HTTP 401 Unauthorized");
}

#[tokio::test]
async fn no_answer_at_all_is_an_io_transport_error() {
    // A port nobody listens on: bound, then closed.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let Err(ConnectError::Initialize(CallError::Transport(e))) = handshake(&url).await else {
        panic!("expected a transport error")
    };
    assert!(matches!(e, TransportError::Io(_)), "{e:?}");
}
