//! A supervised connection: reconnects (or restarts a child server) with backoff when the
//! connection dies or stops answering heartbeats, and detects crash loops.
//!
//! [`Supervised`] owns a *connector*, a function that makes a fresh, initialized [`Client`]
//! (spawning a stdio server, or opening an HTTP session). While the client is up, callers get
//! it from [`Supervised::client`]; when it dies, requests in flight fail with
//! [`CallError::Closed`] (reported by [`Supervised::call`] as [`SupervisorError::Lost`]), a new
//! client is connected after a backoff, and the handshake is redone. More than
//! `max_restarts` restarts within `restart_window` is a crash loop: it is reported
//! ([`Status::CrashLoop`], an error log) and no restart is tried for `crash_loop_cooldown`,
//! instead of spinning. [`Supervised::recycle`] replaces a healthy connection on purpose (its
//! owner no longer trusts what may still arrive on it): at once, and not counted as a crash.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use oxmcp_engine::CallError;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::client::{Client, ConnectError};
use crate::retry::RetryPolicy;

/// Makes a fresh, initialized client.
pub type Connector =
    Arc<dyn Fn() -> BoxFuture<'static, Result<Client, ConnectError>> + Send + Sync>;

/// Periodic `ping` to find a peer that is alive but no longer answering.
#[derive(Debug, Clone)]
pub struct Heartbeat {
    /// Time between pings.
    pub interval: Duration,
    /// How long one ping may take.
    pub timeout: Duration,
    /// Consecutive failed pings that declare the peer dead.
    pub misses: u32,
}

impl Default for Heartbeat {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(30),
            timeout: Duration::from_secs(10),
            misses: 3,
        }
    }
}

/// Settings of a [`Supervised`] connection.
#[derive(Debug, Clone, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "", generate_private = false)]
pub struct SupervisorConfig {
    /// Delay before each reconnection (`base_delay` doubling to `max_delay`, full jitter);
    /// `max_attempts` is not used.
    pub backoff: RetryPolicy,
    /// Restarts within `restart_window` beyond which the connection is in a crash loop.
    pub max_restarts: u32,
    /// The window for `max_restarts`.
    pub restart_window: Duration,
    /// How long a crash loop waits before trying again.
    pub crash_loop_cooldown: Duration,
    /// Optional heartbeat (legacy sessions answer `ping`; so do modern servers).
    pub heartbeat: Option<Heartbeat>,
    /// How long [`Supervised::client`] waits for a restart in progress.
    pub wait_for_restart: Duration,
}

impl Default for SupervisorConfig {
    fn default() -> Self {
        Self {
            backoff: RetryPolicy::default()
                .base_delay(Duration::from_millis(200))
                .max_delay(Duration::from_secs(30)),
            max_restarts: 5,
            restart_window: Duration::from_secs(60),
            crash_loop_cooldown: Duration::from_secs(60),
            heartbeat: None,
            wait_for_restart: Duration::from_secs(10),
        }
    }
}

/// Where a supervised connection stands.
#[derive(Clone)]
pub enum Status {
    /// Connected. `generation` counts connections made (1 for the first).
    Up {
        /// The live client.
        client: Arc<Client>,
        /// 1 for the first connection, +1 per restart.
        generation: u64,
    },
    /// Down, reconnecting.
    Restarting {
        /// Reconnection attempts since it went down.
        attempt: u32,
        /// Why the last attempt (or the connection) failed.
        reason: String,
    },
    /// Too many restarts in the window; waiting out the cooldown.
    CrashLoop {
        /// Restarts counted in the window.
        restarts: u32,
        /// The last failure.
        reason: String,
        /// When the next attempt is made.
        until: Instant,
    },
    /// [`Supervised::stop`] was called.
    Stopped,
}

