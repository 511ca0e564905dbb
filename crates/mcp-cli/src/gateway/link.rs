//! What the gateway keeps per upstream, and how a downstream request is matched to the
//! upstream messages about it.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use mcp_client::{CallError, SupervisorError};
use mcp_jsonrpc::ErrorObject;
use mcp_server::Ctx;
use mcp_types::{LoggingMessageParams, ProgressParams};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::*;

/// What the gateway keeps for one upstream.
pub(super) struct Link {
    pub(super) name: String,
    /// Notifications to pass on, in the order they came.
    pub(super) events: mpsc::Sender<Event>,
    /// Downstream requests being served by this upstream right now.
    pub(super) calls: Calls,
    /// Upstream URIs clients hold subscriptions to.
    pub(super) subscriptions: Subscriptions,
}

impl Link {
    pub(super) fn send(&self, event: Event) {
        if self.events.try_send(event).is_err() {
            tracing::warn!(upstream = %self.name, "notification queue full; one dropped");
        }
    }

    /// Waits until every notification queued so far has been passed on.
    pub(super) async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.events.send(Event::Flush(tx)).await.is_ok() {
            let _ = rx.await;
        }
    }

    pub(super) fn exposed_uri(&self, uri: &str) -> String {
        format!("{URI_PREFIX}{}/{uri}", self.name)
    }
}

/// The upstream that owns an exposed URI, and the URI it knows.
pub(super) fn route_uri<'a>(
    links: &BTreeMap<String, Arc<Link>>,
    uri: &'a str,
) -> Option<(Arc<Link>, &'a str)> {
    let (name, original) = uri.strip_prefix(URI_PREFIX)?.split_once('/')?;
    Some((links.get(name)?.clone(), original))
}

/// A notification from an upstream, or a marker.
pub(super) enum Event {
    Log(LoggingMessageParams),
    Progress(Ctx, ProgressParams),
    Changed(Kind),
    Updated(String),
    Flush(oneshot::Sender<()>),
}

/// What an upstream's `list_changed` is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    All,
    Tools,
    Prompts,
    Resources,
}

/// A downstream request being served by an upstream.
#[derive(Clone)]
pub(super) struct Call {
    pub(super) id: u64,
    pub(super) ctx: Ctx,
    /// Cancelled when the downstream client must answer first (2026-07-28 `input_required`).
    pub(super) asked: CancellationToken,
}

#[derive(Default)]
pub(super) struct Calls {
    pub(super) next: AtomicU64,
    pub(super) live: Mutex<Vec<Call>>,
}

impl Calls {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Call>> {
        self.live
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn enter(&self, ctx: &Ctx) -> (Call, CallGuard<'_>) {
        let call = Call {
            id: self.next.fetch_add(1, Ordering::Relaxed),
            ctx: ctx.clone(),
            asked: CancellationToken::new(),
        };
        self.lock().push(call.clone());
        let id = call.id;
        (call, CallGuard { calls: self, id })
    }

    /// The request an upstream's message belongs to when the message cannot say: the most
    /// recent one (exact whenever one request at a time is in flight on that upstream).
    pub(super) fn newest(&self) -> Option<Call> {
        self.lock().last().cloned()
    }
}

pub(super) struct CallGuard<'a> {
    pub(super) calls: &'a Calls,
    pub(super) id: u64,
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        self.calls.lock().retain(|c| c.id != self.id);
    }
}

tokio::task_local! {
    /// The downstream request whose upstream call is running in this task: a 2026-07-28
    /// upstream's `input_required` is answered inside the call, so it is matched exactly.
    static CURRENT: Call;
}

/// The downstream request an upstream's sampling or elicitation request is for.
pub(super) fn owner(link: &Link) -> Option<Call> {
    CURRENT
        .try_with(Call::clone)
        .ok()
        .or_else(|| link.calls.newest())
}

/// Turns a downstream answer (or its absence) into the upstream's answer.
pub(super) fn relay_input<T>(call: &Call, answer: Result<T, CallError>) -> Result<T, ErrorObject> {
    answer.map_err(|e| match e {
        CallError::InputRequired => {
            // The downstream request ends with input_required; the upstream call is dropped
            // (and cancelled) and runs again on the client's retry.
            call.asked.cancel();
            ErrorObject::internal("the request is waiting for the client's input")
        }
        CallError::Rpc(e) => e,
        other => ErrorObject::internal(other.to_string()),
    })
}

pub(super) fn no_request() -> ErrorObject {
    ErrorObject::internal("no client request is in progress to ask")
}

/// Runs a downstream request's upstream call: notifications the upstream sends before its
/// answer are passed on first; the client's cancellation drops (and so cancels) the call.
pub(super) async fn relay<T>(
    link: &Link,
    ctx: &Ctx,
    call: impl Future<Output = Result<T, SupervisorError>>,
) -> Result<T, ErrorObject> {
    let (entry, _guard) = link.calls.enter(ctx);
    let asked = entry.asked.clone();
    let result = tokio::select! {
        r = CURRENT.scope(entry, call) => r,
        () = ctx.cancellation().cancelled() => return Err(ErrorObject::internal("cancelled")),
        // The answer is an input_required result; what this returns is not sent.
        () = asked.cancelled() => return Err(ErrorObject::internal("input required")),
    };
    link.flush().await;
    result.map_err(|e| match e {
        SupervisorError::Call(CallError::Rpc(e)) => e,
        other => ErrorObject::internal(format!("upstream {}: {other}", link.name)),
    })
}
