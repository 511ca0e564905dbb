//! What a connection dispatches incoming requests and notifications to.

use futures::future::BoxFuture;
use oxmcp_jsonrpc::{ErrorObject, Notification, RawJson, Request, RequestId};
use tokio_util::sync::CancellationToken;

use crate::peer::Peer;

/// The response a handler produces.
pub type HandlerResult = Result<RawJson, ErrorObject>;

/// Context of one incoming request.
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// The request id.
    pub id: RequestId,
    /// The connection, for notifications and requests back to the sender.
    pub peer: Peer,
    /// Cancelled when the sender cancels the request. The handler keeps running for
    /// [`crate::EngineConfig::cancel_grace`] after that (so it can notice, clean up and
    /// return), then is aborted; either way no response is sent, and requests through
    /// `peer` fail with [`crate::CallError::Cancelled`] (its notifications still go out). When the connection is
    /// killed (the other side stopped reading) the token fires and the handlers are aborted
    /// at once.
    pub cancel: CancellationToken,
    /// Cancelled when the connection's input has ended: no more requests will come, and
    /// long-lived requests (subscriptions) should wind down.
    pub closing: CancellationToken,
    /// What the transport knows about the request (for Streamable HTTP, the HTTP request's
    /// `http::Extensions`, with the verified [`crate::Identity`] among them).
    pub transport: Option<oxmcp_jsonrpc::TransportContext>,
}

/// Handles one connection's incoming traffic. Server sessions and clients implement it.
///
/// `call` and `notify` run on the message loop in arrival order: their synchronous part is
/// where state transitions (such as the handshake) belong. The future `call` returns runs
/// concurrently with other requests. A request a transport answers through
/// [`crate::Direct`] has its `call` run on the transport's task instead, once the loop has
/// handled everything the transport fed it before.
pub trait Service: Send + Sync + 'static {
    /// Starts handling a request.
    fn call(&self, request: Request, ctx: RequestContext) -> BoxFuture<'static, HandlerResult>;

    /// Handles a notification (other than cancellation and progress, which the engine owns).
    fn notify(&self, notification: Notification, peer: &Peer);

    /// Whether JSON-RPC batches are allowed right now (only on protocol 2025-03-26).
    fn batch_allowed(&self) -> bool {
        false
    }

    /// Whether a request with this method may be cancelled (`initialize` may not).
    fn cancellable(&self, method: &str) -> bool {
        method != "initialize"
    }
}
