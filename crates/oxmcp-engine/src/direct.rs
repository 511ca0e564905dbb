//! Answering a request on the transport's own task, next to the message loop: no hop to the
//! loop, to a task of the request's own, and back.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use futures::FutureExt;
use futures::future::BoxFuture;
use futures::task::AtomicWaker;
use oxmcp_jsonrpc::{ErrorObject, Message, Outbound, Request, RequestId, TransportContext};
use tokio_util::sync::CancellationToken;

use crate::connection::{Shared, admit, forget, lock, panicked};
use crate::service::HandlerResult;

/// Set when a directly answered request's handler first sends something, from whichever
/// task sends it; wakes the caller's task, which then lets the handler go on on its own.
#[derive(Default)]
pub(crate) struct Spoke {
    flag: AtomicBool,
    waker: AtomicWaker,
}

impl Spoke {
    /// The handler sent something: the caller should stop running it.
    pub(crate) fn set(&self) {
        if !self.flag.swap(true, Ordering::AcqRel) {
            self.waker.wake();
        }
    }

    fn is_set(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }
}

/// Where [`crate::run_with`] puts the [`Direct`] handle of the connection it sets up, when it
/// is called (a service may call it only once its own future runs). Cheap to clone; empty
/// until then, and for a service that does not offer one.
#[derive(Clone, Default)]
pub struct DirectSlot(Arc<OnceLock<Direct>>);

impl std::fmt::Debug for DirectSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectSlot")
            .field("filled", &self.0.get().is_some())
            .finish()
    }
}

impl DirectSlot {
    /// An empty slot.
    pub fn new() -> Self {
        Self::default()
    }

    /// The handle, once the connection is set up.
    pub fn get(&self) -> Option<&Direct> {
        self.0.get()
    }

    pub(crate) fn fill(&self, direct: Direct) {
        let _ = self.0.set(direct);
    }
}

/// What a [`Direct`] call came to.
#[derive(Debug)]
pub enum DirectAnswer {
    /// The response, for the caller to deliver: nothing else the handler sent is still on
    /// its way before it.
    Here(Outbound),
    /// Whatever is owed for the request (its response, or the news that it was cancelled)
    /// comes through the connection's outgoing channel, as for a request the loop received:
    /// the handler sent something before its response, or the caller stopped waiting.
    Queued,
    /// The connection's input has ended: it takes no more requests.
    Closed,
}

/// A handle on a running connection that answers one request on the caller's task, with the
/// loop's bounds, cancellation and in-flight table: a request answered this way counts
/// against `max_in_flight` and `busy_after`, its id must not be in flight, and
/// `notifications/cancelled` reaches it.
///
/// The handler runs on the caller's task as long as it sends nothing. Once it sends something
/// (a progress notification, a request to the client) it goes on on a task of its own and
/// everything, its response included, goes through the outgoing channel in order: the call
/// then ends with [`DirectAnswer::Queued`], so the caller can stream what comes. Dropping the call
/// does not cancel the request: its handler goes on on a task of its own.
///
/// Only requests the caller may answer in any order with what it fed the loop belong here:
/// a transport keeps a request behind the messages it fed the loop before it
/// ([`Direct::handled`]).
#[derive(Clone)]
pub struct Direct {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Direct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Direct")
            .field("handled", &self.handled())
            .finish_non_exhaustive()
    }
}

impl Direct {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    /// How many messages (frames and decoded messages, not the news of an undeliverable
    /// request) the loop has taken from its input and handled: once it equals the number a
    /// transport fed it, everything fed before has been dispatched.
    pub fn handled(&self) -> u64 {
        self.shared.handled.load(Ordering::Acquire)
    }

    /// Nothing is in flight: no request of the other side runs or waits, and none of ours
    /// waits for its response (a transport parks only a quiet connection).
    pub fn quiet(&self) -> bool {
        lock(&self.shared.in_flight).is_empty() && self.shared.peer.pending_count() == 0
    }