impl std::fmt::Debug for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Up { generation, .. } => write!(f, "Up(generation {generation})"),
            Status::Restarting { attempt, reason } => {
                write!(f, "Restarting(attempt {attempt}: {reason})")
            }
            Status::CrashLoop {
                restarts, reason, ..
            } => write!(f, "CrashLoop({restarts} restarts: {reason})"),
            Status::Stopped => write!(f, "Stopped"),
        }
    }
}

/// Why a supervised call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SupervisorError {
    /// The call itself failed (the server answered with an error, timed out, ...).
    #[error(transparent)]
    Call(CallError),
    /// The connection died while the request was in flight; it was not retried (it may or
    /// may not have been carried out). The connection is being restored.
    #[error("the server connection was lost while the request was in flight ({0}); reconnecting")]
    Lost(String),
    /// No connection now: it is being restored and did not come back in time.
    #[error("the server is down ({0}); reconnecting")]
    Down(String),
    /// The server keeps failing: restarts are paused.
    #[error(
        "the server is in a crash loop ({restarts} restarts; last: {reason}); next attempt in {wait:?}"
    )]
    CrashLoop {
        /// Restarts counted.
        restarts: u32,
        /// The last failure.
        reason: String,
        /// Time until the next attempt.
        wait: Duration,
    },
    /// The supervisor was stopped.
    #[error("the connection was stopped")]
    Stopped,
}

struct Shared {
    status: watch::Sender<Status>,
    stop: CancellationToken,
    config: SupervisorConfig,
    /// Heartbeats the server answered, over every connection.
    heartbeats: std::sync::atomic::AtomicU64,
    /// The generation [`Supervised::recycle`] asked to replace (0: none).
    recycle: AtomicU64,
    recycled: Notify,
}

/// A connection kept alive by a supervisor task. Cheap to clone.
#[derive(Clone)]
pub struct Supervised {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Supervised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervised")
            .field("status", &*self.shared.status.borrow())
            .finish()
    }
}

impl Supervised {
    /// Starts supervising: connects at once (in the background) and keeps the connection up.
    pub fn start(connector: Connector, config: SupervisorConfig) -> Self {
        let (status, _) = watch::channel(Status::Restarting {
            attempt: 0,
            reason: "connecting".to_owned(),
        });
        let shared = Arc::new(Shared {
            status,
            stop: CancellationToken::new(),
            config,
            heartbeats: std::sync::atomic::AtomicU64::new(0),
            recycle: AtomicU64::new(0),
            recycled: Notify::new(),
        });
        tokio::spawn(supervise(shared.clone(), connector));
        Self { shared }
    }

    /// Heartbeats the server has answered so far, over every connection (a health figure:
    /// it grows while heartbeats are configured and the server is up).
    pub fn heartbeats_answered(&self) -> u64 {
        self.shared
            .heartbeats
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Supervises a stdio server: `program args...` is spawned (and re-spawned) as a child.
    #[cfg(feature = "child")]
    pub fn spawn(
        program: impl Into<String>,
        args: Vec<String>,
        handlers: crate::ClientHandlers,
        client: crate::ClientConfig,
        config: SupervisorConfig,
    ) -> Self {
        let program = program.into();
        let connector: Connector = Arc::new(move || {
            let program = program.clone();
            let args = args.clone();
            let handlers = handlers.clone();
            let client = client.clone();
            Box::pin(async move { Client::spawn(&program, &args, handlers, client).await })
        });
        Self::start(connector, config)
    }

    /// The current status.
    pub fn status(&self) -> Status {
        self.shared.status.borrow().clone()
    }

    /// Status changes (for example to announce tools going away and coming back).
    pub fn watch(&self) -> watch::Receiver<Status> {
        self.shared.status.subscribe()
    }

    /// The live client, waiting up to `wait_for_restart` if a reconnection is under way.
    ///
    /// # Errors
    /// [`SupervisorError::Down`], [`SupervisorError::CrashLoop`] or
    /// [`SupervisorError::Stopped`].
    pub async fn client(&self) -> Result<Arc<Client>, SupervisorError> {
        let mut rx = self.shared.status.subscribe();
        let deadline = Instant::now() + self.shared.config.wait_for_restart;
        loop {
            let status = rx.borrow_and_update().clone();
            match status {
                Status::Up { client, .. } if !client.is_closed() => return Ok(client),
                Status::Up { .. } => {}
                Status::Stopped => return Err(SupervisorError::Stopped),
                Status::CrashLoop {
                    restarts,
                    reason,
                    until,
                } => {
                    return Err(SupervisorError::CrashLoop {
                        restarts,
                        reason,
                        wait: until.saturating_duration_since(Instant::now()),
                    });
                }
                Status::Restarting { .. } => {}
            }
            let reason = match &*rx.borrow() {
                Status::Restarting { reason, .. } => reason.clone(),
                _ => "connection closed".to_owned(),
            };
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return Err(SupervisorError::Stopped),
                Err(_) => return Err(SupervisorError::Down(reason)),
            }
        }
    }

