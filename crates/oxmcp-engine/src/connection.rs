//! The message loop of one connection: decode, route, dispatch, answer.

use std::collections::{HashMap, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use oxmcp_jsonrpc::{
    DecodeError, Decoded, ErrorObject, Failure, Frame, Inbound, Message, Notification, Request,
    RequestId, parse_params,
};
use oxmcp_types::{CancelledParams, ProgressParams};
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::error::CallError;
use crate::options::EngineConfig;
use crate::peer::Peer;
use crate::running::{Abort, Running};
use crate::service::{HandlerResult, RequestContext, Service};

pub(crate) struct InFlight {
    pub(crate) abort: Option<Abort>,
    pub(crate) cancel: CancellationToken,
    cancellable: bool,
    /// Answered on its own (not inside a batch's answer).
    alone: bool,
}

pub(crate) type InFlightMap = Arc<Mutex<HashMap<RequestId, InFlight>>>;

/// Where a request's response goes.
enum Reply {
    /// Sent on its own.
    Alone,
    /// Into its batch's answer. A cancelled request drops the sender: no response.
    Batch(oneshot::Sender<Message>),
}

/// A request accepted (in the in-flight map) and waiting for a slot.
struct Queued {
    id: RequestId,
    /// Its cancellation token: once fired, whatever the handler returns is not sent.
    cancel: CancellationToken,
    fut: BoxFuture<'static, HandlerResult>,
    reply: Reply,
}

/// What the handlers of one connection's input share.
pub(crate) struct Conn<'a> {
    pub(crate) peer: &'a Peer,
    pub(crate) service: &'a Arc<dyn Service>,
    pub(crate) config: &'a EngineConfig,
    pub(crate) in_flight: &'a InFlightMap,
    pub(crate) closing: &'a CancellationToken,
    /// One permit per request running.
    pub(crate) sem: &'a Arc<Semaphore>,
}

/// The state of one connection that both its message loop and [`crate::Direct`] callers use.
pub(crate) struct Shared {
    pub(crate) peer: Peer,
    pub(crate) service: Arc<dyn Service>,
    pub(crate) config: EngineConfig,
    pub(crate) in_flight: InFlightMap,
    /// One permit per request running (`max_in_flight`).
    pub(crate) sem: Arc<Semaphore>,
    /// Cancelled when the connection's input has ended, or the connection was killed.
    pub(crate) closing: CancellationToken,
    /// Messages (frames and decoded messages) the loop has handled.
    pub(crate) handled: AtomicU64,
}

impl Shared {
    fn new(peer: Peer, service: Arc<dyn Service>, config: EngineConfig) -> Arc<Self> {
        Arc::new(Self {
            sem: Arc::new(Semaphore::new(config.max_in_flight.max(1))),
            in_flight: Arc::new(Mutex::new(HashMap::new())),
            closing: CancellationToken::new(),
            handled: AtomicU64::new(0),
            peer,
            service,
            config,
        })
    }

    pub(crate) fn conn(&self) -> Conn<'_> {
        Conn {
            peer: &self.peer,
            service: &self.service,
            config: &self.config,
            in_flight: &self.in_flight,
            closing: &self.closing,
            sem: &self.sem,
        }
    }
}

pub(crate) fn lock(map: &InFlightMap) -> parking_lot::MutexGuard<'_, HashMap<RequestId, InFlight>> {
    map.lock()
}

/// Takes request `id` out of the in-flight map. The last one out frees the map's table: an
/// idle connection (most sessions, most of the time) holds none.
pub(crate) fn forget(map: &mut HashMap<RequestId, InFlight>, id: &RequestId) -> Option<InFlight> {
    let entry = map.remove(id);
    if map.is_empty() && map.capacity() > 0 {
        *map = HashMap::new();
    }
    entry
}

/// Runs one connection until its input ends, then waits for in-flight requests to finish and
/// closes `peer` (failing any of its own outstanding requests with `Closed`).
///
/// `incoming` carries one frame (a JSON text) per item, the transport doing the framing, or
/// the news that the transport could not deliver one of our requests.
pub fn run(
    peer: Peer,
    incoming: mpsc::Receiver<Inbound>,
    service: Arc<dyn Service>,
    config: EngineConfig,
) -> impl Future<Output = ()> + Send + 'static {
    run_with(peer, incoming, service, config, None)
}

