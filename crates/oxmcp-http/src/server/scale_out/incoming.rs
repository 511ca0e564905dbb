//! What a POST of a shared session must tell the other instances before its messages reach
//! this instance's engine: the answers to requests another instance sent, and cancellations
//! (as their request id only). State changes (log level, subscriptions) are only noted here
//! ([`expect_changes`], once their requests' stream is open): the session shares them once
//! the engine has accepted them (`HttpSession::route`).

use std::sync::Arc;

use crate::server::refusal::Refusal;
use oxmcp_jsonrpc::{Message, Request, RequestId};
use oxmcp_store::{BusEvent, StateChange};

use super::{Shared, store_failed};
use crate::server::session::HttpSession;

/// The state change a client request asks for, if it is one every instance must know.
/// Only the field it needs is read.
fn state_change(r: &Request) -> Option<StateChange> {
    #[derive(serde::Deserialize)]
    struct Change {
        level: Option<String>,
        uri: Option<String>,
    }
    let read = || -> Option<Change> { serde_json::from_str(r.params.as_deref()?.get()).ok() };
    match r.method.as_str() {
        "logging/setLevel" => read()?.level.map(StateChange::LogLevel),
        "resources/subscribe" => read()?.uri.map(StateChange::Subscribe),
        "resources/unsubscribe" => read()?.uri.map(StateChange::Unsubscribe),
        _ => None,
    }
}

/// Holds the state changes `messages` ask for until the engine answers them (shared with
/// the answer when accepted, see `HttpSession::route`). Only for requests whose stream is open,
/// and never for an id that two entries of a batch share (the engine refuses the second, and
/// the answer of the first must not stand for it).
pub(crate) fn expect_changes(session: &HttpSession, messages: &[Message]) {
    let requests = || {
        messages.iter().filter_map(|m| match m {
            Message::Request(r) => Some(r),
            _ => None,
        })
    };
    for r in requests() {
        let Some(change) = state_change(r) else {
            continue;
        };
        if requests().filter(|other| other.id == r.id).count() == 1 {
            session.expect_change(r.id.clone(), change);
        }
    }
}

/// The request a `notifications/cancelled` names, if it names a valid id (only that field is
/// read: the client's reason stays here).
fn cancelled_id(params: Option<&oxmcp_jsonrpc::RawValue>) -> Option<RequestId> {
    #[derive(serde::Deserialize)]
    struct Cancelled<'a> {
        #[serde(rename = "requestId", borrow)]
        request_id: Option<&'a oxmcp_jsonrpc::RawValue>,
    }
    let p: Cancelled<'_> = serde_json::from_str(params?.get()).ok()?;
    let id: serde_json::Value = serde_json::from_str(p.request_id?.get()).ok()?;
    RequestId::from_value(&id)
        .filter(|id| !matches!(id, RequestId::String(s) if s.len() > oxmcp_jsonrpc::MAX_ID_LEN))
}

/// The cancellation other instances get: the request id, nothing of the client's.
fn cancellation_of(id: &RequestId) -> String {
    serde_json::json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": { "requestId": id.to_value() },
    })
    .to_string()
}

/// Shares what the client's messages change, and forwards the answers to requests another
/// instance sent. Returns the messages this instance's engine gets (`None`: all of them).
pub(crate) async fn share(
    shared: &Arc<Shared>,
    session: &HttpSession,
    messages: &[Message],
) -> Result<Option<Vec<Message>>, Refusal> {
    let me = shared.instance().to_owned();
    // Hands a client message to one other instance, or to all of them.
    let deliver = |to: Option<String>, message: String| {
        let event = BusEvent::Deliver {
            session: session.id.clone(),
            to,
            from: shared.instance().to_owned(),
            message,
        };
        async move { shared.publish(event).await.map_err(|e| store_failed(&e)) }
    };
    let mut forwarded = false;
    let mut keep = Vec::new();
    for m in messages {
        match m {
            Message::Response(r) => {
                let Some(id) = &r.id else {
                    keep.push(m.clone());
                    continue;
                };
                let key = id.to_value().to_string();
                let owner = shared
                    .op(shared.store.take_pending(&session.id, &key))
                    .await
                    .map_err(|e| store_failed(&e))?;
                if let Some(owner) = owner.filter(|o| *o != me) {
                    deliver(Some(owner), m.encode()).await?;
                    forwarded = true;
                    continue;
                }
            }
            Message::Notification(n) if n.method == "notifications/cancelled" => {
                // The request may run on any instance: unless it runs here, every other one
                // hears of it, by its id.
                if let Some(id) = cancelled_id(n.params.as_deref())
                    && !session.in_flight(&id)
                {
                    deliver(None, cancellation_of(&id)).await?;
                }
            }
            Message::Request(_) | Message::Notification(_) => {}
        }
        keep.push(m.clone());
    }
    Ok(forwarded.then_some(keep))
}