    /// Runs `f` with the live client. A request lost because the connection died becomes
    /// [`SupervisorError::Lost`]; it is not repeated.
    ///
    /// # Errors
    /// See [`SupervisorError`].
    pub async fn call<T, F, Fut>(&self, f: F) -> Result<T, SupervisorError>
    where
        F: FnOnce(Arc<Client>) -> Fut,
        Fut: Future<Output = Result<T, CallError>>,
    {
        let client = self.client().await?;
        match f(client).await {
            Ok(v) => Ok(v),
            Err(CallError::Closed) => Err(SupervisorError::Lost("the server went away".to_owned())),
            Err(e) => Err(SupervisorError::Call(e)),
        }
    }

    /// Replaces `client`, if it is still the current connection, with a new one: at once, with
    /// no backoff, and not counted towards a crash loop. The status leaves `Up` before this
    /// returns (it is [`Status::Restarting`] with `attempt` 0 until the new connection is up),
    /// so nobody gets `client` from the supervisor again; requests still in flight on it fail
    /// with [`CallError::Closed`] when it is closed. For an owner that no longer trusts what
    /// may still arrive on a connection. Returns whether `client` was replaced.
    pub fn recycle(&self, client: &Arc<Client>) -> bool {
        let mut replaced = false;
        self.shared.status.send_if_modified(|status| match status {
            Status::Up {
                client: current,
                generation,
            } if Arc::ptr_eq(current, client) => {
                self.shared.recycle.store(*generation, Ordering::Release);
                *status = Status::Restarting {
                    attempt: 0,
                    reason: "recycled".to_owned(),
                };
                replaced = true;
                true
            }
            _ => false,
        });
        if replaced {
            self.shared.recycled.notify_one();
        }
        replaced
    }

    /// Stops supervising and shuts the current connection down.
    pub async fn stop(&self) {
        self.shared.stop.cancel();
        let status = self.shared.status.send_replace(Status::Stopped);
        if let Status::Up { client, .. } = status {
            client.close_transport().await;
        }
    }
}