/// [`run`], with a [`crate::Direct`] handle put in `direct`: a transport answers requests
/// through it on its own task, next to the loop.
///
/// The connection is set up here, when called, and `direct` is filled before this returns;
/// the future then holds only the loop's own state (what it was given lives in the
/// connection's shared state), which keeps an idle connection small.
pub fn run_with(
    peer: Peer,
    incoming: mpsc::Receiver<Inbound>,
    service: Arc<dyn Service>,
    config: EngineConfig,
    direct: Option<crate::DirectSlot>,
) -> impl Future<Output = ()> + Send + 'static {
    let shared = Shared::new(peer, service, config);
    if let Some(slot) = direct {
        slot.fill(crate::Direct::new(shared.clone()));
    }
    serve_loop(shared, incoming)
}

/// The message loop of a connection set up by [`run_with`].
async fn serve_loop(shared: Arc<Shared>, mut incoming: mpsc::Receiver<Inbound>) {
    let max_in_flight = shared.config.max_in_flight.max(1);
    let (peer, sem, in_flight, closing) = (
        &shared.peer,
        &shared.sem,
        &shared.in_flight,
        &shared.closing,
    );
    let mut queue: VecDeque<Queued> = VecDeque::new();
    let mut tasks = Running::new();
    let mut input_open = true;
    let max_queued = shared.config.max_queued.max(1);
    // Polled only when the token wakes it, not on every turn of the loop: a token's
    // `cancelled()` takes two locks each time it is polled.
    let mut killed: FuturesUnordered<_> =
        std::iter::once(peer.killed().clone().cancelled_owned()).collect();
    let cx = shared.conn();

    loop {
        if !input_open && queue.is_empty() {
            break;
        }
        tokio::select! {
            biased;
            Some(()) = killed.next(), if input_open || !queue.is_empty() => {
                // The other side stopped reading: nothing more is read, and nothing it
                // asked for runs on.
                input_open = false;
                closing.cancel();
                queue.clear();
                tasks.abort_all();
                // Work the handlers spawned with a clone of their token learns it too.
                for (_, entry) in lock(in_flight).drain() {
                    entry.cancel.cancel();
                }
            }
            Some(()) = tasks.next(), if !tasks.is_empty() => {}
            Ok(permit) = sem.clone().acquire_owned(), if !queue.is_empty() => {
                let Some(q) = queue.pop_front() else { continue };
                if queue.is_empty() {
                    // A burst is over: an idle connection holds no queue (one emptied by a
                    // cancellation keeps its room until the next drains).
                    queue = VecDeque::new();
                }
                spawn_request(&mut tasks, peer, in_flight, q, permit);
            }
            frame = incoming.recv(), if input_open && queue.len() < max_queued => {
                match frame {
                    Some(Inbound::Failed(failure)) => {
                        let Failure { id, error } = *failure;
                        peer.fail(id, error);
                    }
                    Some(Inbound::Frame(bytes)) => {
                        on_frame(&cx, &bytes, &mut queue, &mut tasks);
                        shared.handled.fetch_add(1, Ordering::Release);
                    }
                    Some(Inbound::Message(decoded)) => {
                        let Decoded { message, transport } = *decoded;
                        on_message(&cx, message, transport, &mut queue, &mut tasks);
                        shared.handled.fetch_add(1, Ordering::Release);
                    }
                    None => {
                        input_open = false;
                        closing.cancel();
                    }
                }
            }
        }
    }
    // Input is over: let what was accepted finish, so nothing that was asked goes unanswered
    // (a request answered directly holds a permit while it runs).
    while tasks.next().await.is_some() {}
    let all = u32::try_from(max_in_flight).unwrap_or(u32::MAX);
    let _all_done = sem.acquire_many(all).await;
    peer.close();
}

