//! Finding a session on any instance: the one held here (if the store still has it), or one
//! restored from the store.

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::Response;
use mcp_jsonrpc::{Inbound, Message, RequestId};
use mcp_types::ProtocolVersion;

use super::{Shared, store_failed};
use crate::respond::{retry_later, session_not_found};
use crate::server::Inner;
use crate::session::Session;

/// Request-id blocks are 2^32 wide; block numbers wrap below 2^20 so that ids stay exact
/// in a JSON number (below 2^53).
const BLOCKS: u64 = 1 << 20;

/// The session `id` for `principal`, from this instance or restored from the store.
pub(crate) async fn lookup(
    inner: &Arc<Inner>,
    id: &str,
    principal: Option<&str>,
) -> Result<Arc<Session>, Response> {
    let local = inner.sessions().get(id).cloned();
    let Some(shared) = inner.shared() else {
        return local
            .filter(|s| s.owner.as_deref() == principal)
            .ok_or_else(session_not_found);
    };
    match local {
        Some(s) if s.owner.as_deref() != principal => Err(session_not_found()),
        Some(s) => match shared.op(shared.store.touch_session(id)).await {
            Ok(true) => Ok(s),
            Ok(false) => {
                // Deleted on another instance (or expired in the store).
                inner.drop_local(id);
                Err(session_not_found())
            }
            Err(e) => Err(store_failed(&e)),
        },
        None => restore(inner, shared, id, principal).await,
    }
}

/// Starts serving a session another instance made: its engine gets the client's
/// `initialize`, `notifications/initialized`, log level and subscriptions again (their
/// answers go nowhere), and is then ready for the client's request.
pub(crate) async fn restore(
    inner: &Arc<Inner>,
    shared: &Arc<Shared>,
    id: &str,
    principal: Option<&str>,
) -> Result<Arc<Session>, Response> {
    let _one = shared.restoring.lock().await;
    if let Some(s) = inner.sessions().get(id).cloned() {
        return match s.owner.as_deref() == principal {
            true => Ok(s),
            false => Err(session_not_found()),
        };
    }
    let record = match shared.op(shared.store.load_session(id)).await {
        Ok(Some(r)) if r.owner.as_deref() == principal => r,
        Ok(_) => return Err(session_not_found()),
        Err(e) => return Err(store_failed(&e)),
    };
    if inner.sessions().len() >= inner.config.max_sessions {
        return Err(retry_later(
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            Duration::from_secs(1),
            "Too many sessions",
        ));
    }
    let block = match shared.op(shared.store.next_block(id)).await {
        Ok(b) => b % BLOCKS,
        Err(e) => return Err(store_failed(&e)),
    };
    let init = match Message::decode_str(&record.init) {
        Ok(Message::Request(r)) if r.method == "initialize" => r,
        _ => {
            tracing::warn!(
                session = id,
                "stored session has no usable initialize; dropped"
            );
            return Err(session_not_found());
        }
    };
    let params: serde_json::Value = init
        .params
        .as_deref()
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or_default();
    let version = ProtocolVersion::parse(&record.version).unwrap_or(ProtocolVersion::LATEST_LEGACY);
    let first_id = ((block as i64) << 32) | 1;
    let session = inner.start_replica(id.to_owned(), version, record.owner.clone(), first_id);
    let own = |n: &str| RequestId::String(format!("mcp-store-{n}"));
    session.feed_own(own("init"), "initialize", params).await;
    let initialized = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    session.feed(Inbound::Frame(initialized.to_vec())).await;
    if let Some(level) = &record.log_level {
        let p = serde_json::json!({ "level": level });
        session.feed_own(own("level"), "logging/setLevel", p).await;
    }
    for (i, uri) in record.subscriptions.iter().enumerate() {
        let p = serde_json::json!({ "uri": uri });
        session
            .feed_own(own(&format!("sub-{i}")), "resources/subscribe", p)
            .await;
    }
    session.mark_initialized();
    tracing::debug!(
        session = id,
        instance = shared.instance(),
        "session restored from the store"
    );
    Ok(session)
}