/// Waits until the client dies: its connection ends, or `misses` heartbeats fail in a row.
async fn until_dead(
    client: &Client,
    heartbeat: Option<&Heartbeat>,
    answered: &std::sync::atomic::AtomicU64,
) -> String {
    let Some(hb) = heartbeat else {
        client.closed().await;
        return "the connection closed".to_owned();
    };
    let mut missed = 0u32;
    loop {
        tokio::select! {
            () = client.closed() => return "the connection closed".to_owned(),
            () = tokio::time::sleep(hb.interval) => {}
        }
        // `Client::ping` speaks the client's era (2026-07-28 has no ping: server/discover).
        let ping = match tokio::time::timeout(hb.timeout, client.ping()).await {
            Ok(r) => r,
            Err(_) => Err(CallError::Timeout(hb.timeout)),
        };
        match ping {
            Ok(_) => {
                missed = 0;
                answered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            Err(CallError::Closed) => return "the connection closed".to_owned(),
            Err(e) => {
                missed += 1;
                tracing::warn!(missed, "heartbeat failed: {e}");
                if missed >= hb.misses.max(1) {
                    return format!("{missed} heartbeats missed (last: {e})");
                }
            }
        }
    }
}

/// What ended a connection.
enum Ended {
    /// [`Supervised::stop`].
    Stopped,
    /// [`Supervised::recycle`]: a new one is made at once.
    Recycled,
    /// It closed or stopped answering heartbeats: why.
    Died(String),
}

/// Publishes `client` as connection `generation` and watches it until it ends; it is closed
/// then (a hung child is shut down: stdin, SIGTERM, SIGKILL) unless the supervisor stopped.
async fn serve_connection(shared: &Shared, client: Arc<Client>, generation: u64) -> Ended {
    if generation > 1 {
        tracing::info!(generation, "reconnected");
    }
    shared.status.send_replace(Status::Up {
        client: client.clone(),
        generation,
    });
    let heartbeat = shared.config.heartbeat.as_ref();
    let reason = tokio::select! {
        () = shared.stop.cancelled() => {
            // `stop` closes the connection it finds `Up`; one being recycled is not.
            if shared.recycle.load(Ordering::Acquire) == generation {
                client.close_transport().await;
            }
            return Ended::Stopped;
        }
        r = until_dead(&client, heartbeat, &shared.heartbeats) => r,
        () = recycled(shared, generation) => {
            client.close_transport().await;
            tracing::debug!(generation, "connection recycled");
            return Ended::Recycled;
        }
    };
    if let Some(exit) = client.close_transport().await {
        tracing::warn!(?exit, "server went down: {reason}");
    } else {
        tracing::warn!("server went down: {reason}");
    }
    Ended::Died(reason)
}

/// Resolves once [`Supervised::recycle`] asked to replace connection `generation`.
async fn recycled(shared: &Shared, generation: u64) {
    loop {
        let notified = shared.recycled.notified();
        if shared.recycle.load(Ordering::Acquire) == generation {
            return;
        }
        notified.await;
    }
}

async fn supervise(shared: Arc<Shared>, connector: Connector) {
    let config = &shared.config;
    let mut restarts: VecDeque<Instant> = VecDeque::new();
    let mut generation = 0u64;
    let mut attempt = 0u32;
    loop {
        if shared.stop.is_cancelled() {
            return;
        }
        let result = tokio::select! {
            () = shared.stop.cancelled() => return,
            r = connector() => r,
        };
        let reason = match result {
            Ok(client) => {
                generation += 1;
                attempt = 0;
                match serve_connection(&shared, Arc::new(client), generation).await {
                    Ended::Stopped => return,
                    Ended::Recycled => continue,
                    Ended::Died(reason) => reason,
                }
            }
            Err(e) => format!("connecting failed: {e}"),
        };
        if shared.stop.is_cancelled() {
            return;
        }
        let now = Instant::now();
        restarts.push_back(now);
        while restarts
            .front()
            .is_some_and(|t| now.duration_since(*t) > config.restart_window)
        {
            restarts.pop_front();
        }
        let counted = u32::try_from(restarts.len()).unwrap_or(u32::MAX);
        let delay = if counted > config.max_restarts {
            tracing::error!(
                restarts = counted,
                window = ?config.restart_window,
                "crash loop: pausing restarts for {:?} (last failure: {reason})",
                config.crash_loop_cooldown
            );
            shared.status.send_replace(Status::CrashLoop {
                restarts: counted,
                reason,
                until: now + config.crash_loop_cooldown,
            });
            restarts.clear();
            attempt = 0;
            config.crash_loop_cooldown
        } else {
            attempt += 1;
            shared
                .status
                .send_replace(Status::Restarting { attempt, reason });
            config.backoff.backoff(attempt - 1)
        };
        tokio::select! {
            () = shared.stop.cancelled() => return,
            () = tokio::time::sleep(delay) => {}
        }
    }
}