    /// Handles on the connection's [`Peer`](crate::Peer) alive now, the connection's own
    /// included: work that outlives its request (a task, a handler that kept its peer) holds
    /// one, and may still send on it ([`crate::ParkSlot::begin`] refuses then).
    pub fn peer_handles(&self) -> usize {
        self.shared.peer.handles()
    }

    /// The id our next request on this connection gets ([`Peer::next_id`](crate::Peer::next_id)):
    /// a later connection of the same session numbers its own from here, so that a late
    /// answer to this one's cannot be taken for an answer to a new request.
    pub fn next_request_id(&self) -> i64 {
        self.shared.peer.next_id()
    }

    /// The connection is gone: every request it has in flight is cancelled and stopped at
    /// once, wherever it runs (by the loop, on a caller's task, or on a task of its own since
    /// it sent something), as when the connection is killed for not reading.
    pub(crate) fn stop_all(&self) {
        self.shared.peer.kill_connection();
        for (_, entry) in lock(&self.shared.in_flight).drain() {
            entry.cancel.cancel();
            if let Some(abort) = entry.abort {
                abort.abort();
            }
        }
    }

    /// Answers `request`. The handler is started on the caller's task (where its synchronous
    /// part runs) and runs there while it sends nothing (see [`Direct`]).
    pub fn call(&self, request: Request, transport: Option<TransportContext>) -> DirectCall {
        let shared = &self.shared;
        if shared.closing.is_cancelled() {
            return DirectCall::done(DirectAnswer::Closed);
        }
        let id = request.id.clone();
        let id_kept = id.clone();
        let spoke = Arc::new(Spoke::default());
        let refused = start(shared, request, transport, &spoke);
        let (cancel, handler) = match refused {
            Ok(started) => started,
            Err(e) => {
                let refusal = shared
                    .peer
                    .scoped(id.clone())
                    .response(&Message::error(Some(id), e));
                return DirectCall::done(DirectAnswer::Here(refusal));
            }
        };
        let shared = shared.clone();
        let flag = spoke.clone();
        let run = async move {
            let _permit = match slot(&shared, &cancel).await {
                Ok(permit) => permit,
                Err(answer) => return answer,
            };
            let handler = AssertUnwindSafe(handler).catch_unwind();
            let grace = shared.config.cancel_grace;
            let cancelled = async {
                cancel.cancelled().await;
                // Cancelled by the other side: the handler has its grace to return. The
                // connection killed (then, or during the grace): it stops now.
                tokio::select! {
                    () = tokio::time::sleep(grace) => {}
                    () = shared.peer.killed().cancelled() => {}
                }
            };
            // The handler first: one that answers at once never has the token polled.
            let result = tokio::select! {
                biased;
                r = handler => r.unwrap_or_else(|panic| Err(panicked(&*panic))),
                () = cancelled => return DirectAnswer::Queued,
            };
            {
                let mut map = lock(&shared.in_flight);
                if cancel.is_cancelled() || forget(&mut map, &id).is_none() {
                    // No response for a cancelled request; the loop told the transport.
                    return DirectAnswer::Queued;
                }
            }
            let msg = match result {
                Ok(raw) => Message::result(id.clone(), raw),
                Err(e) => Message::error(Some(id.clone()), e),
            };
            let peer = shared.peer.scoped(id);
            if flag.is_set() {
                // Behind what the handler sent, in order.
                peer.send_response(&msg).await;
                return DirectAnswer::Queued;
            }
            DirectAnswer::Here(peer.response(&msg))
        };
        DirectCall {
            run: Some(Box::pin(run)),
            ready: None,
            spoke,
            owner: Some((self.shared.clone(), id_kept)),
        }
    }
}