/// Runs request `q` (see [`Running`]), holding `permit`; its entry in the in-flight map
/// learns how to abort it.
fn spawn_request(
    tasks: &mut Running,
    peer: &Peer,
    in_flight: &InFlightMap,
    q: Queued,
    permit: tokio::sync::OwnedSemaphorePermit,
) {
    let peer = peer.scoped(q.id.clone());
    let id = q.id.clone();
    let entries = in_flight.clone();
    let handle = tasks.spawn(async move {
        let _permit = permit;
        let result = AssertUnwindSafe(q.fut)
            .catch_unwind()
            .await
            .unwrap_or_else(|panic| Err(panicked(&*panic)));
        {
            // Cancelled meanwhile: no response is sent for a cancelled request (and the
            // entry under this id, if any, is a newer request's).
            let mut map = lock(&entries);
            if q.cancel.is_cancelled() || forget(&mut map, &q.id).is_none() {
                return;
            }
        }
        let msg = match result {
            Ok(raw) => Message::result(q.id, raw),
            Err(e) => Message::error(Some(q.id), e),
        };
        match q.reply {
            Reply::Alone => peer.send_response(&msg).await,
            Reply::Batch(answer) => {
                let _ = answer.send(msg);
            }
        }
    });
    if let Some(entry) = lock(in_flight).get_mut(&id) {
        entry.abort = Some(handle);
    }
}

/// A handler's panic becomes -32603 for its request only (the payload is logged, not sent).
pub(crate) fn panicked(panic: &(dyn std::any::Any + Send)) -> ErrorObject {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "handler panicked".to_owned());
    tracing::error!("handler panicked: {what}");
    ErrorObject::internal("Internal error: the handler panicked")
}

