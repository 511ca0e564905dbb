//! A connection's outgoing queue, and what happens when the other side stops reading.
//!
//! Sends wait while the transport's queue is full (backpressure). With a stall timeout set
//! (network transports), a send that waits longer than that means the client stopped
//! reading: the connection is killed, every waiting send fails, and nothing else waits for
//! that client any more. Messages meant for many connections at once ([`Outbox::queue`])
//! never wait: when the transport's queue is full they wait in a bounded overflow queue of
//! their own, in order, drained by a task (past its bound they are dropped, with a warning
//! from the caller).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use std::time::Duration;

use oxmcp_jsonrpc::Outbound;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The connection is gone (closed by the transport, or killed for not reading).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gone;

/// Why [`Outbox::queue`] did not take a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The connection is gone.
    Gone,
    /// The overflow queue is full: the message is dropped.
    Full,
}

#[derive(Default)]
struct Overflow {
    queue: VecDeque<Outbound>,
    draining: bool,
}

pub(crate) struct Outbox {
    out: mpsc::Sender<Outbound>,
    stall: Option<Duration>,
    max_overflow: usize,
    overflow: Mutex<Overflow>,
    killed: CancellationToken,
    /// Set with `killed`: what every send checks (a token's `is_cancelled` takes a lock).
    dead: AtomicBool,
}

impl Outbox {
    pub(crate) fn new(
        out: mpsc::Sender<Outbound>,
        stall: Option<Duration>,
        max_overflow: usize,
    ) -> Arc<Self> {
        Arc::new(Self {
            out,
            stall,
            max_overflow: max_overflow.max(1),
            overflow: Mutex::new(Overflow::default()),
            killed: CancellationToken::new(),
            dead: AtomicBool::new(false),
        })
    }

