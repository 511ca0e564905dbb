//! Serving a router on a TCP listener: TCP_NODELAY, a header-read timeout against slowloris,
//! and graceful shutdown (stop accepting, drain in-flight requests up to a deadline, close).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio_util::sync::CancellationToken;

/// Settings of [`serve_router_with`].
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// A connection must deliver a request's complete headers within this time, also while it
    /// sits idle between requests (slowloris protection). Default 30 s.
    pub header_read_timeout: Duration,
    /// After shutdown starts, in-flight requests have this long to finish before their
    /// connections are dropped. Default 10 s.
    pub drain_deadline: Duration,
    /// A connection waiting this long for its next request (nothing moved since its last
    /// response bytes) is closed; a request being handled is not timed, and open SSE streams
    /// send keep-alive comments. Default 120 s.
    pub idle_timeout: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(30),
            drain_deadline: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
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
/// Every connection gets TCP_NODELAY (small SSE events must not wait for Nagle's delay) and
/// the header-read timeout. HTTP/1.1 and HTTP/2 (prior knowledge) are both served. To end
/// long-lived SSE streams as part of the drain, cancel the endpoints' shutdown token too
/// ([`crate::HttpConfig::shutdown`]); [`crate::StreamableHttp::serve_until`] does both.
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
    builder.http2().timer(TokioTimer::new());
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let service = TowerToHyperService::new(router);
    tokio::pin!(shutdown);
    loop {
        let (tcp, _) = tokio::select! {
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
        let first_byte = options.header_read_timeout;
        let idle = options.idle_timeout;
        let (io, activity) = Watched::new(tcp);
        let conn = builder
            .serve_connection_with_upgrades(TokioIo::new(io), service.clone())
            .into_owned();
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            tokio::pin!(conn);
            // hyper's header timer starts at a request's first byte; a connection that never
            // sends one is closed here.
            let watchdog = async {
                loop {
                    // After a read a request is being handled, which may take long; only
                    // a connection waiting for its next request is timed.
                    if activity.state() == State::Handling {
                        tokio::time::sleep(idle).await;
                        continue;
                    }
                    let limit = if activity.state() == State::Fresh {
                        first_byte
                    } else {
                        idle
                    };
                    let quiet = activity.quiet_for();
                    if quiet >= limit {
                        return;
                    }
                    tokio::time::sleep(limit.saturating_sub(quiet).max(Duration::from_millis(10)))
                        .await;
                }
            };
            tokio::select! {
                r = &mut conn => if let Err(e) = r {
                    tracing::debug!("connection ended: {e}");
                },
                () = watchdog => tracing::debug!("closing an idle connection"),
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

/// A token cancelled on SIGTERM or Ctrl-C, for [`serve_router_with`] and the CLI.
pub fn shutdown_on_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let Ok(mut term) = signal(SignalKind::terminate()) else {
                return;
            };
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        t.cancel();
    });
    token
}

/// Last activity of a connection, shared with its watchdog.
#[derive(Debug, Clone)]
struct Activity {
    start: std::time::Instant,
    /// Milliseconds since `start` of the last read or write.
    last_ms: Arc<AtomicU64>,
    /// 0: nothing read yet; 1: the last bytes moved were read; 2: written.
    state: Arc<std::sync::atomic::AtomicU8>,
}

#[derive(Debug, PartialEq, Eq)]
enum State {
    Fresh,
    Handling,
    Waiting,
}

impl Activity {
    fn touch(&self, read: bool) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX - 1);
        self.last_ms.store(ms, Ordering::Relaxed);
        self.state
            .store(if read { 1 } else { 2 }, Ordering::Relaxed);
    }

    fn state(&self) -> State {
        match self.state.load(Ordering::Relaxed) {
            0 => State::Fresh,
            1 => State::Handling,
            _ => State::Waiting,
        }
    }

    fn quiet_for(&self) -> Duration {
        let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.start.elapsed().saturating_sub(last)
    }
}

/// A TCP stream that records when bytes last moved.
#[derive(Debug)]
struct Watched {
    inner: tokio::net::TcpStream,
    activity: Activity,
}

impl Watched {
    fn new(inner: tokio::net::TcpStream) -> (Self, Activity) {
        let activity = Activity {
            start: std::time::Instant::now(),
            last_ms: Arc::new(AtomicU64::new(0)),
            state: Arc::new(std::sync::atomic::AtomicU8::new(0)),
        };
        (
            Self {
                inner,
                activity: activity.clone(),
            },
            activity,
        )
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
            self.activity.touch(true);
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
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch(false);
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch(false);
        }
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
