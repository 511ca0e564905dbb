//! `subscriptions/listen` (2026-07-28): one long-lived request whose stream carries the
//! change notifications the client opted in to, each tagged with the subscription id.

use std::sync::Arc;

use oxmcp_engine::RequestContext;
use oxmcp_jsonrpc::ErrorObject;
use oxmcp_types::methods::{
    Notification as _, PromptListChanged, ResourceListChanged, ResourceUpdated,
    SubscriptionsAcknowledged, ToolListChanged,
};
use oxmcp_types::{ListenFilter, meta_keys};
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;

use crate::session::too_many_subscriptions;
use crate::state::{Change, ServerState};

fn wanted(filter: &ListenFilter, change: &Change) -> bool {
    match change {
        Change::Tools => filter.tools_list_changed == Some(true),
        Change::Prompts => filter.prompts_list_changed == Some(true),
        Change::Resources => filter.resources_list_changed == Some(true),
        Change::ResourceUpdated(uri) => filter
            .resource_subscriptions
            .as_ref()
            .is_some_and(|s| s.contains(uri)),
    }
}

/// The resources one listen request holds: `on_subscribe` accepted each, and `on_unsubscribe`
/// hears of each when the request ends, however it ends.
struct Held {
    server: Arc<ServerState>,
    /// Whom they are held for (the verified principal of the request's connection).
    principal: Option<String>,
    uris: Vec<String>,
}

impl Held {
    /// Holds each distinct URI of `uris` (at most `max_subscriptions` of them); if the hook
    /// refuses one, those held so far are released and the refusal is the answer.
    fn take(
        server: &Arc<ServerState>,
        principal: Option<String>,
        uris: &[String],
    ) -> Result<Held, ErrorObject> {
        let limit = server.about.config.max_subscriptions;
        if uris.len() > limit {
            return Err(too_many_subscriptions(limit));
        }
        let mut held = Held {
            server: server.clone(),
            principal,
            uris: Vec::new(),
        };
        let distinct: std::collections::BTreeSet<&String> = uris.iter().collect();
        for uri in distinct {
            if let Some(hook) = &server.hooks.on_subscribe {
                hook(held.principal.as_deref(), uri)?;
            }
            held.uris.push(uri.clone());
        }
        Ok(held)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(hook) = &self.server.hooks.on_unsubscribe {
            for uri in &self.uris {
                hook(self.principal.as_deref(), uri);
            }
        }
    }
}

/// Serves one subscription until the client cancels it or goes away; its result (to be
/// finished as every 2026-07-28 result is) tags its end.
pub(crate) async fn run(
    server: Arc<ServerState>,
    principal: Option<String>,
    filter: ListenFilter,
    rc: RequestContext,
) -> Result<serde_json::Value, ErrorObject> {
    let mut changes = server.live.changes.subscribe();
    let _held = Held::take(
        &server,
        principal,
        filter.resource_subscriptions.as_deref().unwrap_or(&[]),
    )?;
    // The subscription is named by the listen request's own id (a number stays a number).
    let tag = json!({ meta_keys::SUBSCRIPTION_ID: rc.id.to_value() });
    let ack = json!({ "notifications": filter, "_meta": tag });
    rc.peer
        .notify_raw(SubscriptionsAcknowledged::METHOD, &ack)
        .await
        .map_err(|e| ErrorObject::internal(e.to_string()))?;
    loop {
        let change = tokio::select! {
            c = changes.recv() => c,
            () = rc.cancel.cancelled() => break,
            () = rc.closing.cancelled() => break,
            () = rc.peer.output_closed() => break,
        };
        let change = match change {
            Ok(c) => c,
            Err(RecvError::Lagged(n)) => {
                tracing::warn!(
                    missed = n,
                    "a subscription fell behind; some changes were not delivered"
                );
                continue;
            }
            Err(RecvError::Closed) => break,
        };
        if !wanted(&filter, &change) {
            continue;
        }
        let (method, params) = match change {
            Change::Tools => (ToolListChanged::METHOD, json!({ "_meta": tag })),
            Change::Prompts => (PromptListChanged::METHOD, json!({ "_meta": tag })),
            Change::Resources => (ResourceListChanged::METHOD, json!({ "_meta": tag })),
            Change::ResourceUpdated(uri) => {
                (ResourceUpdated::METHOD, json!({ "uri": uri, "_meta": tag }))
            }
        };
        if rc.peer.notify_raw(method, &params).await.is_err() {
            break;
        }
    }
    Ok(json!({ "resultType": "complete", "_meta": tag }))
}
