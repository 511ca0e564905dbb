//! Process-wide counts of what the server transports hold open and what they refused, for
//! metrics (`oxmcp serve`'s `/metrics`): connections accepted by [`crate::serve_router_with`],
//! SSE streams, WebSocket connections and gRPC streams open now, Streamable HTTP sessions
//! parked, and refusals by HTTP status.
//! Plain atomics: counting costs a few nanoseconds and takes no lock.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// What is counted open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// TCP connections of an HTTP listener (every transport's, before it is told apart).
    Connection,
    /// Server-Sent Events streams (Streamable HTTP and the legacy HTTP+SSE transport).
    Sse,
    /// WebSocket connections.
    WebSocket,
    /// gRPC streams.
    Grpc,
}

impl Transport {
    /// Every kind, in a fixed order.
    pub const ALL: [Transport; 4] = [
        Transport::Connection,
        Transport::Sse,
        Transport::WebSocket,
        Transport::Grpc,
    ];

    /// Its label: `connection`, `sse`, `websocket`, `grpc`.
    pub fn label(self) -> &'static str {
        match self {
            Transport::Connection => "connection",
            Transport::Sse => "sse",
            Transport::WebSocket => "websocket",
            Transport::Grpc => "grpc",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

static OPEN: [AtomicI64; 4] = [const { AtomicI64::new(0) }; 4];

/// Streamable HTTP sessions parked now.
static PARKED: AtomicI64 = AtomicI64::new(0);

/// A parked session, counted while it stays parked (the guard lives in its link).
#[derive(Debug)]
pub(crate) struct Parked(());

impl Parked {
    pub(crate) fn new() -> Parked {
        PARKED.fetch_add(1, Ordering::Relaxed);
        Parked(())
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        PARKED.fetch_sub(1, Ordering::Relaxed);
    }
}

/// How many sessions of this process's Streamable HTTP endpoints are parked now: idle, with
/// no engine connection running for them (`HttpConfig::park_idle_after`). A server's own
/// count of the connections it serves (`oxmcp_server::Server::session_count`) leaves them
/// out until their next message starts one.
pub fn parked_sessions() -> i64 {
    PARKED.load(Ordering::Relaxed)
}

/// Refusals by status, 400 to 599.
static REFUSED: [AtomicU64; 200] = [const { AtomicU64::new(0) }; 200];

/// One open connection or stream, counted while it lives.
#[derive(Debug)]
pub struct Open(Transport);

impl Open {
    /// Counts one more `transport` open until the guard is dropped.
    pub fn new(transport: Transport) -> Open {
        OPEN[transport.index()].fetch_add(1, Ordering::Relaxed);
        Open(transport)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        OPEN[self.0.index()].fetch_sub(1, Ordering::Relaxed);
    }
}

/// How many `transport` are open now in this process.
pub fn open(transport: Transport) -> i64 {
    OPEN[transport.index()].load(Ordering::Relaxed)
}

/// Counts a refusal with this HTTP status (only 400 to 599 are counted).
pub(crate) fn refused(status: u16) {
    if let Some(n) = status
        .checked_sub(400)
        .and_then(|i| REFUSED.get(usize::from(i)))
    {
        n.fetch_add(1, Ordering::Relaxed);
    }
}

/// The refusals so far, by HTTP status (only statuses seen at least once).
pub fn refusals() -> Vec<(u16, u64)> {
    (400u16..600)
        .zip(&REFUSED)
        .map(|(status, n)| (status, n.load(Ordering::Relaxed)))
        .filter(|(_, n)| *n > 0)
        .collect()
}