/// A slot for a request to run in. A request cancelled while it waits for one never runs.
/// (A free slot is taken without a look at the token, which is polled only when there is
/// none: each poll of `cancelled()` takes two locks.)
async fn slot<'a>(
    shared: &'a Shared,
    cancel: &CancellationToken,
) -> Result<tokio::sync::SemaphorePermit<'a>, DirectAnswer> {
    let permit = match shared.sem.try_acquire() {
        Ok(permit) => permit,
        Err(tokio::sync::TryAcquireError::Closed) => return Err(DirectAnswer::Closed),
        Err(tokio::sync::TryAcquireError::NoPermits) => tokio::select! {
            permit = shared.sem.acquire() => permit.map_err(|_| DirectAnswer::Closed)?,
            () = cancel.cancelled() => return Err(DirectAnswer::Queued),
        },
    };
    if cancel.is_cancelled() {
        return Err(DirectAnswer::Queued);
    }
    Ok(permit)
}

/// Registers `request` and runs its handler's synchronous part here; a panic in it fails
/// this request only.
fn start(
    shared: &Shared,
    request: Request,
    transport: Option<TransportContext>,
    spoke: &Arc<Spoke>,
) -> Result<(CancellationToken, BoxFuture<'static, HandlerResult>), ErrorObject> {
    let id = request.id.clone();
    let cx = shared.conn();
    let admitted = std::panic::catch_unwind(AssertUnwindSafe(|| {
        admit(&cx, request, true, transport, Some(spoke.clone()))
    }));
    match admitted {
        Ok(started) => started,
        Err(panic) => {
            forget(&mut lock(&shared.in_flight), &id);
            Err(panicked(&*panic))
        }
    }
}

/// A [`Direct::call`] under way: a future of its [`DirectAnswer`].
#[must_use = "the request is in flight already: await its answer (dropping the call lets the \
              handler finish on a task of its own, its answer queued)"]
pub struct DirectCall {
    run: Option<BoxFuture<'static, DirectAnswer>>,
    ready: Option<DirectAnswer>,
    /// Set when the handler sent something (or the call was let go): its answer is queued.
    spoke: Arc<Spoke>,
    /// The connection and the request's id, while it runs here.
    owner: Option<(Arc<Shared>, RequestId)>,
}

impl std::fmt::Debug for DirectCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectCall")
            .field("running", &self.run.is_some())
            .finish_non_exhaustive()
    }
}

impl DirectCall {
    fn done(answer: DirectAnswer) -> Self {
        Self {
            run: None,
            ready: Some(answer),
            spoke: Arc::new(Spoke::default()),
            owner: None,
        }
    }

    /// Stops the request, for a transport whose connection is ending: its handler is dropped
    /// where it stands, its token cancelled (so work it spawned learns), and it gets no
    /// answer. Dropping the call instead lets the handler finish on a task of its own.
    pub fn abandon(mut self) {
        let Some(run) = self.run.take() else { return };
        drop(run);
        if let Some((shared, id)) = self.owner.take()
            && let Some(entry) = forget(&mut lock(&shared.in_flight), &id)
        {
            entry.cancel.cancel();
        }
    }

    /// Lets the handler finish on a task of its own, its answer queued.
    fn let_go(&mut self) {
        if let Some(run) = self.run.take() {
            // Its answer goes through the output from now on.
            self.spoke.flag.store(true, Ordering::Release);
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(run);
            }
        }
    }
}

impl Future for DirectCall {
    type Output = DirectAnswer;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<DirectAnswer> {
        // Woken too when the handler speaks from another task while it waits.
        self.spoke.waker.register(cx.waker());
        let Some(run) = self.run.as_mut() else {
            return Poll::Ready(self.ready.take().unwrap_or(DirectAnswer::Queued));
        };
        match run.poll_unpin(cx) {
            Poll::Ready(answer) => {
                self.run = None;
                Poll::Ready(answer)
            }
            Poll::Pending if self.spoke.is_set() => {
                // The handler talks to the other side: what it says should flow now, so it
                // goes on on its own task and the caller streams what comes.
                self.let_go();
                Poll::Ready(DirectAnswer::Queued)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for DirectCall {
    fn drop(&mut self) {
        // The caller stopped waiting (a client gone): that does not cancel the request.
        self.let_go();
    }
}
