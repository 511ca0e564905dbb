//! What the gateway keeps per upstream, and how a downstream request is served by it: on a
//! connection lent to it alone, so the upstream messages about it are matched exactly.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use oxmcp_client::{CallError, Client, SupervisorError};
use oxmcp_jsonrpc::ErrorObject;
use oxmcp_server::{Ctx, InputError};
use oxmcp_types::{LoggingMessageParams, ProgressParams};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::{Pool, SEPARATOR, Subscriptions, URI_PREFIX};

/// What the gateway keeps for one upstream.
pub(super) struct Link {
    pub(super) name: String,
    /// Notifications to pass on, in the order they came.
    pub(super) events: mpsc::Sender<Event>,
    /// Upstream URIs clients hold subscriptions to (an upstream restarted by a reload keeps
    /// its predecessor's).
    pub(super) subscriptions: Arc<Subscriptions>,
    /// A bridge's only upstream: its names and URIs are exposed as they are.
    pub(super) bare: bool,
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
        if self.bare {
            return uri.to_owned();
        }
        format!("{URI_PREFIX}{}/{uri}", self.name)
    }

    /// The upstream's URI of one of its exposed URIs.
    pub(super) fn original_uri<'a>(&self, uri: &'a str) -> Option<&'a str> {
        if self.bare {
            return Some(uri);
        }
        uri.strip_prefix(URI_PREFIX)?
            .strip_prefix(self.name.as_str())?
            .strip_prefix('/')
    }

    /// The name a tool or prompt of this upstream is exposed under.
    pub(super) fn exposed_name(&self, name: &str) -> String {
        if self.bare {
            return name.to_owned();
        }
        format!("{}{SEPARATOR}{name}", self.name)
    }
}

/// The bridge's only upstream, if this is a bridge.
fn bare_link(links: &BTreeMap<String, Arc<Link>>) -> Option<Arc<Link>> {
    match links.values().next() {
        Some(link) if link.bare && links.len() == 1 => Some(link.clone()),
        _ => None,
    }
}

/// The upstream that owns an exposed URI, and the URI it knows.
pub(super) fn route_uri<'a>(
    links: &BTreeMap<String, Arc<Link>>,
    uri: &'a str,
) -> Option<(Arc<Link>, &'a str)> {
    if let Some(link) = bare_link(links) {
        return Some((link, uri));
    }
    let (name, original) = uri.strip_prefix(URI_PREFIX)?.split_once('/')?;
    Some((links.get(name)?.clone(), original))
}

/// The upstream that owns an exposed tool or prompt name, and the name it knows.
pub(super) fn route_name<'a>(
    links: &BTreeMap<String, Arc<Link>>,
    name: &'a str,
) -> Option<(Arc<Link>, &'a str)> {
    if let Some(link) = bare_link(links) {
        return Some((link, name));
    }
    let (upstream, original) = name.split_once(SEPARATOR)?;
    Some((links.get(upstream)?.clone(), original))
}

/// A notification from an upstream, or a marker.
pub(super) enum Event {
    /// A log message, with the request whose connection it came on (none: nobody's).
    Log(Option<Call>, LoggingMessageParams),
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

/// A downstream request being served by an upstream: what the connection lent to it hands
/// its upstream's requests and log messages to.
#[derive(Clone)]
pub(super) struct Call {
    pub(super) ctx: Ctx,
    /// Cancelled when the downstream client must answer first (2026-07-28 `input_required`).
    pub(super) asked: CancellationToken,
}

/// Turns a downstream answer (or its absence) into the upstream's answer.
pub(super) fn relay_input<T>(call: &Call, answer: Result<T, InputError>) -> Result<T, ErrorObject> {
    answer.map_err(|e| match e {
        InputError::Required => {
            // The downstream request ends with input_required; the upstream call is dropped
            // (and cancelled) and runs again on the client's retry.
            call.asked.cancel();
            ErrorObject::internal("the request is waiting for the client's input")
        }
        InputError::Call(CallError::Rpc(e)) => e,
        other => ErrorObject::internal(other.to_string()),
    })
}

/// Runs a downstream request's upstream call on a connection lent to it alone (see
/// [`Pool`]): what the upstream sends on it meanwhile is this request's; notifications sent
/// before its answer are passed on first; the client's cancellation drops (and so cancels)
/// the call, also while it waits for a connection. A principal past its budget of requests
/// ended early is refused first (-32000, `data.retryAfterMs`).
pub(super) async fn relay<T, F, Fut>(pool: &Arc<Pool>, ctx: &Ctx, f: F) -> Result<T, ErrorObject>
where
    F: FnOnce(Arc<Client>) -> Fut,
    Fut: Future<Output = Result<T, CallError>>,
{
    let link = &pool.link;
    pool.admit(ctx.principal())?;
    let call = Call {
        ctx: ctx.clone(),
        asked: CancellationToken::new(),
    };
    let asked = call.asked.clone();
    let lease = tokio::select! {
        l = pool.lease(call) => l.map_err(|e| upstream_error(link, e))?,
        () = ctx.cancellation().cancelled() => return Err(ErrorObject::internal("cancelled")),
    };
    // Again: the request this one waited for may have been ended early meanwhile (by the
    // same client, cancelling and calling again at once).
    if let Err(e) = pool.admit(ctx.principal()) {
        lease.release();
        return Err(e);
    }
    // What this request sends on the connection has ids from here on.
    let first = lease.client().peer().next_id();
    // Dropped here (the request itself dropped), the lease quarantines the connection.
    let mut running = Box::pin(f(lease.client()));
    let early = tokio::select! {
        r = &mut running => Ok(r),
        () = ctx.cancellation().cancelled() => Err(ErrorObject::internal("cancelled")),
        // The answer is an input_required result; what this returns is not sent.
        () = asked.cancelled() => Err(ErrorObject::internal("input required")),
    };
    let result = match early {
        Ok(result) => result,
        Err(e) => {
            // Whether something this request sent still awaits its answer (the call, as a
            // 2025 upstream asks its question while it runs; a 2026-07-28 upstream's round
            // has been answered; a heartbeat sent meanwhile counts too). Dropping the call
            // cancels it upstream, before the quarantine's ping goes out.
            let outstanding = lease.client().peer().pending_since(first) > 0;
            drop(running);
            lease.interrupt(outstanding);
            return Err(e);
        }
    };
    link.flush().await;
    // Returned only when the upstream answered; a request it did not answer (timed out and
    // cancelled, its transport failed) may still be running there: quarantined.
    if matches!(
        &result,
        Ok(_) | Err(CallError::Rpc(_) | CallError::Decode(_))
    ) {
        lease.release();
    } else {
        lease.fail();
    }
    result.map_err(|e| match e {
        CallError::Rpc(e) => e,
        CallError::Closed => upstream_error(
            link,
            SupervisorError::Lost("the server went away".to_owned()),
        ),
        other => upstream_error(link, SupervisorError::Call(other)),
    })
}

fn upstream_error(link: &Link, e: SupervisorError) -> ErrorObject {
    ErrorObject::internal(format!("upstream {}: {e}", link.name))
}
