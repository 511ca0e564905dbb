//! What the server asks of us: sampling, elicitation and roots through the registered
//! handlers, and its notifications as typed events.

use futures::future::BoxFuture;
use oxmcp_engine::{HandlerResult, Peer, RequestContext, Service};
use oxmcp_jsonrpc::{ErrorObject, Notification, RawJson, Request, parse_params, to_raw};
use oxmcp_types::meta_keys;
use oxmcp_types::{ElicitParams, EmptyResult, LoggingMessageParams, apply_schema_defaults};
use serde_json::Value;

use super::{ListCache, Subscriptions};
use crate::handler::{ClientHandlers, ServerEvent};

pub(super) struct ClientService {
    pub(super) handlers: ClientHandlers,
    pub(super) subscriptions: Subscriptions,
    /// Pages are dropped when the server says their list changed.
    pub(super) list_cache: ListCache,
}

pub(super) fn encode<T: serde::Serialize>(v: &T) -> HandlerResult {
    to_raw(v).map_err(|e| ErrorObject::internal(format!("could not encode the result: {e}")))
}

/// A server notification as a typed event.
pub(super) fn event_of(n: Notification) -> ServerEvent {
    let params: Value = n
        .params
        .as_deref()
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or(Value::Null);
    match n.method.as_str() {
        "notifications/message" => {
            match serde_json::from_value::<LoggingMessageParams>(params.clone()) {
                Ok(p) => ServerEvent::Log(p),
                Err(_) => ServerEvent::Other {
                    method: n.method,
                    params,
                },
            }
        }
        "notifications/tools/list_changed" => ServerEvent::ToolsChanged,
        "notifications/prompts/list_changed" => ServerEvent::PromptsChanged,
        "notifications/resources/list_changed" => ServerEvent::ResourcesChanged,
        "notifications/resources/updated" => match params.get("uri").and_then(Value::as_str) {
            Some(uri) => ServerEvent::ResourceUpdated(uri.to_owned()),
            None => ServerEvent::Other {
                method: n.method,
                params,
            },
        },
        "notifications/elicitation/complete" => {
            match params.get("elicitationId").and_then(Value::as_str) {
                Some(id) => ServerEvent::ElicitationComplete(id.to_owned()),
                None => ServerEvent::Other {
                    method: n.method,
                    params,
                },
            }
        }
        _ => ServerEvent::Other {
            method: n.method,
            params,
        },
    }
}

/// Answers a server request (or a 2026-07-28 input request) with the registered handlers.
pub(super) async fn answer(
    h: ClientHandlers,
    method: String,
    params: Option<RawJson>,
) -> HandlerResult {
    let params = params.as_deref();
    match method.as_str() {
        "ping" => encode(&EmptyResult::default()),
        "sampling/createMessage" if h.sampling.is_some() => {
            let p: oxmcp_types::CreateMessageParams = parse_params(params)?;
            if p.uses_tools() && !h.sampling_tools {
                return Err(ErrorObject::invalid_params(
                    "this client did not declare sampling.tools: tools and toolChoice are not accepted",
                ));
            }
            let f = h
                .sampling
                .as_ref()
                .ok_or_else(|| ErrorObject::method_not_found(&method))?;
            encode(&f(p).await?)
        }
        "elicitation/create" if h.elicitation.is_some() => {
            let p: ElicitParams = parse_params(params)?;
            if p.mode.as_deref() == Some("url") && !h.url_elicitation {
                return Err(ErrorObject::invalid_params(
                    "URL-mode elicitation is not supported",
                ));
            }
            let schema = p.requested_schema.clone();
            let f = h
                .elicitation
                .as_ref()
                .ok_or_else(|| ErrorObject::method_not_found(&method))?;
            let mut result = f(p).await?;
            if let (Some(schema), Some(content)) = (&schema, result.content.as_mut()) {
                apply_schema_defaults(schema, content);
            }
            encode(&result)
        }
        "roots/list" if h.roots.is_some() => {
            let f = h
                .roots
                .as_ref()
                .ok_or_else(|| ErrorObject::method_not_found(&method))?;
            encode(&f().await?)
        }
        other => match h.methods.get(other) {
            Some(f) => {
                let value = match params {
                    Some(p) => Some(serde_json::from_str(p.get()).map_err(|e| {
                        ErrorObject::invalid_params(format!("invalid params: {e}"))
                    })?),
                    None => None,
                };
                encode(&f(value).await?)
            }
            None => Err(ErrorObject::method_not_found(&method)),
        },
    }
}

impl Service for ClientService {
    fn call(&self, req: Request, _ctx: RequestContext) -> BoxFuture<'static, HandlerResult> {
        Box::pin(answer(self.handlers.clone(), req.method, req.params))
    }

    fn notify(&self, n: Notification, _peer: &Peer) {
        let stale: &[&str] = match n.method.as_str() {
            "notifications/tools/list_changed" => &["tools/list"],
            "notifications/prompts/list_changed" => &["prompts/list"],
            "notifications/resources/list_changed" => {
                &["resources/list", "resources/templates/list"]
            }
            _ => &[],
        };
        if !stale.is_empty() {
            self.list_cache.lock().forget(stale);
        }
        // Notifications of a subscription go to its stream.
        let sub = n
            .params
            .as_deref()
            .filter(|p| p.get().contains(meta_keys::SUBSCRIPTION_ID))
            .and_then(|p| {
                let v: Value = serde_json::from_str(p.get()).ok()?;
                Some(match &v["_meta"][meta_keys::SUBSCRIPTION_ID] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
            });
        if let Some(id) = sub {
            let subs = self.subscriptions.lock();
            if let Some(tx) = subs.get(&id).cloned() {
                drop(subs);
                if tx.try_send(event_of(n)).is_err() {
                    tracing::warn!(subscription = %id, "a subscription's receiver is full or gone; event dropped");
                }
                return;
            }
        }
        let Some(events) = &self.handlers.events else {
            return;
        };
        let event = event_of(n);
        events(event);
    }
}
