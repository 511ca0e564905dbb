//! The sending half of a connection: ids, pending requests, timeouts, progress.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

use parking_lot::Mutex;

use oxmcp_jsonrpc::{Message, OutKind, OutMessage, Outbound, RawJson, RequestId, to_raw};
use oxmcp_types::CancelledParams;
use oxmcp_types::methods::{Notification as NotificationMethod, Request as RequestMethod};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::CallError;
use crate::options::{EngineConfig, ProgressCallback, RequestOptions};
use crate::outbox::{Outbox, Refused};

mod answers;

type Outcome = Result<RawJson, CallError>;

struct Pending {
    tx: oneshot::Sender<Outcome>,
    on_progress: Option<ProgressCallback>,
    /// Woken by progress to restart the timeout; only requests that asked for progress have it.
    touched: Option<Arc<Notify>>,
}

pub(crate) struct Inner {
    out: Arc<Outbox>,
    next_id: AtomicI64,
    pending: Mutex<HashMap<i64, Pending>>,
    closed: AtomicBool,
    /// Set by [`Peer::drain`]: no new requests.
    draining: AtomicBool,
    /// Progress notifications that matched no request awaiting its answer.
    unmatched_progress: AtomicU64,
}

/// A handle to one connection: send requests and notifications to the other side.
///
/// Cheap to clone. Ids are integers, allocated monotonically per connection, never reused.
/// A peer handed to a request handler is *scoped* to that request: what it sends is marked as
/// belonging to the request, so transports with several streams (HTTP) can deliver it on the
/// request's own stream.
#[derive(Clone)]
pub struct Peer {
    pub(crate) inner: Arc<Inner>,
    related: Option<RequestId>,
    /// The cancellation of the request a handler's peer serves: once it fired, nothing the
    /// handler sends goes out (it may still be winding down).
    silenced: Option<CancellationToken>,
    /// Set when this peer first sends something (a handler's peer that is asked to tell).
    spoke: Option<Arc<crate::direct::Spoke>>,
}

impl fmt::Debug for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Peer")
            .field("next_id", &self.inner.next_id.load(Ordering::Relaxed))
            .field("closed", &self.is_closed())
            .finish()
    }
}

async fn progress_touch(touched: Option<&Notify>) {
    match touched {
        Some(n) => n.notified().await,
        None => std::future::pending().await,
    }
}

struct PendingGuard<'a> {
    peer: &'a Peer,
    id: i64,
    armed: bool,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if self.armed && self.peer.take_pending(self.id).is_some() {
            // The caller gave up (future dropped): tell the other side.
            self.peer
                .send_cancelled(self.id, "request cancelled by caller");
        }
    }
}

impl Peer {
    /// A peer writing encoded messages to `out`, waiting as long as it takes when `out` is
    /// full (no stall timeout).
    pub fn new(out: mpsc::Sender<Outbound>) -> Self {
        Self::with_config(out, &EngineConfig::default())
    }

