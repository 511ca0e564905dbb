//! The client against a real server in the same process (`mcp_transport::duplex()`): typed
//! calls in both eras, and the transport's `Link` closed with the client.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;
use mcp_client::{CallError, Client, ClientConfig, ClientHandlers, ConnectError, EraChoice};
use mcp_server::{Ctx, Server};
use mcp_transport::{Exit, Link};
use mcp_types::JsonObject;
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    message: String,
}

fn server() -> Server {
    Server::builder("in-process", "1")
        .tool("echo", "echo", |_c: Ctx, a: Echo| async move {
            Ok::<_, String>(a.message)
        })
        .text_resource("test://readme", "readme", "text/plain", "read me")
        .build()
        .unwrap()
}

/// Counts how often it was closed.
struct Counting(Arc<AtomicUsize>);

impl Link for Counting {
    fn close(self: Box<Self>) -> BoxFuture<'static, Option<Exit>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { None })
    }
}

async fn connect(era: EraChoice, closes: &Arc<AtomicUsize>) -> Result<Client, ConnectError> {
    let (ours, theirs) = mcp_transport::duplex();
    let s = server();
    tokio::spawn(async move { s.serve(theirs.incoming, theirs.outgoing).await });
    let config = ClientConfig {
        era,
        ..ClientConfig::default()
    };
    Client::connect_over(
        ours,
        Counting(closes.clone()),
        ClientHandlers::new(),
        config,
    )
    .await
}

fn args(v: serde_json::Value) -> JsonObject {
    serde_json::from_value(v).unwrap()
}

#[tokio::test]
async fn typed_calls_in_both_eras_and_the_link_closes_once() {
    for (era, modern) in [(EraChoice::Legacy, false), (EraChoice::Auto, true)] {
        let closes = Arc::new(AtomicUsize::new(0));
        let client = connect(era, &closes).await.unwrap();
        assert_eq!(client.is_modern(), modern);
        assert_eq!(client.server().server_info.name, "in-process");
        let tools = client.list_tools().await.unwrap();
        assert_eq!(tools.len(), 1);
        let r = client
            .call_tool("echo", args(json!({"message":"hi"})))
            .await
            .unwrap();
        assert_eq!(r.content[0].as_text(), Some("hi"));
        let read = client.read_resource("test://readme").await.unwrap();
        assert_eq!(
            serde_json::to_value(&read.contents[0]).unwrap()["text"],
            "read me"
        );
        // The server declared no prompts: refused locally, nothing sent.
        let refused = client.list_prompts(None).await.unwrap_err();
        assert!(matches!(refused, CallError::Protocol(_)), "{refused:?}");
        client.ping().await.unwrap();
        assert_eq!(closes.load(Ordering::SeqCst), 0);
        client.close().await;
        assert_eq!(closes.load(Ordering::SeqCst), 1, "closed with the client");
    }
}

#[tokio::test]
async fn a_failed_handshake_closes_the_link() {
    // A modern-only client against a server that speaks only the handshake era.
    let legacy_only = Server::builder("old", "1")
        .config(mcp_server::ServerConfig {
            modern: false,
            ..mcp_server::ServerConfig::default()
        })
        .build()
        .unwrap();
    let (ours, theirs) = mcp_transport::duplex();
    tokio::spawn(async move { legacy_only.serve(theirs.incoming, theirs.outgoing).await });
    let closes = Arc::new(AtomicUsize::new(0));
    let config = ClientConfig {
        era: EraChoice::Modern,
        ..ClientConfig::default()
    };
    let r = Client::connect_over(
        ours,
        Counting(closes.clone()),
        ClientHandlers::new(),
        config,
    )
    .await;
    assert!(r.is_err());
    assert_eq!(closes.load(Ordering::SeqCst), 1);
}
