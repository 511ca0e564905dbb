//! `subscriptions/listen` (2026-07-28): one long-lived request whose stream carries the
//! change notifications the client opted in to, each tagged with the subscription id.

use std::sync::Arc;

use mcp_engine::{HandlerResult, RequestContext};
use mcp_jsonrpc::{ErrorObject, to_raw};
use mcp_types::{ListenFilter, meta_keys};
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;

use crate::server::{Change, Inner};

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

/// Serves one subscription until the client cancels it or goes away.
pub(crate) async fn run(
    server: Arc<Inner>,
    filter: ListenFilter,
    rc: RequestContext,
) -> HandlerResult {
    let mut changes = server.changes.subscribe();
    if let (Some(hook), Some(uris)) = (&server.on_subscribe, &filter.resource_subscriptions) {
        for uri in uris {
            hook(uri);
        }
    }
    // The subscription is named by the listen request's own id (a number stays a number).
    let tag = json!({ meta_keys::SUBSCRIPTION_ID: rc.id.to_value() });
    let ack = json!({ "notifications": filter, "_meta": tag });
    rc.peer
        .notify_raw("notifications/subscriptions/acknowledged", &ack)
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
            Change::Tools => ("notifications/tools/list_changed", json!({ "_meta": tag })),
            Change::Prompts => (
                "notifications/prompts/list_changed",
                json!({ "_meta": tag }),
            ),
            Change::Resources => (
                "notifications/resources/list_changed",
                json!({ "_meta": tag }),
            ),
            Change::ResourceUpdated(uri) => (
                "notifications/resources/updated",
                json!({ "uri": uri, "_meta": tag }),
            ),
        };
        if rc.peer.notify_raw(method, &params).await.is_err() {
            break;
        }
    }
    to_raw(&json!({ "resultType": "complete", "_meta": tag }))
        .map_err(|e| ErrorObject::internal(e.to_string()))
}
