//! Serving a router on a TCP listener: TCP_NODELAY, a cap on connections, a header-read
//! timeout against slowloris, idle connections closed (HTTP/1 and HTTP/2 alike: a connection
//! with no request in progress), clients that stop reading disconnected, and graceful
//! shutdown (stop accepting, drain in-flight requests up to a deadline, close).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::ConnectInfo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Semaphore;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// Settings of [`serve_router_with`].
#[derive(Debug, Clone, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "", generate_private = false)]
pub struct ServeOptions {
    /// A connection must deliver a request's complete headers within this time, also while it
    /// sits idle between requests (slowloris protection). Default 30 s.
    pub header_read_timeout: Duration,
    /// After shutdown starts, in-flight requests have this long to finish before their
    /// connections are dropped. Default 10 s.
    pub drain_deadline: Duration,
    /// A connection with no request in progress (HTTP/1 keep-alive between requests, or an
    /// HTTP/2 connection with no open stream) and no bytes moved for this long is closed; so
    /// is one whose client has not taken any of the bytes written to it for this long (it
    /// stopped reading). Open SSE streams send keep-alive comments. Default 120 s.
    pub idle_timeout: Duration,
    /// Connections served at once; the next one waits in the listen backlog until one
    /// closes. Default 10,000.
    pub max_connections: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(30),
            drain_deadline: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            max_connections: 10_000,
        }
    }
}

/// Serves any router (for example Streamable HTTP merged with [`crate::LegacySse`]) with the
/// default [`ServeOptions`] until the future is dropped.
///
/// # Errors
/// I/O errors of the listener.
pub async fn serve_router(
    listener: tokio::net::TcpListener,
    router: axum::Router,
) -> std::io::Result<()> {
    serve_router_with(
        listener,
        router,
        ServeOptions::default(),
        std::future::pending(),
    )
    .await
}

/// Serves `router` on `listener` until `shutdown` completes; then stops accepting, lets
/// in-flight requests finish for up to `options.drain_deadline`, and returns.
///
/// Every connection gets TCP_NODELAY (small SSE events must not wait for Nagle's delay), the
/// header-read and idle timeouts, and its peer address as `ConnectInfo<SocketAddr>` in each
/// request's extensions (per-client limits count by it). HTTP/1.1 and HTTP/2 (prior
/// knowledge) are both served. To end long-lived SSE streams as part of the drain, cancel the
/// endpoints' shutdown token too ([`crate::HttpConfig::shutdown`]).
///
/// # Errors
/// I/O errors of the listener other than per-connection accept failures.
pub async fn serve_router_with(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(options.header_read_timeout);
    // HTTP/2 keep-alive pings (gRPC streams, long SSE streams) drop peers that stopped
    // answering.
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(Duration::from_secs(20)))
        .keep_alive_timeout(Duration::from_secs(20));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(options.max_connections.max(1)));
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            () = &mut shutdown => break,
            s = slots.clone().acquire_owned() => match s { Ok(s) => s, Err(_) => break },
        };
        let (tcp, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = tcp.set_nodelay(true);
        let (io, activity) = Watched::new(tcp);
        let service = connection_service(router.clone(), peer, activity.clone());
        let conn = builder
            .serve_connection_with_upgrades(TokioIo::new(io), service)
            .into_owned();
        let conn = graceful.watch(conn);
        let options = options.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let _open = crate::stats::Open::new(crate::stats::Transport::Connection);
            tokio::pin!(conn);
            tokio::select! {
                r = &mut conn => if let Err(e) = r {
                    tracing::debug!("connection ended: {e}");
                },
                why = watchdog(&activity, &options) => tracing::debug!("closing a connection: {why}"),
            }
        });
    }
    drop(listener);
    tracing::info!("shutting down: draining in-flight requests");
    if tokio::time::timeout(options.drain_deadline, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            "drain deadline of {:?} passed; closing the remaining connections",
            options.drain_deadline
        );
    }
    Ok(())
}

/// The router as one connection's hyper service: each request gets the peer address, and
/// counts as in progress until its response body is done (or dropped).
fn connection_service(
    router: axum::Router,
    peer: SocketAddr,
    activity: Activity,
) -> impl hyper::service::Service<
    hyper::Request<hyper::body::Incoming>,
    Response = axum::response::Response,
    Error = std::convert::Infallible,
    Future = impl Future<Output = Result<axum::response::Response, std::convert::Infallible>>
             + Send
             + 'static,
> + Clone
+ Send
+ 'static {
    hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
        req.extensions_mut().insert(ConnectInfo(peer));
        let guard = activity.begin();
        let router = router.clone();
        async move {
            let resp = router.oneshot(req.map(axum::body::Body::new)).await?;
            Ok(resp.map(|body| {
                axum::body::Body::new(Tracked {
                    body,
                    _guard: guard,
                })
            }))
        }
    })
}

