//! What crosses the transport boundary: [`Inbound`] from a transport to the engine,
//! [`Outbound`] from the engine to a transport, and the [`TransportError`] a transport
//! reports when it could not deliver a request.
//!
//! A transport turns bytes into [`Inbound::Frame`]s and writes the lines of
//! [`Outbound::Message`]s; the other variants are typed signals, never bytes on the wire.

use std::time::Duration;

use crate::error::ErrorCode;
use crate::id::RequestId;
use crate::message::{Message, Response};

/// What a transport knows about one incoming message, passed through the engine to its
/// handler untouched (Streamable HTTP passes the request's `http::Extensions`).
pub type TransportContext = std::sync::Arc<dyn std::any::Any + Send + Sync>;

/// What a transport hands to the engine.
///
/// 24 bytes: the two variants other than a frame are boxed, because a tokio channel of these
/// allocates a block of 32 slots when it is made and every engine connection (every HTTP
/// session, idle or not) has one. With 32-byte slots that block was 1,056 bytes, which
/// mimalloc rounds up to 1,280; with 24-byte slots it is 800 (896). Build them with
/// [`Inbound::decoded`] and [`Inbound::failed`].
#[derive(Debug, Clone)]
pub enum Inbound {
    /// One received JSON text (a message or a batch), not yet decoded.
    Frame(Vec<u8>),
    /// One message the transport has already decoded (under the same limits as a frame), so
    /// the engine does not decode it a second time. Streamable HTTP decodes each POST to
    /// find its ids and session before handing it on.
    Message(Box<Decoded>),
    /// The transport could not deliver one of our requests or bring back its answer: the
    /// request fails with this error instead of waiting for its timeout.
    Failed(Box<Failure>),
}

/// A message a transport has decoded ([`Inbound::Message`]).
#[derive(Debug, Clone)]
pub struct Decoded {
    /// The message.
    pub message: crate::Message,
    /// What the transport knows about the request that carried it, if anything (for HTTP,
    /// the request's extensions: the verified identity, what the user's middleware added);
    /// handlers see it.
    pub transport: Option<TransportContext>,
}

/// One of our requests that a transport could not deliver, or whose answer it could not
/// bring back ([`Inbound::Failed`]).
#[derive(Debug, Clone)]
pub struct Failure {
    /// The id of the request that failed.
    pub id: RequestId,
    /// Why.
    pub error: TransportError,
}

impl Inbound {
    /// [`Inbound::Message`]: `message`, decoded by the transport, with what it knows of the
    /// request that carried it.
    pub fn decoded(message: crate::Message, transport: Option<TransportContext>) -> Self {
        Inbound::Message(Box::new(Decoded { message, transport }))
    }

    /// [`Inbound::Failed`]: our request `id` failed with `error`.
    pub fn failed(id: RequestId, error: TransportError) -> Self {
        Inbound::Failed(Box::new(Failure { id, error }))
    }
}

impl From<Vec<u8>> for Inbound {
    fn from(bytes: Vec<u8>) -> Self {
        Inbound::Frame(bytes)
    }
}

/// What an outgoing message is, so that transports never parse a line to find out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutKind {
    /// A request we send, with its id and method.
    Request {
        /// The request's id.
        id: RequestId,
        /// The request's method.
        method: String,
    },
    /// A notification we send, with its method.
    Notification {
        /// The notification's method.
        method: String,
    },
    /// A response: the last message of the request it answers.
    Response {
        /// Its error code, if it is an error response (`None`: a result).
        error: Option<ErrorCode>,
    },
    /// A batch of responses (JSON-RPC batches, protocol 2025-03-26): the last message of
    /// the batch's requests.
    Batch {
        /// Each entry's id and error code, in the batch's order.
        entries: Vec<Answered>,
    },
}

/// How one response answered its request, as its transport needs to know without reading
/// its line: the HTTP status of an error, whose state change to share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    /// The id of the request it answers (`None`: an error about an unreadable request).
    pub id: Option<RequestId>,
    /// Its error code, if it is an error response (`None`: a result).
    pub error: Option<ErrorCode>,
}

impl Answered {
    /// How `response` answers its request.
    pub fn of(response: &Response) -> Self {
        Answered {
            id: response.id.clone(),
            error: response.outcome.as_ref().err().map(|e| e.code),
        }
    }
}

impl OutKind {
    /// The kind of `message`: a request's id and method, a notification's method, a
    /// response's error code.
    pub fn of(message: &Message) -> Self {
        match message {
            Message::Request(r) => OutKind::Request {
                id: r.id.clone(),
                method: r.method.clone(),
            },
            Message::Notification(n) => OutKind::Notification {
                method: n.method.clone(),
            },
            Message::Response(r) => OutKind::Response {
                error: r.outcome.as_ref().err().map(|e| e.code),
            },
        }
    }

    /// The kind of a batch answer made of `replies` (responses; anything else in it is
    /// left out of [`OutKind::Batch::entries`]).
    pub fn of_batch(replies: &[Message]) -> Self {
        let entries = replies
            .iter()
            .filter_map(|m| match m {
                Message::Response(r) => Some(Answered::of(r)),
                _ => None,
            })
            .collect();
        OutKind::Batch { entries }
    }
}

/// An encoded message on its way out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutMessage {
    /// The encoded message (one line of JSON).
    pub line: String,
    /// The incoming request this message belongs to (its response, or a notification or
    /// request sent while handling it), if any. HTTP uses it to pick the stream.
    pub related: Option<RequestId>,
    /// What the message is.
    pub kind: OutKind,
}

