//! Presenting a fresh bearer token on an open WebSocket connection or gRPC `Connect`
//! stream, without dropping its session: the `oxmcp/authorize` request
//! (`docs/transports/websocket.md`, `docs/transports/grpc.md`).
//!
//! ```json
//! {"jsonrpc": "2.0", "id": "oxmcp-authorize-1", "method": "oxmcp/authorize",
//!  "params": {"token": "<a fresh access token>"}}
//! ```
//!
//! The transport answers it itself (it never reaches the MCP server): `{"expiresAt": EXP}`
//! (the token's `exp`, or `null`) once the token is verified and belongs to the connection's
//! principal, and the connection then runs on it; an error [`TOKEN_REFUSED`] otherwise, and
//! the connection keeps its old token. [`Reauthorizer`] is the client side: our WebSocket
//! and gRPC clients hand one out.

#[cfg(feature = "client")]
use std::collections::HashMap;
#[cfg(feature = "client")]
use std::sync::Arc;
#[cfg(feature = "client")]
use std::sync::atomic::{AtomicU64, Ordering};
#[cfg(feature = "client")]
use std::time::Duration;

#[cfg(feature = "client")]
use parking_lot::Mutex;
#[cfg(feature = "client")]
use tokio::sync::{mpsc, oneshot};

/// The method of the request that presents a fresh token.
pub const METHOD: &str = "oxmcp/authorize";

/// The JSON-RPC error code of a refused token (invalid, expired, revoked, short of the
/// scopes every request needs, or another principal's). `data.error` is `invalid_token` or
/// `insufficient_scope`.
pub const TOKEN_REFUSED: i64 = -32001;

#[cfg(feature = "client")]
/// The prefix of the ids our clients give their `oxmcp/authorize` requests; answers with
/// such an id are the transport's, not the engine's.
pub(crate) const ID_PREFIX: &str = "oxmcp-authorize-";

#[cfg(feature = "client")]
/// Why a fresh token was not taken.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ReauthorizeError {
    /// The server refused it; the connection keeps its old token.
    #[error("the server refused the token ({code}): {message}")]
    Refused {
        /// The JSON-RPC error code ([`TOKEN_REFUSED`], or -32601 from a server without
        /// `oxmcp/authorize`).
        code: i64,
        /// The error's message.
        message: String,
    },
    /// The connection is closed.
    #[error("the connection is closed")]
    Closed,
    /// No answer in time.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
}

#[cfg(feature = "client")]
/// A request to present a token, and where its outcome goes: what a [`Reauthorizer`] hands
/// its connection's transport, which sends it and keeps it in its [`Waiting`].
#[derive(Debug)]
pub struct Presented {
    /// The JSON of the `oxmcp/authorize` request.
    pub(crate) line: String,
    /// Its id.
    pub(crate) id: String,
    pub(crate) done: oneshot::Sender<Result<Option<u64>, ReauthorizeError>>,
}

#[cfg(feature = "client")]
/// Presents fresh tokens on one WebSocket connection or gRPC stream (from
/// `oxmcp_ws::client::WsLink::reauthorizer` or `oxmcp_grpc::client::GrpcLink::reauthorizer`).
/// Cheap to clone.
#[derive(Debug, Clone)]
pub struct Reauthorizer {
    tx: mpsc::Sender<Presented>,
    next: Arc<AtomicU64>,
}

#[cfg(feature = "client")]
impl Reauthorizer {
    /// A reauthorizer whose presented tokens go to the transport reading `tx`.
    pub fn new(tx: mpsc::Sender<Presented>) -> Self {
        Self {
            tx,
            next: Arc::new(AtomicU64::new(1)),
        }
    }

    /// Presents `token` (without `Bearer`): the connection runs on it from now on, and the
    /// token's `exp` (seconds since the epoch) if the server knows it.
    ///
    /// # Errors
    /// [`ReauthorizeError::Refused`] when the server did not take it (the old token stays),
    /// [`ReauthorizeError::Closed`] or [`ReauthorizeError::Timeout`] when it could not ask.
    pub async fn present(&self, token: &str) -> Result<Option<u64>, ReauthorizeError> {
        let id = format!("{ID_PREFIX}{}", self.next.fetch_add(1, Ordering::Relaxed));
        let line = serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": METHOD, "params": {"token": token},
        })
        .to_string();
        let (done, answer) = oneshot::channel();
        self.tx
            .send(Presented { line, id, done })
            .await
            .map_err(|_| ReauthorizeError::Closed)?;
        let wait = Duration::from_secs(30);
        match tokio::time::timeout(wait, answer).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => Err(ReauthorizeError::Closed),
            Err(_) => Err(ReauthorizeError::Timeout(wait)),
        }
    }
}

#[cfg(feature = "client")]
/// The client transport's side: requests sent and waiting for their answer.
#[derive(Debug, Default)]
pub struct Waiting {
    pending: Mutex<HashMap<String, Presented>>,
}

#[cfg(feature = "client")]
impl Waiting {
    /// Remembers a request about to be sent; its line.
    pub fn sent(&self, presented: Presented) -> String {
        let line = presented.line.clone();
        self.pending.lock().insert(presented.id.clone(), presented);
        line
    }

    /// If `frame` answers one of our requests, settles it and returns true (the frame is
    /// then not the engine's).
    pub fn answered(&self, frame: &[u8]) -> bool {
        if self.pending.lock().is_empty() || !contains(frame, ID_PREFIX.as_bytes()) {
            return false;
        }
        let Ok(answer) = serde_json::from_slice::<serde_json::Value>(frame) else {
            return false;
        };
        let Some(id) = answer.get("id").and_then(|v| v.as_str()) else {
            return false;
        };
        let Some(presented) = self.pending.lock().remove(id) else {
            return false;
        };
        let outcome = match answer.get("error") {
            Some(e) => Err(ReauthorizeError::Refused {
                code: e.get("code").and_then(|c| c.as_i64()).unwrap_or_default(),
                message: e
                    .get("message")
                    .and_then(|m| m.as_str())
                    .unwrap_or_default()
                    .to_owned(),
            }),
            None => Ok(answer["result"]["expiresAt"].as_u64()),
        };
        let _ = presented.done.send(outcome);
        true
    }
}

/// Whether `needle` occurs in `hay`.
#[cfg(any(feature = "server", feature = "client"))]
pub(crate) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}
