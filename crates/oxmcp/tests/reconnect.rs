//! `remote::supervise` over WebSocket and gRPC: the connection is cut by a TCP proxy, the
//! call in flight fails, the client reconnects with backoff once the network is back, and a
//! new legacy session is initialized.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use oxmcp::client::{RetryPolicy, Status, SupervisorConfig, SupervisorError};
use oxmcp::remote::{Remote, supervise};
use oxmcp::server::{Ctx, Server};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Sleep {
    ms: u64,
}

fn server() -> Server {
    Server::builder("reconnect-test", "1")
        .tool("sleep", "sleeps ms", |_c: Ctx, a: Sleep| async move {
            tokio::time::sleep(Duration::from_millis(a.ms)).await;
            Ok::<_, String>(format!("slept {}", a.ms))
        })
        .build()
        .unwrap()
}

/// WebSocket and gRPC for [`server`] on one port; its address.
async fn serve() -> std::net::SocketAddr {
    let config = oxmcp::http::HttpConfig::default();
    let ws = oxmcp::ws::WebSocket::new(server(), config.clone(), Default::default());
    let grpc = oxmcp::grpc::Grpc::new(server(), config);
    let router = oxmcp::grpc::split(ws.router(), grpc.router());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(oxmcp::http::serve_router(listener, router));
    addr
}

/// A TCP proxy whose connections can be cut, and which can refuse new ones ("the network
/// is down").
struct Proxy {
    addr: std::net::SocketAddr,
    down: Arc<AtomicBool>,
    links: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Proxy {
    async fn start(to: std::net::SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let down = Arc::new(AtomicBool::new(false));
        let links: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let (d, l) = (down.clone(), links.clone());
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if d.load(Ordering::SeqCst) {
                    drop(inbound);
                    continue;
                }
                let link = tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(to).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                l.lock().await.push(link);
            }
        });
        Proxy { addr, down, links }
    }

    /// Cuts every connection and refuses new ones.
    async fn cut(&self) {
        self.down.store(true, Ordering::SeqCst);
        for link in self.links.lock().await.drain(..) {
            link.abort();
        }
    }

    fn restore(&self) {
        self.down.store(false, Ordering::SeqCst);
    }
}

fn quick() -> SupervisorConfig {
    SupervisorConfig::default()
        .backoff(
            RetryPolicy::default()
                .base_delay(Duration::from_millis(50))
                .max_delay(Duration::from_millis(300)),
        )
        .max_restarts(50)
}

async fn generation(s: &oxmcp::client::Supervised) -> Option<u64> {
    match s.status() {
        Status::Up { generation, .. } => Some(generation),
        _ => None,
    }
}

async fn reconnects_after_a_cut(scheme: &str, path: &str) {
    let proxy = Proxy::start(serve().await).await;
    let url = format!("{scheme}://{}{path}", proxy.addr);
    let s = Arc::new(supervise(&url, Remote::default(), quick()));
    let args = |ms: u64| json!({"ms": ms}).as_object().cloned().unwrap();
    let r = s
        .call(|c| async move { c.call_tool("sleep", args(1)).await })
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("slept 1"));
    assert_eq!(generation(&s).await, Some(1));

    // A call in flight when the connection is cut fails at once, reported as lost.
    let pending = {
        let s = s.clone();
        tokio::spawn(async move {
            s.call(|c| async move { c.call_tool("sleep", args(10_000)).await })
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    proxy.cut().await;
    let lost = tokio::time::timeout(Duration::from_secs(5), pending)
        .await
        .expect("the cut call ends")
        .unwrap();
    assert!(matches!(lost, Err(SupervisorError::Lost(_))), "{lost:?}");

    // While the network is down it keeps trying; once it is back, a new session.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(generation(&s).await, None, "down while the network is");
    proxy.restore();
    let mut up = None;
    for _ in 0..100 {
        up = generation(&s).await;
        if up.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(up, Some(2), "reconnected once, with a new handshake");
    let r = s
        .call(|c| async move { c.call_tool("sleep", args(2)).await })
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("slept 2"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_reconnects_after_a_cut() {
    reconnects_after_a_cut("ws", "/ws").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_reconnects_after_a_cut() {
    reconnects_after_a_cut("grpc", "").await;
}