    /// A peer writing to `out` with the outgoing-queue settings of `config`
    /// ([`EngineConfig::stall_timeout`], [`EngineConfig::max_overflow`]).
    pub fn with_config(out: mpsc::Sender<Outbound>, config: &EngineConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                out: Outbox::new(out, config.stall_timeout, config.max_overflow),
                next_id: AtomicI64::new(config.first_request_id),
                pending: Mutex::new(HashMap::new()),
                closed: AtomicBool::new(false),
                draining: AtomicBool::new(false),
                unmatched_progress: AtomicU64::new(0),
            }),
            related: None,
            silenced: None,
            spoke: None,
        }
    }

    /// The same connection, with everything sent marked as belonging to request `id`.
    pub fn scoped(&self, id: RequestId) -> Peer {
        Peer {
            inner: self.inner.clone(),
            related: Some(id),
            silenced: None,
            spoke: None,
        }
    }

    /// The peer of the handler of request `id`: scoped to it, and once `cancel` fired its
    /// requests fail with [`CallError::Cancelled`] (a handler winding down after its
    /// cancellation asks the client nothing more). Its notifications still go out: a
    /// cancelled request's last words (a log line) reach the client that sent it. `spoke`, if
    /// given, is set when the handler first sends something.
    pub(crate) fn for_handler(
        &self,
        id: RequestId,
        cancel: CancellationToken,
        spoke: Option<Arc<crate::direct::Spoke>>,
    ) -> Peer {
        Peer {
            inner: self.inner.clone(),
            related: Some(id),
            silenced: Some(cancel),
            spoke,
        }
    }

    /// Notes that this peer sends something.
    fn speaks(&self) {
        if let Some(spoke) = &self.spoke {
            spoke.set();
        }
    }

    /// Whether this is the peer of a cancelled request's handler.
    fn silenced(&self) -> bool {
        self.silenced
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled)
    }

    /// The request this peer is scoped to, if any.
    pub fn related(&self) -> Option<&RequestId> {
        self.related.as_ref()
    }

    fn outbound(&self, line: String, kind: OutKind) -> Outbound {
        self.speaks();
        Outbound::Message(Box::new(OutMessage {
            line,
            related: self.related.clone(),
            kind,
        }))
    }

    /// A response to the request this peer is scoped to, ready for the transport.
    pub(crate) fn response(&self, response: &Message) -> Outbound {
        self.outbound(response.encode(), OutKind::of(response))
    }

    /// Sends a response to the request this peer is scoped to.
    pub(crate) async fn send_response(&self, response: &Message) {
        let out = self.outbound(response.encode(), OutKind::of(response));
        let _ = self.inner.out.send(out).await;
    }

    /// Sends the answer to a batch (one array of `replies`, in order) to the batch's first
    /// request, which this peer is scoped to.
    pub(crate) async fn send_batch(&self, replies: &[Message]) {
        let line = oxmcp_jsonrpc::encode_batch(replies);
        let out = self.outbound(line, OutKind::of_batch(replies));
        let _ = self.inner.out.send(out).await;
    }

    /// Cancelled when the connection is killed because the other side stopped reading (or
    /// by [`Peer::kill_connection`]).
    pub(crate) fn killed(&self) -> &tokio_util::sync::CancellationToken {
        self.inner.out.killed()
    }

    /// Kills the connection: it is gone, and nothing more is sent on it.
    pub(crate) fn kill_connection(&self) {
        self.inner.out.stop();
    }

    /// Queues an error response without waiting; drops it (with a log) if the queue is full.
    pub(crate) fn try_send_response(&self, response: &Message) {
        let out = self.outbound(response.encode(), OutKind::of(response));
        if let Err(e) = self.inner.out.try_send(out) {
            tracing::warn!("outgoing queue full or closed; dropped a response: {e}");
        }
    }

    /// Tells the transport that the request this peer is scoped to ended without a response
    /// (it was cancelled), so that its stream can end. Never waits: queued in order behind
    /// what is waiting already.
    pub(crate) fn try_send_ended(&self) {
        if let Some(id) = self.related.clone()
            && self.inner.out.queue(Outbound::ended(id)).is_err()
        {
            tracing::debug!("could not tell the transport a cancelled request ended");
        }
    }

    /// Whether the connection has closed.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    /// Resolves when nobody reads this connection's output any more (the client went away).
    pub async fn output_closed(&self) {
        self.inner.out.closed().await;
    }

    /// Stops sending new requests (they fail with [`CallError::ShuttingDown`]); requests
    /// already sent still get their responses. See [`Peer::wait_idle`].
    pub fn drain(&self) {
        self.inner.draining.store(true, Ordering::Release);
    }

    /// Resolves once no outgoing request awaits a response (or the connection closed).
    pub async fn wait_idle(&self) {
        while self.pending_count() > 0 && !self.is_closed() {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }

    fn refuse_new(&self) -> Option<CallError> {
        if self.is_closed() {
            Some(CallError::Closed)
        } else if self.silenced() {
            Some(CallError::Cancelled)
        } else if self.inner.draining.load(Ordering::Acquire) {
            Some(CallError::ShuttingDown)
        } else {
            None
        }
    }

    /// Handles on this connection alive now (clones and scoped peers alike).
    pub(crate) fn handles(&self) -> usize {
        Arc::strong_count(&self.inner)
    }

    /// Number of outgoing requests awaiting a response.
    pub fn pending_count(&self) -> usize {
        self.lock_pending().len()
    }

    /// The id the next request sent on this connection gets (ids only grow): with
    /// [`Peer::pending_since`], what was sent from now on.
    pub fn next_id(&self) -> i64 {
        self.inner.next_id.load(Ordering::Relaxed)
    }

    /// Outgoing requests awaiting a response whose id is `first` or later (see
    /// [`Peer::next_id`]).
    pub fn pending_since(&self, first: i64) -> usize {
        self.lock_pending()
            .keys()
            .filter(|id| **id >= first)
            .count()
    }

    /// Progress notifications received so far that matched no request awaiting its answer
    /// (one cancelled or timed out, say): they are dropped, and counted here, so that the
    /// owner of the connection can tell the other side is still working on such a request.
    pub fn unmatched_progress(&self) -> u64 {
        self.inner.unmatched_progress.load(Ordering::Relaxed)
    }

    fn lock_pending(&self) -> parking_lot::MutexGuard<'_, HashMap<i64, Pending>> {
        self.inner.pending.lock()
    }

    fn take_pending(&self, id: i64) -> Option<Pending> {
        self.lock_pending().remove(&id)
    }

    /// Asks the transport to end the stream of the request this peer is scoped to, without
    /// ending the request: its remaining messages are kept for the client to fetch when it
    /// resumes (Streamable HTTP polling). A no-op on transports with a single stream.
    pub async fn close_stream(&self) {
        if let Some(id) = self.related.clone() {
            self.speaks();
            let _ = self.inner.out.send(Outbound::close_stream(id)).await;
        }
    }

    /// Sends an already-encoded message of the given kind.
    ///
    /// # Errors
    /// [`CallError::Closed`] if the connection is gone.
    pub async fn send_raw(&self, line: String, kind: OutKind) -> Result<(), CallError> {
        if self.silenced() && matches!(kind, OutKind::Request { .. }) {
            tracing::debug!("a cancelled request's handler sent a request; refused");
            return Err(CallError::Cancelled);
        }
        let out = self.outbound(line, kind);
        self.inner
            .out
            .send(out)
            .await
            .map_err(|_| CallError::Closed)
    }

    /// Sends a message.
    ///
    /// # Errors
    /// [`CallError::Closed`] if the connection is gone.
    pub async fn send(&self, message: &Message) -> Result<(), CallError> {
        self.send_raw(message.encode(), OutKind::of(message)).await
    }

    /// Sends a typed notification.
    ///
    /// # Errors
    /// [`CallError::Closed`] if the connection is gone.
    pub async fn notify<N: NotificationMethod>(&self, params: &N::Params) -> Result<(), CallError> {
        self.notify_raw(N::METHOD, params).await
    }

    /// Sends a notification with any serializable params.
    ///
    /// # Errors
    /// [`CallError::Closed`] if the connection is gone.
    pub async fn notify_raw<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<(), CallError> {
        let msg = Message::notification(method, &params)?;
        self.send(&msg).await
    }

    /// Sends a notification without waiting, for messages that go to many connections at once
    /// (a broadcast must never wait for one slow client). When the connection's queue is
    /// full the message waits in a bounded overflow queue, in order; a client whose queue
    /// stays full past [`EngineConfig::stall_timeout`] is disconnected.
    ///
    /// # Errors
    /// [`CallError::QueueFull`] if the overflow queue is full too (the message is dropped),
    /// [`CallError::Closed`] if the connection is gone.
    pub fn notify_queued<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<(), CallError> {
        let msg = Message::notification(method, &params)?;
        self.inner
            .out
            .queue(self.outbound(
                msg.encode(),
                OutKind::Notification {
                    method: method.to_owned(),
                },
            ))
            .map_err(|e| match e {
                Refused::Full => CallError::QueueFull,
                Refused::Gone => CallError::Closed,
            })
    }

    /// Sends a typed request and waits for its typed result.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn request<R: RequestMethod>(
        &self,
        params: &R::Params,
        options: &RequestOptions,
    ) -> Result<R::Result, CallError> {
        self.request_as(R::METHOD, params, options).await
    }

    /// Sends a request with any params and decodes the result as `T`.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn request_as<P: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        options: &RequestOptions,
    ) -> Result<T, CallError> {
        let raw = if options.on_progress.is_some() || options.meta.is_some() {
            // The progress token and extra entries go into `_meta`, which needs the params
            // as a JSON value.
            self.request_raw(method, serde_json::to_value(params)?, options)
                .await?
        } else {
            self.send_request(method, Some(to_raw(params)?), options)
                .await?
        };
        Ok(serde_json::from_str(raw.get())?)
    }

    /// Sends a request and returns the raw result.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn request_raw(
        &self,
        method: &str,
        params: Value,
        options: &RequestOptions,
    ) -> Result<RawJson, CallError> {
        let id = self.reserve_id();
        self.request_raw_with_id(id, method, params, options).await
    }

    /// Takes the next request id without sending anything (for a caller that must know the
    /// id of a request before sending it, e.g. to match a subscription to it).
    pub fn reserve_id(&self) -> i64 {
        self.inner.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends a request under an id from [`Peer::reserve_id`] and returns the raw result.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn request_raw_with_id(
        &self,
        id: i64,
        method: &str,
        mut params: Value,
        options: &RequestOptions,
    ) -> Result<RawJson, CallError> {
        if let Some(e) = self.refuse_new() {
            return Err(e);
        }
        if options.on_progress.is_some() || options.meta.is_some() {
            if !params.is_object() {
                params = Value::Object(Default::default());
            }
            if let Value::Object(map) = &mut params {
                let meta = map
                    .entry("_meta")
                    .or_insert_with(|| Value::Object(Default::default()));
                if let Value::Object(meta) = meta {
                    if options.on_progress.is_some() {
                        meta.insert("progressToken".to_owned(), Value::from(id));
                    }
                    for (k, v) in options.meta.iter().flatten() {
                        meta.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                }
            }
        }
        let params = if params.is_null() {
            None
        } else {
            Some(to_raw(&params)?)
        };
        self.send_with_id(id, method, params, options).await
    }

    /// Sends a request whose params are already encoded and returns the raw result.
    ///
    /// # Errors
    /// See [`CallError`].
    pub async fn send_request(
        &self,
        method: &str,
        params: Option<RawJson>,
        options: &RequestOptions,
    ) -> Result<RawJson, CallError> {
        if let Some(e) = self.refuse_new() {
            return Err(e);
        }
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        self.send_with_id(id, method, params, options).await
    }

    async fn send_with_id(
        &self,
        id: i64,
        method: &str,
        params: Option<RawJson>,
        options: &RequestOptions,
    ) -> Result<RawJson, CallError> {
        let line = Message::Request(oxmcp_jsonrpc::Request {
            id: RequestId::Number(id),
            method: method.to_owned(),
            params,
        })
        .encode();
        let kind = OutKind::Request {
            id: RequestId::Number(id),
            method: method.to_owned(),
        };
        let (tx, mut rx) = oneshot::channel();
        let touched = options
            .on_progress
            .as_ref()
            .map(|_| Arc::new(Notify::new()));
        self.lock_pending().insert(
            id,
            Pending {
                tx,
                on_progress: options.on_progress.clone(),
                touched: touched.clone(),
            },
        );
        let mut guard = PendingGuard {
            peer: self,
            id,
            armed: true,
        };
        if self.is_closed() || self.send_raw(line, kind).await.is_err() {
            guard.armed = false;
            self.take_pending(id);
            return Err(CallError::Closed);
        }
        let start = Instant::now();
        let hard_deadline = start + options.max_total;
        let mut deadline = start + options.timeout;
        loop {
            let sleep_until = deadline.min(hard_deadline);
            tokio::select! {
                outcome = &mut rx => {
                    guard.armed = false;
                    return match outcome {
                        Ok(outcome) => outcome,
                        Err(_) => Err(CallError::Closed),
                    };
                }
                () = progress_touch(touched.as_deref()), if options.reset_on_progress => {
                    deadline = Instant::now() + options.timeout;
                }
                () = tokio::time::sleep_until(sleep_until) => {
                    guard.armed = false;
                    if self.take_pending(id).is_some() {
                        self.send_cancelled(id, "request timed out");
                    }
                    return Err(CallError::Timeout(start.elapsed()));
                }
            }
        }
    }

    fn send_cancelled(&self, id: i64, reason: &str) {
        let params = CancelledParams::default()
            .with_request_id(Some(Value::from(id)))
            .with_reason(Some(reason.to_owned()));
        if let Ok(msg) = Message::notification("notifications/cancelled", &params) {
            // Best effort: if the queue is full or closed the peer learns from the timeout.
            let kind = OutKind::Notification {
                method: "notifications/cancelled".to_owned(),
            };
            let _ = self.inner.out.try_send(self.outbound(msg.encode(), kind));
        }
    }
}
