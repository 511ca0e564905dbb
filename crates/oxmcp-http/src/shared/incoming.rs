//! What a POST of a shared session must tell the other instances before its messages reach
//! this instance's engine.

use std::sync::Arc;

use axum::response::Response;
use oxmcp_jsonrpc::{Message, Request};
use oxmcp_store::{BusEvent, StateChange};

use super::{Shared, store_failed};
use crate::session::Session;

/// The state change a client request makes, if it makes one every instance must know.
fn state_change(r: &Request) -> Option<StateChange> {
    let params: serde_json::Value = serde_json::from_str(r.params.as_deref()?.get()).ok()?;
    let text = |k: &str| params.get(k)?.as_str().map(str::to_owned);
    match r.method.as_str() {
        "logging/setLevel" => text("level").map(StateChange::LogLevel),
        "resources/subscribe" => text("uri").map(StateChange::Subscribe),
        "resources/unsubscribe" => text("uri").map(StateChange::Unsubscribe),
        _ => None,
    }
}

/// Shares what the client's messages change, and forwards the answers to requests another
/// instance sent. Returns the messages this instance's engine gets (`None`: all of them).
pub(crate) async fn share(
    shared: &Arc<Shared>,
    session: &Session,
    messages: &[Message],
) -> Result<Option<Vec<Message>>, Response> {
    let me = shared.instance().to_owned();
    // Hands a client message to one other instance, or to all of them.
    let deliver = |to: Option<String>, m: &Message| {
        let event = BusEvent::Deliver {
            session: session.id.clone(),
            to,
            from: shared.instance().to_owned(),
            message: m.encode(),
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
                    deliver(Some(owner), m).await?;
                    forwarded = true;
                    continue;
                }
            }
            Message::Notification(n) if n.method == "notifications/cancelled" => {
                // The request may run on any instance: every one hears of it.
                deliver(None, m).await?;
            }
            Message::Request(r) => {
                if let Some(change) = state_change(r) {
                    shared
                        .op(shared.store.update_session(&session.id, &change))
                        .await
                        .map_err(|e| store_failed(&e))?;
                    let state = BusEvent::State {
                        session: session.id.clone(),
                        from: me.clone(),
                        change,
                    };
                    shared.publish(state).await.map_err(|e| store_failed(&e))?;
                }
            }
            Message::Notification(_) => {}
        }
        keep.push(m.clone());
    }
    Ok(forwarded.then_some(keep))
}