impl OutMessage {
    /// Whether this is a response (or a batch of them): the last message of its related
    /// request.
    pub fn is_response(&self) -> bool {
        matches!(self.kind, OutKind::Response { .. } | OutKind::Batch { .. })
    }

    /// The error code of an error response (`None` for a result, a batch, or anything else).
    pub fn error_code(&self) -> Option<ErrorCode> {
        match self.kind {
            OutKind::Response { error } => error,
            _ => None,
        }
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match &self.kind {
            OutKind::Request { method, .. } | OutKind::Notification { method } => Some(method),
            OutKind::Response { .. } | OutKind::Batch { .. } => None,
        }
    }

    /// The id of a request we send.
    pub fn request_id(&self) -> Option<&RequestId> {
        match &self.kind {
            OutKind::Request { id, .. } => Some(id),
            _ => None,
        }
    }
}

/// What the engine hands to a transport.
///
/// Every variant is boxed, so that this is 16 bytes: a tokio channel of these allocates a
/// block of 32 slots when it is made, and every engine connection (every HTTP session, idle
/// or not) has one. With 32-byte slots that block was 1,056 bytes, which allocators round up
/// to 1,280 (mimalloc) or 1,072 (glibc); with 16-byte slots it is 544. Build the other two
/// with [`Outbound::close_stream`] and [`Outbound::ended`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outbound {
    /// A message to write.
    Message(Box<OutMessage>),
    /// End the stream of incoming request `id` without ending the request: its remaining
    /// messages wait for the client to resume (Streamable HTTP polling). Transports with one
    /// stream ignore it.
    CloseStream(Box<RequestId>),
    /// Incoming request `id` ended without a response (it was cancelled), so its stream can
    /// end. Transports with one stream ignore it.
    Ended(Box<RequestId>),
}

impl Outbound {
    /// [`Outbound::CloseStream`] for incoming request `id`.
    pub fn close_stream(id: RequestId) -> Self {
        Outbound::CloseStream(Box::new(id))
    }

    /// [`Outbound::Ended`] for incoming request `id`.
    pub fn ended(id: RequestId) -> Self {
        Outbound::Ended(Box::new(id))
    }

    /// A message that belongs to no particular request.
    pub fn unrelated(line: String, kind: OutKind) -> Self {
        Outbound::Message(Box::new(OutMessage {
            line,
            related: None,
            kind,
        }))
    }

    /// The message, if this is one.
    pub fn message(&self) -> Option<&OutMessage> {
        match self {
            Outbound::Message(m) => Some(m),
            _ => None,
        }
    }

    /// The line to write, if this is a message.
    pub fn line(&self) -> Option<&str> {
        self.message().map(|m| m.line.as_str())
    }

    /// The incoming request this belongs to, if any.
    pub fn related(&self) -> Option<&RequestId> {
        match self {
            Outbound::Message(m) => m.related.as_ref(),
            Outbound::CloseStream(id) | Outbound::Ended(id) => Some(id),
        }
    }

    /// Whether this ends its related request: a response, or [`Outbound::Ended`].
    pub fn ends_request(&self) -> bool {
        match self {
            Outbound::Message(m) => m.is_response(),
            Outbound::Ended(_) => true,
            Outbound::CloseStream(_) => false,
        }
    }
}

/// Why a transport could not deliver a request or bring back its answer. Retry policies
/// and supervisors decide on it: an HTTP 503 is worth retrying, a 401 is not.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The server answered with an HTTP error status and no JSON-RPC answer.
    #[error("{message}")]
    Http {
        /// The HTTP status code.
        status: u16,
        /// The `Retry-After` delay, when the answer had one (delay-seconds form).
        retry_after: Option<Duration>,
        /// The `Location` of a redirect that was not followed.
        location: Option<String>,
        /// What went wrong, for people (`HTTP 503 Service Unavailable`, or why a redirect
        /// was refused).
        message: String,
        /// The start of the answer's body (at most 2,000 characters).
        body: String,
    },
    /// The request got no answer at all: connection refused or reset, DNS, TLS.
    #[error("transport I/O failed: {0}")]
    Io(String),
    /// An answer came but could not be used: too large, not UTF-8, the wrong content type,
    /// or a stream that ended before the response.
    #[error("unusable answer: {0}")]
    Invalid(String),
    /// The message cannot be sent at all: the transport has no channel to the other side for
    /// it (a Streamable HTTP server answering with JSON bodies, whose client has no GET
    /// stream open, cannot send the client a request).
    #[error("{0}")]
    Unreachable(String),
}

impl TransportError {
    /// The HTTP status, for [`TransportError::Http`].
    pub fn status(&self) -> Option<u16> {
        match self {
            TransportError::Http { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The `Retry-After` delay the server asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            TransportError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}
#[cfg(test)]
mod sizes {
    use super::*;

    /// Each channel of these holds its first 32 slots from the start: a session has an input
    /// and an output channel, so every byte here is 32 bytes of every idle session.
    #[test]
    fn channel_items_stay_small() {
        // 24: the engine's input channel's first block is 800 bytes, not 1,056.
        assert!(
            size_of::<Inbound>() <= 24,
            "Inbound is {} bytes",
            size_of::<Inbound>()
        );
        // 16: the engine's output channel's first block is 544 bytes, not 1,056 (which
        // allocators round up to 1,280 or 1,072).
        assert!(
            size_of::<Outbound>() <= 16,
            "Outbound is {} bytes",
            size_of::<Outbound>()
        );
    }
}
