//! Fault injection: a TCP proxy on 127.0.0.1 between the client and a Streamable HTTP server
//! that drops connections before forwarding and in the middle of responses (SSE streams
//! included), delays them, and answers 503 with `Retry-After`. The retrying client must
//! complete every safe call exactly once and report the unsafe ones it could not finish,
//! which the server carried out at most once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use oxmcp_client::{ClientConfig, ClientHandlers, RetryPolicy};
use oxmcp_http::{HttpClientConfig, HttpConfig, ResponseMode, ServeOptions, StreamableHttp};
use oxmcp_server::{Ctx, Server};
use oxmcp_types::{JsonObject, Tool, ToolAnnotations};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

mod common;
use common::{connect_with, serve, until};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct N {
    n: u64,
}

type Counts = Arc<Mutex<HashMap<u64, u32>>>;

fn server(gets: Counts, bumps: Counts) -> Server {
    Server::builder("faulty-net", "1")
        .typed_tool(
            Tool::default()
                .with_name("get".into())
                .with_description(Some("reads n (read-only, safe to repeat)".into()))
                .with_annotations(Some(
                    ToolAnnotations::default().with_read_only_hint(Some(true)),
                )),
            move |_c: Ctx, a: N| {
                let gets = gets.clone();
                async move {
                    *gets.lock().unwrap().entry(a.n).or_default() += 1;
                    Ok::<_, String>(a.n.to_string())
                }
            },
        )
        .tool(
            "bump",
            "changes state (not safe to repeat)",
            move |_c: Ctx, a: N| {
                let bumps = bumps.clone();
                async move {
                    *bumps.lock().unwrap().entry(a.n).or_default() += 1;
                    Ok::<_, String>(a.n.to_string())
                }
            },
        )
        .build()
        .unwrap()
}

#[derive(Default, Debug)]
struct Tally {
    connections: AtomicU64,
    /// Connections being handled now.
    open: AtomicU64,
    passed: AtomicU64,
    delayed: AtomicU64,
    refused_503: AtomicU64,
    dropped_before: AtomicU64,
    dropped_mid: AtomicU64,
}

enum Fault {
    Pass,
    Delay,
    Busy,
    DropBefore,
    DropMid(usize),
}

struct Proxy {
    upstream: std::net::SocketAddr,
    tally: Tally,
    rng: AtomicU64,
    armed: std::sync::atomic::AtomicBool,
}

impl Proxy {
    fn next(&self) -> u64 {
        // xorshift64*, shared by all connections.
        let mut x = self.rng.load(Ordering::Relaxed);
        loop {
            let mut y = x;
            y ^= y >> 12;
            y ^= y << 25;
            y ^= y >> 27;
            match self
                .rng
                .compare_exchange(x, y, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return y.wrapping_mul(0x2545_f491_4f6c_dd1d),
                Err(now) => x = now,
            }
        }
    }

    fn fault(&self) -> Fault {
        if !self.armed.load(Ordering::Relaxed) {
            return Fault::Pass;
        }
        match self.next() % 100 {
            0..=54 => Fault::Pass,
            55..=64 => Fault::Delay,
            65..=69 => Fault::Busy,
            70..=79 => Fault::DropBefore,
            _ => Fault::DropMid(40 + (self.next() % 400) as usize),
        }
    }
}