/// Resolves when the connection should be closed, saying why.
async fn watchdog(activity: &Activity, options: &ServeOptions) -> &'static str {
    let idle = options.idle_timeout;
    loop {
        if let Some(blocked) = activity.write_blocked_for() {
            // The client has taken none of what was written to it for this long.
            if blocked >= idle {
                return "the client stopped reading";
            }
        }
        let wait = if activity.active() > 0 {
            // A request is being handled (or its stream is open): only a stalled writer ends it.
            idle.saturating_sub(activity.write_blocked_for().unwrap_or_default())
        } else {
            // hyper's header timer starts at a request's first byte; a connection that never
            // sends one (or sends nothing more after its last response) is closed here.
            let fresh = activity.fresh();
            let limit = if fresh {
                options.header_read_timeout
            } else {
                idle
            };
            let quiet = activity.quiet_for();
            if quiet >= limit {
                return "idle";
            }
            // A fresh connection that speaks becomes subject to the idle limit, which may
            // come sooner: wake up for whichever can end it first.
            let soonest = if fresh { limit.min(idle) } else { limit };
            soonest.saturating_sub(quiet)
        };
        tokio::time::sleep(wait.max(Duration::from_millis(10))).await;
    }
}

/// A response body that keeps its request counted as in progress until it is done.
struct Tracked {
    body: axum::body::Body,
    _guard: ActiveGuard,
}

impl axum::body::HttpBody for Tracked {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// A token cancelled on SIGTERM or Ctrl-C (SIGINT), for [`serve_router_with`] and the CLI.
///
/// The handlers are in place when this returns, so a signal that comes while the program is
/// still starting (connecting upstreams, say) is not the default action, which kills the
/// process without cleanup: it cancels the token, and the program drains when it gets there.
pub fn shutdown_on_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let t = token.clone();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return token;
        };
        tokio::spawn(async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            t.cancel();
        });
    }
    #[cfg(not(unix))]
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        t.cancel();
    });
    token
}

/// What a connection is doing, shared with its watchdog.
#[derive(Debug, Clone)]
struct Activity {
    start: std::time::Instant,
    /// Milliseconds since `start` of the last read or write; `u64::MAX` before any.
    last_ms: Arc<AtomicU64>,
    /// Milliseconds since `start` when a write first found the socket full, plus one; 0 when
    /// the last write went through.
    blocked_ms: Arc<AtomicU64>,
    /// Requests in progress (until their response bodies end).
    active: Arc<AtomicUsize>,
}

/// Counts one request as in progress while it lives.
struct ActiveGuard(Arc<AtomicUsize>);

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Activity {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX - 2)
    }

    fn touch(&self) {
        self.last_ms.store(self.now_ms(), Ordering::Relaxed);
    }

    fn begin(&self) -> ActiveGuard {
        self.active.fetch_add(1, Ordering::Relaxed);
        ActiveGuard(self.active.clone())
    }

    fn active(&self) -> usize {
        self.active.load(Ordering::Relaxed)
    }

    /// Nothing has been read or written yet.
    fn fresh(&self) -> bool {
        self.last_ms.load(Ordering::Relaxed) == u64::MAX
    }

    fn quiet_for(&self) -> Duration {
        let last = self.last_ms.load(Ordering::Relaxed);
        if last == u64::MAX {
            return self.start.elapsed();
        }
        self.start
            .elapsed()
            .saturating_sub(Duration::from_millis(last))
    }

    fn write_blocked(&self, blocked: bool) {
        if !blocked {
            self.blocked_ms.store(0, Ordering::Relaxed);
        } else if self.blocked_ms.load(Ordering::Relaxed) == 0 {
            self.blocked_ms.store(self.now_ms() + 1, Ordering::Relaxed);
        }
    }

    /// How long writes have been waiting for the client to read, if they are.
    fn write_blocked_for(&self) -> Option<Duration> {
        match self.blocked_ms.load(Ordering::Relaxed) {
            0 => None,
            since => Some(
                self.start
                    .elapsed()
                    .saturating_sub(Duration::from_millis(since - 1)),
            ),
        }
    }
}

/// A TCP stream that records when bytes last moved and whether writes are stuck.
#[derive(Debug)]
struct Watched {
    inner: tokio::net::TcpStream,
    activity: Activity,
}

impl Watched {
    fn new(inner: tokio::net::TcpStream) -> (Self, Activity) {
        let activity = Activity {
            start: std::time::Instant::now(),
            last_ms: Arc::new(AtomicU64::new(u64::MAX)),
            blocked_ms: Arc::new(AtomicU64::new(0)),
            active: Arc::new(AtomicUsize::new(0)),
        };
        (
            Self {
                inner,
                activity: activity.clone(),
            },
            activity,
        )
    }

    fn wrote(&self, r: &Poll<std::io::Result<usize>>) {
        match r {
            Poll::Ready(Ok(n)) if *n > 0 => {
                self.activity.touch();
                self.activity.write_blocked(false);
            }
            Poll::Pending => self.activity.write_blocked(true),
            _ => {}
        }
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, data);
        self.wrote(&r);
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.wrote(&r);
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