fn on_frame(cx: &Conn<'_>, bytes: &[u8], queue: &mut VecDeque<Queued>, tasks: &mut Running) {
    match Frame::decode_limited(bytes, cx.config.max_batch) {
        Frame::Single(Ok(msg)) => on_message(cx, msg, None, queue, tasks),
        Frame::Single(Err(e)) => {
            // An empty batch (`[]`) is always answered: it is valid JSON, never a stray log
            // line, so answering cannot start an error storm. Unparseable input is not.
            let is_batch = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[')
                && e.error.code == oxmcp_jsonrpc::ErrorCode::INVALID_REQUEST;
            if let Some(reply) = error_reply(e, cx.config.answer_unidentified || is_batch) {
                let scoped = match &reply {
                    Message::Response(oxmcp_jsonrpc::Response { id: Some(id), .. }) => {
                        cx.peer.scoped(id.clone())
                    }
                    _ => cx.peer.clone(),
                };
                scoped.try_send_response(&reply);
            }
        }
        Frame::Batch(items) => on_batch(cx, items, queue, tasks),
    }
}

/// The error response owed for undecodable input, if any. `answer_unidentified` says whether
/// input without an id is answered (with `"id": null`) or only logged.
fn error_reply(e: DecodeError, answer_unidentified: bool) -> Option<Message> {
    if !e.answerable {
        tracing::warn!(
            "dropping malformed message: {}",
            e.error
                .data
                .as_ref()
                .map_or_else(String::new, ToString::to_string)
        );
        return None;
    }
    if e.id.is_none() && !answer_unidentified {
        tracing::warn!(
            "dropping malformed input with no id to answer: {}",
            e.error
                .data
                .as_ref()
                .map_or_else(String::new, ToString::to_string)
        );
        return None;
    }
    Some(Message::error(e.id, e.error))
}

fn on_message(
    cx: &Conn<'_>,
    msg: Message,
    context: Option<oxmcp_jsonrpc::TransportContext>,
    queue: &mut VecDeque<Queued>,
    tasks: &mut Running,
) {
    match msg {
        Message::Response(r) => cx.peer.complete(r.id, r.outcome.map_err(CallError::Rpc)),
        Message::Notification(n) => on_notification(cx, n, queue),
        Message::Request(r) => {
            let id = r.id.clone();
            if let Err(e) = accept(cx, r, Reply::Alone, context, queue, tasks) {
                cx.peer
                    .scoped(id.clone())
                    .try_send_response(&Message::error(Some(id), e));
            }
        }
    }
}

fn on_notification(cx: &Conn<'_>, n: Notification, queue: &mut VecDeque<Queued>) {
    match n.method.as_str() {
        "notifications/cancelled" => match parse_params::<CancelledParams>(n.params.as_deref()) {
            Ok(p) => {
                if let Some(id) = p.request_id.as_ref().and_then(RequestId::from_value)
                    && cancel(&id, cx.in_flight, queue, cx.config.cancel_grace)
                {
                    // No response will come: the transport may end its stream.
                    cx.peer.scoped(id).try_send_ended();
                }
            }
            Err(e) => tracing::warn!("bad cancellation: {}", oxmcp_jsonrpc::printable(&e.message)),
        },
        "notifications/progress" => match parse_params::<ProgressParams>(n.params.as_deref()) {
            Ok(p) => cx.peer.progress(p),
            Err(e) => tracing::warn!(
                "bad progress notification: {}",
                oxmcp_jsonrpc::printable(&e.message)
            ),
        },
        _ => cx.service.notify(n, cx.peer),
    }
}

/// Takes a request in: registered in the in-flight map (where cancellation finds it), and,
/// when it came on its own, a slot is free and nothing waits for one, run at once; else
/// queued for a slot (the loop runs the queue in order, once the frame is handled: a batch's
/// requests wait there, so a cancellation later in the same batch still finds them unrun).
/// Refused as [`admit`] refuses.
fn accept(
    cx: &Conn<'_>,
    r: Request,
    reply: Reply,
    transport: Option<oxmcp_jsonrpc::TransportContext>,
    queue: &mut VecDeque<Queued>,
    tasks: &mut Running,
) -> Result<(), ErrorObject> {
    let id = r.id.clone();
    let alone = matches!(reply, Reply::Alone);
    let (cancel, fut) = admit(cx, r, alone, transport, None)?;
    let q = Queued {
        id,
        cancel,
        fut,
        reply,
    };
    match (alone && queue.is_empty()).then(|| cx.sem.clone().try_acquire_owned()) {
        Some(Ok(permit)) => spawn_request(tasks, cx.peer, cx.in_flight, q, permit),
        _ => queue.push_back(q),
    }
    Ok(())
}

/// Registers a request in the in-flight map (where cancellation finds it) and starts its
/// handler: its cancellation token and the handler's future. `spoke`, if given, is set when
/// the handler first sends something to the other side. Refused with -32600 when its id is
/// already in flight, and with -32000 "server busy" (`data.transient`) when `busy_after`
/// requests already are.
pub(crate) fn admit(
    cx: &Conn<'_>,
    r: Request,
    alone: bool,
    transport: Option<oxmcp_jsonrpc::TransportContext>,
    spoke: Option<Arc<crate::direct::Spoke>>,
) -> Result<(CancellationToken, BoxFuture<'static, HandlerResult>), ErrorObject> {
    let id = r.id.clone();
    let mut map = lock(cx.in_flight);
    if map.contains_key(&id) {
        return Err(ErrorObject::invalid_request(format!(
            "request id {id} is already in use"
        )));
    }
    if cx.config.busy_after.is_some_and(|n| map.len() >= n) {
        return Err(ErrorObject::new(
            oxmcp_jsonrpc::ErrorCode::SERVER_BUSY,
            "Server busy: too many requests in flight on this connection; retry later",
        )
        .with_data(serde_json::json!({ "transient": true })));
    }
    let cancel = CancellationToken::new();
    map.insert(
        id.clone(),
        InFlight {
            abort: None,
            cancel: cancel.clone(),
            cancellable: cx.service.cancellable(&r.method),
            alone,
        },
    );
    drop(map);
    let ctx = RequestContext {
        peer: cx.peer.for_handler(id.clone(), cancel.clone(), spoke),
        id,
        cancel: cancel.clone(),
        closing: cx.closing.clone(),
        transport,
    };
    let fut = cx.service.call(r, ctx);
    Ok((cancel, fut))
}

/// Cancels request `id`: fires its token, and aborts its handler if it has not returned
/// `grace` later. True when it was answered on its own and so now will get no response at
/// all (a batch entry is only left out of its batch's answer).
fn cancel(
    id: &RequestId,
    in_flight: &InFlightMap,
    queue: &mut VecDeque<Queued>,
    grace: std::time::Duration,
) -> bool {
    let mut map = lock(in_flight);
    let Some(entry) = map.get(id) else {
        tracing::debug!(%id, "cancellation for an unknown or finished request; ignored");
        return false;
    };
    if !entry.cancellable {
        tracing::warn!(%id, "this request cannot be cancelled; ignored");
        return false;
    }
    let mut alone = false;
    if let Some(entry) = forget(&mut map, id) {
        entry.cancel.cancel();
        alone = entry.alone;
        if let Some(abort) = entry.abort {
            abort_after(abort, grace);
        }
    }
    drop(map);
    queue.retain(|q| &q.id != id);
    alone
}

/// Aborts a cancelled request's handler unless it has returned within `grace`.
fn abort_after(abort: Abort, grace: std::time::Duration) {
    if grace.is_zero() || abort.is_finished() {
        abort.abort();
        return;
    }
    tokio::spawn(async move {
        tokio::time::sleep(grace).await;
        abort.abort();
    });
}

/// One entry's place in a batch's answer.
enum Slot {
    /// Known at once (an invalid entry, or a request refused).
    Ready(Message),
    /// A request accepted; nothing comes if it is cancelled.
    Pending(oneshot::Receiver<Message>),
}

/// A batch: each entry is handled like the same message on its own (requests are accepted
/// into the in-flight map and the queue, so they count against `max_in_flight` and
/// `busy_after`, their ids must be unique, and they can be cancelled). The answer is one
/// array, in the batch's order, sent when every request is done; a cancelled request has no
/// entry in it, and a batch with nothing to answer gets no answer.
fn on_batch(
    cx: &Conn<'_>,
    items: Vec<Result<Message, DecodeError>>,
    queue: &mut VecDeque<Queued>,
    tasks: &mut Running,
) {
    if !cx.service.batch_allowed() {
        let e = ErrorObject::invalid_request(
            "JSON-RPC batches are not supported by the negotiated protocol version",
        );
        cx.peer.try_send_response(&Message::error(None, e));
        return;
    }
    let mut slots = Vec::with_capacity(items.len());
    let mut first_id: Option<RequestId> = None;
    for item in items {
        match item {
            // Inside a batch every bad element is answered, as JSON-RPC 2.0 requires.
            Err(e) => slots.extend(error_reply(e, true).map(Slot::Ready)),
            Ok(Message::Response(r)) => cx.peer.complete(r.id, r.outcome.map_err(CallError::Rpc)),
            Ok(Message::Notification(n)) => on_notification(cx, n, queue),
            Ok(Message::Request(r)) => {
                let id = r.id.clone();
                first_id.get_or_insert_with(|| id.clone());
                let (tx, rx) = oneshot::channel();
                slots.push(match accept(cx, r, Reply::Batch(tx), None, queue, tasks) {
                    Ok(()) => Slot::Pending(rx),
                    Err(e) => Slot::Ready(Message::error(Some(id), e)),
                });
            }
        }
    }
    if slots.is_empty() {
        return; // an all-notification batch gets no reply at all
    }
    // The batch's answer is one message; it belongs with the batch's first request.
    let peer = match first_id {
        Some(id) => cx.peer.scoped(id),
        None => cx.peer.clone(),
    };
    tasks.spawn(async move {
        let mut replies = Vec::with_capacity(slots.len());
        for slot in slots {
            match slot {
                Slot::Ready(m) => replies.push(m),
                Slot::Pending(rx) => replies.extend(rx.await.ok()),
            }
        }
        if replies.is_empty() {
            // Every request was cancelled: no answer, but the transport may end its stream.
            peer.try_send_ended();
        } else {
            peer.send_batch(&replies).await;
        }
    });
}