    fn lock(&self) -> parking_lot::MutexGuard<'_, Overflow> {
        self.overflow.lock()
    }

    /// Cancelled when the connection is killed (for not reading, or by [`Outbox::stop`]),
    /// to wait on. Kill it through those, never by cancelling this token.
    pub(crate) fn killed(&self) -> &CancellationToken {
        &self.killed
    }

    /// Whether the connection is killed.
    pub(crate) fn is_killed(&self) -> bool {
        self.dead.load(Ordering::Acquire)
    }

    pub(crate) fn kill(&self, why: &str) {
        if !self.dead.swap(true, Ordering::AcqRel) {
            tracing::warn!("closing a connection: {why}");
            self.killed.cancel();
        }
    }

    /// Kills the connection without a warning: it is gone (see [`crate::Direct`]).
    pub(crate) fn stop(&self) {
        self.dead.store(true, Ordering::Release);
        self.killed.cancel();
    }

    /// Sends, waiting while the queue is full (at most the stall timeout, if set).
    pub(crate) async fn send(&self, m: Outbound) -> Result<(), Gone> {
        if self.is_killed() {
            return Err(Gone);
        }
        let m = match self.out.try_send(m) {
            Ok(()) => return Ok(()),
            Err(mpsc::error::TrySendError::Closed(_)) => return Err(Gone),
            Err(mpsc::error::TrySendError::Full(m)) => m,
        };
        // Boxed: what waiting holds (the send, a timer, the kill's future) would otherwise
        // be in the future of every send, and of every task that sends, waiting or not.
        Box::pin(self.send_waiting(m)).await
    }

    /// Sends `m` once the transport's queue has room (see [`Outbox::send`]).
    async fn send_waiting(&self, m: Outbound) -> Result<(), Gone> {
        let send = self.out.send(m);
        match self.stall {
            Some(limit) => tokio::select! {
                r = tokio::time::timeout(limit, send) => match r {
                    Ok(r) => r.map_err(|_| Gone),
                    Err(_) => {
                        self.kill(&format!("the client took nothing for {limit:?} (it stopped reading)"));
                        Err(Gone)
                    }
                },
                () = self.killed.cancelled() => Err(Gone),
            },
            None => tokio::select! {
                r = send => r.map_err(|_| Gone),
                () = self.killed.cancelled() => Err(Gone),
            },
        }
    }

    /// Sends without waiting; a full or closed queue drops the message.
    pub(crate) fn try_send(&self, m: Outbound) -> Result<(), mpsc::error::TrySendError<Outbound>> {
        if self.is_killed() {
            return Err(mpsc::error::TrySendError::Closed(m));
        }
        self.out.try_send(m)
    }

    /// Sends without ever waiting, keeping order with other queued messages: when the
    /// transport's queue is full the message waits in the overflow queue, which a task
    /// drains (and which the stall timeout, if set, ends for a client that stopped reading).
    /// Past `max_overflow` waiting messages, new ones are dropped.
    pub(crate) fn queue(self: &Arc<Self>, m: Outbound) -> Result<(), Refused> {
        if self.is_killed() {
            return Err(Refused::Gone);
        }
        let mut o = self.lock();
        if !o.draining {
            match self.out.try_send(m) {
                Ok(()) => return Ok(()),
                Err(mpsc::error::TrySendError::Closed(_)) => return Err(Refused::Gone),
                Err(mpsc::error::TrySendError::Full(m)) => {
                    o.queue.push_back(m);
                    o.draining = true;
                    drop(o);
                    let me = self.clone();
                    tokio::spawn(async move { me.drain().await });
                    return Ok(());
                }
            }
        }
        if o.queue.len() >= self.max_overflow {
            return Err(Refused::Full);
        }
        o.queue.push_back(m);
        Ok(())
    }

    async fn drain(self: Arc<Self>) {
        loop {
            let next = {
                let mut o = self.lock();
                match o.queue.pop_front() {
                    Some(m) => m,
                    None => {
                        o.draining = false;
                        return;
                    }
                }
            };
            if self.send(next).await.is_err() {
                let mut o = self.lock();
                o.queue.clear();
                o.draining = false;
                return;
            }
        }
    }

    /// Resolves when the transport stops reading this connection's output.
    pub(crate) async fn closed(&self) {
        self.out.closed().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: usize) -> Outbound {
        let kind = oxmcp_jsonrpc::OutKind::Notification {
            method: "m".to_owned(),
        };
        Outbound::unrelated(format!("m{n}"), kind)
    }

    #[tokio::test]
    async fn queued_messages_keep_their_order_and_never_wait() {
        let (tx, mut rx) = mpsc::channel(2);
        let ob = Outbox::new(tx, Some(Duration::from_secs(5)), 100);
        for n in 0..50 {
            ob.queue(line(n)).unwrap();
        }
        let mut got = Vec::new();
        for _ in 0..50 {
            got.push(rx.recv().await.unwrap().line().unwrap().to_owned());
        }
        assert_eq!(got, (0..50).map(|n| format!("m{n}")).collect::<Vec<_>>());
    }

    #[tokio::test(start_paused = true)]
    async fn a_reader_that_stays_full_is_killed() {
        let (tx, _rx) = mpsc::channel(1);
        let ob = Outbox::new(tx, Some(Duration::from_secs(5)), 10);
        ob.send(line(0)).await.unwrap();
        // The queue is full and nobody reads: the send gives up after the stall timeout.
        assert_eq!(ob.send(line(1)).await, Err(Gone));
        assert!(ob.killed().is_cancelled());
        assert_eq!(ob.queue(line(2)), Err(Refused::Gone));
        // Queued messages of a stuck reader end the same way, without anyone waiting.
        let (tx, _rx) = mpsc::channel(1);
        let ob = Outbox::new(tx, Some(Duration::from_secs(5)), 10);
        for n in 0..5 {
            ob.queue(line(n)).unwrap();
        }
        tokio::time::sleep(Duration::from_secs(6)).await;
        assert!(ob.killed().is_cancelled());
    }

    #[tokio::test]
    async fn without_a_stall_timeout_overflow_is_dropped_not_killed() {
        let (tx, _rx) = mpsc::channel(1);
        let ob = Outbox::new(tx, None, 3);
        let outcomes: Vec<_> = (0..20).map(|n| ob.queue(line(n))).collect();
        assert!(outcomes.contains(&Err(Refused::Full)));
        assert!(!outcomes.contains(&Err(Refused::Gone)));
        assert!(!ob.killed().is_cancelled());
    }
}
