//! `oxmcp-bench --wire`: a TCP relay on 127.0.0.1 in front of the target that counts the bytes
//! each way, so that the bytes a call costs on the wire are measured, not estimated.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The relay's address and its counters.
pub(crate) struct Relay {
    pub(crate) addr: SocketAddr,
    sent: Arc<AtomicU64>,
    received: Arc<AtomicU64>,
}

impl Relay {
    /// A relay to `to`; it runs until the process ends.
    pub(crate) async fn start(to: SocketAddr) -> anyhow::Result<Relay> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let sent = Arc::new(AtomicU64::new(0));
        let received = Arc::new(AtomicU64::new(0));
        let (up, down) = (sent.clone(), received.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (up, down) = (up.clone(), down.clone());
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(to).await else {
                        return;
                    };
                    let _ = client.set_nodelay(true);
                    let _ = server.set_nodelay(true);
                    let (cr, cw) = client.into_split();
                    let (sr, sw) = server.into_split();
                    tokio::join!(copy(cr, sw, &up), copy(sr, cw, &down));
                });
            }
        });
        Ok(Relay {
            addr,
            sent,
            received,
        })
    }

    /// Bytes (client to server, server to client) since the last call, and resets.
    pub(crate) fn take(&self) -> (u64, u64) {
        (
            self.sent.swap(0, Ordering::Relaxed),
            self.received.swap(0, Ordering::Relaxed),
        )
    }
}

async fn copy(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    count: &AtomicU64,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        count.fetch_add(n as u64, Ordering::Relaxed);
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// `url` pointed at a relay in front of its host and port.
pub(crate) async fn relayed(url: &str) -> anyhow::Result<(String, Relay)> {
    let (scheme, rest) = url.split_once("://").context("--wire needs a URL")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let default_port = match scheme {
        "https" | "wss" | "grpcs" => 443,
        _ => 80,
    };
    let with_port = if authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        authority.to_owned()
    } else {
        format!("{authority}:{default_port}")
    };
    let to = tokio::net::lookup_host(&with_port)
        .await?
        .next()
        .with_context(|| format!("cannot resolve {with_port}"))?;
    let relay = Relay::start(to).await?;
    Ok((format!("{scheme}://{}{path}", relay.addr), relay))
}
