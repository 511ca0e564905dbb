//! Errors seen by callers of [`crate::Peer::request`].

use std::time::Duration;

use oxmcp_jsonrpc::ErrorObject;

/// Why a request did not produce a result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The peer answered with a JSON-RPC error.
    #[error("{0}")]
    Rpc(ErrorObject),
    /// No response within the timeout (a `notifications/cancelled` was sent).
    #[error("request timed out after {0:?}")]
    Timeout(Duration),
    /// The caller cancelled the request.
    #[error("request cancelled")]
    Cancelled,
    /// The transport could not deliver the request or bring back its answer (an HTTP
    /// error status without a JSON-RPC answer, a refused connection...).
    #[error("{0}")]
    Transport(oxmcp_jsonrpc::TransportError),
    /// The connection closed before a response arrived.
    #[error("connection closed")]
    Closed,
    /// The connection's outgoing queue is full: the other side is not reading. Only from the
    /// non-waiting sends ([`crate::Peer::notify_queued`]).
    #[error("the connection's outgoing queue is full (the peer is not reading)")]
    QueueFull,
    /// The connection is shutting down and takes no new requests.
    #[error("the connection is shutting down; no new requests are sent")]
    ShuttingDown,
    /// The result could not be decoded into the expected type.
    #[error("could not decode result: {0}")]
    Decode(#[from] serde_json::Error),
    /// The call is not allowed by the protocol (e.g. the peer lacks a capability).
    #[error("{0}")]
    Protocol(String),
}

impl CallError {
    /// The JSON-RPC error, if the peer answered with one.
    pub fn rpc(&self) -> Option<&ErrorObject> {
        match self {
            CallError::Rpc(e) => Some(e),
            _ => None,
        }
    }

    /// The transport's error, if the transport failed the request.
    pub fn transport(&self) -> Option<&oxmcp_jsonrpc::TransportError> {
        match self {
            CallError::Transport(e) => Some(e),
            _ => None,
        }
    }
}
