//! The legacy lifecycle: `initialize`, `notifications/initialized`, and what is refused
//! before the handshake.

use std::sync::Arc;

use futures::future::BoxFuture;
use oxmcp_engine::{HandlerResult, Peer, RequestOptions};
use oxmcp_jsonrpc::{ErrorCode, ErrorObject, Notification, Request, parse_params};
use oxmcp_types::methods::{Initialized, ListRoots, Notification as _, RootsListChanged};
use oxmcp_types::{EmptyParams, Feature, InitializeParams, InitializeResult, ProtocolVersion};

use super::reply::{fail, ready};
use super::{Phase, Session};
use crate::echo::echo;

impl Session {
    pub(super) fn initialize(&self, req: &Request) -> BoxFuture<'static, HandlerResult> {
        let params: InitializeParams = match parse_params(req.params.as_deref()) {
            Ok(p) => p,
            Err(e) => return fail(e),
        };
        let version = ProtocolVersion::negotiate_legacy(&params.protocol_version);
        {
            let mut st = self.lock();
            if st.phase != Phase::New {
                return fail(ErrorObject::invalid_request(
                    "the session is already initialized",
                ));
            }
            st.phase = Phase::Initializing;
            st.version = version;
            st.client_info = Some(params.client_info);
            st.client_caps = params.capabilities;
        }
        let mut capabilities = self.server.capabilities();
        if !version.has(Feature::Completions) {
            capabilities.completions = None;
        }
        if !version.has(Feature::LegacyTasks) {
            capabilities.extra.remove("tasks");
        } else if self.principal.is_none()
            && let Some(serde_json::Value::Object(t)) = capabilities.extra.get_mut("tasks")
        {
            // Nobody to list tasks for: tasks/list is not offered (see session/tasks.rs).
            t.remove("list");
        }
        ready(
            &InitializeResult::default()
                .with_protocol_version(version.as_str().to_owned())
                .with_capabilities(capabilities)
                .with_server_info(self.server.about.info.clone())
                .with_instructions(self.server.about.instructions.clone()),
        )
    }

    /// A notification from the client: `initialized` completes the handshake;
    /// `roots/list_changed` drops the cached roots and reads them again.
    pub(super) fn on_notification(self: &Arc<Self>, n: &Notification, peer: &Peer) {
        match n.method.as_str() {
            RootsListChanged::METHOD => self.reread_roots(peer),
            Initialized::METHOD => {
                let mut st = self.lock();
                if st.phase == Phase::Initializing {
                    st.phase = Phase::Ready;
                }
            }
            other => tracing::debug!(method = other, "notification ignored"),
        }
    }

    /// The client's roots changed: forget them, read them again (`roots/list`), and tell
    /// the server's `on_roots_changed` hook. Only for a session whose client has roots.
    fn reread_roots(self: &Arc<Self>, peer: &Peer) {
        {
            let mut st = self.lock();
            if st.phase == Phase::New || st.client_caps.roots.is_none() {
                return;
            }
            st.roots = None;
        }
        let session = self.clone();
        let peer = peer.clone();
        tokio::spawn(async move {
            let asked = peer
                .request::<ListRoots>(&EmptyParams::default(), &RequestOptions::default())
                .await;
            match asked {
                Ok(result) => {
                    session.cache_roots(result.roots.clone());
                    if let Some(hook) = &session.server.hooks.on_roots_changed {
                        hook(&result.roots);
                    }
                }
                Err(e) => tracing::debug!("reading the changed roots failed: {e}"),
            }
        });
    }

    /// Whether the handshake has not begun (only `initialize` and `ping` are served).
    pub(super) fn before_initialize(&self) -> bool {
        self.lock().phase == Phase::New
    }

    /// Whether a JSON-RPC batch is allowed now (2025-03-26, after `initialize`).
    pub(super) fn batches_allowed(&self) -> bool {
        let st = self.lock();
        st.phase != Phase::New && st.version.has(Feature::Batching)
    }
}

/// -32600 for a request (other than `initialize` and `ping`) before `initialize`.
pub(super) fn not_initialized(req: &Request) -> BoxFuture<'static, HandlerResult> {
    fail(
        ErrorObject::new(
            ErrorCode::INVALID_REQUEST,
            format!("Invalid Request: {} before initialize", echo(&req.method)),
        )
        .with_data(serde_json::json!({ "reason": "not initialized" })),
    )
}