async fn serve_proxy(proxy: Arc<Proxy>, listener: TcpListener) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            return;
        };
        let proxy = proxy.clone();
        tokio::spawn(async move {
            proxy.tally.connections.fetch_add(1, Ordering::Relaxed);
            proxy.tally.open.fetch_add(1, Ordering::Relaxed);
            handle(proxy.clone(), client).await;
            proxy.tally.open.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

async fn handle(proxy: Arc<Proxy>, mut client: TcpStream) {
    let t = &proxy.tally;
    match proxy.fault() {
        Fault::DropBefore => {
            t.dropped_before.fetch_add(1, Ordering::Relaxed);
            drop(client);
        }
        Fault::Busy => {
            t.refused_503.fetch_add(1, Ordering::Relaxed);
            // Read the request head, then refuse it without forwarding.
            let mut buf = vec![0u8; 16 * 1024];
            let _ = tokio::time::timeout(Duration::from_secs(1), client.read(&mut buf)).await;
            let _ = client
                .write_all(
                    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbusy",
                )
                .await;
        }
        fault @ (Fault::Delay | Fault::Pass | Fault::DropMid(_)) => {
            let Ok(upstream) = TcpStream::connect(proxy.upstream).await else {
                return;
            };
            let _ = upstream.set_nodelay(true);
            let (mut cr, mut cw) = client.into_split();
            let (mut ur, mut uw) = upstream.into_split();
            let up = tokio::spawn(async move {
                let _ = tokio::io::copy(&mut cr, &mut uw).await;
                let _ = uw.shutdown().await;
            });
            let budget = match fault {
                Fault::Delay => {
                    t.delayed.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    None
                }
                Fault::DropMid(n) => {
                    t.dropped_mid.fetch_add(1, Ordering::Relaxed);
                    Some(n)
                }
                _ => {
                    t.passed.fetch_add(1, Ordering::Relaxed);
                    None
                }
            };
            let mut sent = 0usize;
            let mut buf = vec![0u8; 8192];
            loop {
                let n = match ur.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let n = match budget {
                    Some(b) if sent + n >= b => {
                        let _ = cw.write_all(&buf[..b - sent]).await;
                        break; // cut mid-response
                    }
                    _ => n,
                };
                if cw.write_all(&buf[..n]).await.is_err() {
                    break;
                }
                sent += n;
            }
            up.abort();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_retrying_client_survives_a_faulty_network() {
    let gets: Counts = Arc::default();
    let bumps: Counts = Arc::default();
    let http = StreamableHttp::new(
        server(gets.clone(), bumps.clone()),
        HttpConfig::default()
            .response_mode(ResponseMode::Sse)
            .sse_retry(Duration::from_millis(20)),
    );
    let upstream = serve(http, Default::default(), ServeOptions::default()).await;
    let proxy = Arc::new(Proxy {
        upstream: upstream.addr,
        tally: Tally::default(),
        rng: AtomicU64::new(0x9e37_79b9_7f4a_7c15),
        armed: false.into(),
    });
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(serve_proxy(proxy.clone(), listener));

    let http = HttpClientConfig::default()
        .reuse_connections(false) // one request per connection: each can be faulted
        .standalone_stream(false)
        .default_retry(Duration::from_millis(20))
        .max_reconnect_delay(Duration::from_millis(200));
    let config = ClientConfig::default().retry(
        RetryPolicy::default()
            .max_attempts(8)
            .base_delay(Duration::from_millis(10))
            .max_delay(Duration::from_millis(200))
            .attempt_timeout(Some(Duration::from_secs(5))),
    );
    let (client, _handle) = connect_with(&url, http, ClientHandlers::new(), config).await;
    let client = Arc::new(client.unwrap());
    // Learn which tools are safe (annotations), then turn the faults on once the handshake's
    // three requests (one connection each; `initialized` is POSTed in the background) are done.
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools.len(), 2);
    let t = &proxy.tally;
    assert!(
        until(10, || {
            t.connections.load(Ordering::Relaxed) >= 3 && t.open.load(Ordering::Relaxed) == 0
        })
        .await,
        "the handshake's connections ended: {t:?}"
    );
    proxy.armed.store(true, Ordering::Relaxed);

    const SAFE: u64 = 200;
    const UNSAFE: u64 = 60;
    let mut tasks = tokio::task::JoinSet::new();
    let sem = Arc::new(tokio::sync::Semaphore::new(8));
    for n in 0..SAFE + UNSAFE {
        let client = client.clone();
        let sem = sem.clone();
        tasks.spawn(async move {
            let _p = sem.acquire().await.unwrap();
            let (tool, key) = if n < SAFE { ("get", n) } else { ("bump", n) };
            let mut args = JsonObject::new();
            args.insert("n".into(), key.into());
            (n, client.call_tool(tool, args).await)
        });
    }
    let mut safe_ok = 0;
    let mut unsafe_ok = Vec::new();
    let mut unsafe_reported = Vec::new();
    while let Some(r) = tasks.join_next().await {
        let (n, result) = r.unwrap();
        match result {
            Ok(res) => {
                assert_eq!(
                    res.content[0].as_text(),
                    Some(n.to_string().as_str()),
                    "no mix-ups"
                );
                if n < SAFE {
                    safe_ok += 1;
                } else {
                    unsafe_ok.push(n);
                }
            }
            Err(e) => {
                assert!(n >= SAFE, "safe call {n} failed: {e}");
                let text = e.to_string();
                assert!(!text.is_empty());
                unsafe_reported.push((n, text));
            }
        }
    }
    assert_eq!(safe_ok, SAFE, "every safe call completed");
    let bumps = bumps.lock().unwrap().clone();
    assert!(!unsafe_ok.is_empty(), "some unsafe calls completed");
    for n in &unsafe_ok {
        assert_eq!(
            bumps.get(n),
            Some(&1),
            "a completed unsafe call ran exactly once"
        );
    }
    for (n, _) in &unsafe_reported {
        assert!(bumps.get(n).copied().unwrap_or(0) <= 1, "never repeated");
    }
    assert_eq!(unsafe_ok.len() + unsafe_reported.len(), UNSAFE as usize);
    let t = &proxy.tally;
    let faults = t.delayed.load(Ordering::Relaxed)
        + t.refused_503.load(Ordering::Relaxed)
        + t.dropped_before.load(Ordering::Relaxed)
        + t.dropped_mid.load(Ordering::Relaxed);
    assert!(faults > 50, "the network was faulty: {t:?}");
    assert!(
        !unsafe_reported.is_empty(),
        "some unsafe calls had to be reported"
    );
    let executions: u32 = gets.lock().unwrap().values().sum();
    eprintln!(
        "fault proxy: {} connections ({} passed, {} delayed, {} answered 503, {} dropped before forwarding, {} cut mid-response); \
         safe calls {safe_ok}/{SAFE} completed ({executions} executions on the server); unsafe calls {} completed, {} reported (e.g. {:?})",
        t.connections.load(Ordering::Relaxed),
        t.passed.load(Ordering::Relaxed),
        t.delayed.load(Ordering::Relaxed),
        t.refused_503.load(Ordering::Relaxed),
        t.dropped_before.load(Ordering::Relaxed),
        t.dropped_mid.load(Ordering::Relaxed),
        unsafe_ok.len(),
        unsafe_reported.len(),
        unsafe_reported
            .first()
            .map(|(_, e)| e.as_str())
            .unwrap_or(""),
    );
}
