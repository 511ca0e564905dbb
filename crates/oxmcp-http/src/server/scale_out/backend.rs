//! [`ScaleOut`]: the backend of an endpoint serving with other instances through a shared
//! store (see the module's overview): every hook does its multi-instance part here.

use std::sync::Arc;

use crate::server::refusal::Refusal;
use oxmcp_jsonrpc::{Message, Request, RequestId};
use oxmcp_store::{
    AppendEvent, BusEvent, SessionRecord, StoreError, StoreResult, StoredEvent, StreamInfo,
};
use oxmcp_types::ProtocolVersion;

use super::{Elsewhere, Shared};
use crate::server::backend::{SessionBackend, Step, done, later};
use crate::server::endpoint::Inner;
use crate::server::session::{HttpSession, Routed};

/// The store-backed backend: the endpoint's handle on the shared store.
pub(crate) struct ScaleOut(Arc<Shared>);

impl ScaleOut {
    /// A backend over `shared`.
    pub(crate) fn new(shared: Shared) -> Self {
        Self(Arc::new(shared))
    }
}

impl SessionBackend for ScaleOut {
    fn start(&self, inner: &Arc<Inner>) {
        super::bus::start(inner, &self.0);
    }

    fn lookup<'a>(
        &'a self,
        inner: &'a Arc<Inner>,
        id: &'a str,
        principal: Option<&'a str>,
    ) -> Step<'a, Result<Arc<HttpSession>, Refusal>> {
        later(super::restore::lookup(inner, &self.0, id, principal))
    }

    fn session_record(
        &self,
        version: ProtocolVersion,
        owner: Option<&str>,
        init: &Request,
    ) -> Option<SessionRecord> {
        Some(SessionRecord {
            version: version.as_str().to_owned(),
            owner: owner.map(str::to_owned),
            init: Message::Request(init.clone()).encode(),
            log_level: None,
            subscriptions: Vec::new(),
            created_ms: oxmcp_store::now_ms(),
        })
    }

    fn save_session<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
    ) -> Step<'a, StoreResult<()>> {
        let shared = &self.0;
        later(shared.op(shared.store.create_session(id, record)))
    }

    /// Gone from the store first (every instance then answers 404), then every instance
    /// drops what it holds.
    fn end_session<'a>(&'a self, id: &'a str) -> Step<'a, StoreResult<()>> {
        let shared = &self.0;
        later(async move {
            shared.op(shared.store.delete_session(id)).await?;
            let ended = BusEvent::SessionEnded {
                session: id.to_owned(),
            };
            if let Err(e) = shared.publish(ended).await {
                tracing::warn!(session = %id, "other instances drop the session on their next use of it: {e}");
            }
            Ok(())
        })
    }

    fn share_incoming<'a>(
        &'a self,
        session: &'a HttpSession,
        messages: &'a [Message],
    ) -> Step<'a, Result<Option<Vec<Message>>, Refusal>> {
        later(super::incoming::share(&self.0, session, messages))
    }

    fn expect_changes(&self, session: &HttpSession, messages: &[Message]) {
        super::incoming::expect_changes(session, messages);
    }

    /// The answers to requests of the transport's own go nowhere; the client's state changes
    /// are shared once accepted, before it learns so; a request to the client is recorded,
    /// since the client may answer on another instance.
    fn before_route<'a>(
        &'a self,
        session: &'a HttpSession,
        routed: &'a mut Routed,
    ) -> Step<'a, bool> {
        let shared = &self.0;
        later(async move {
            if routed.ends {
                if routed
                    .related
                    .as_ref()
                    .is_some_and(|id| session.swallowed(id))
                {
                    return false;
                }
                session.share_answered(shared, routed).await;
            }
            if let Some(id) = &routed.request {
                let key = id.to_value().to_string();
                if let Err(e) = shared.op(shared.store.put_pending(&session.id, &key)).await {
                    tracing::warn!(session = %session.id, "request {key} to the client not registered: {e}");
                }
            }
            true
        })
    }

    fn ended(&self, session: &HttpSession, ended: &[RequestId]) {
        session.forget_changes(ended);
    }

    fn stream_prefix(&self) -> &str {
        &self.0.tag
    }

    fn stream_info(&self, ids: &[RequestId], batch: bool) -> Option<StreamInfo> {
        Some(StreamInfo {
            owner: self.0.store.instance().to_owned(),
            ids: ids.iter().map(RequestId::to_value).collect(),
            batch,
        })
    }

    fn open_stream<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        info: &'a StreamInfo,
    ) -> Step<'a, StoreResult<()>> {
        let shared = &self.0;
        later(shared.op(shared.store.open_stream(session, stream, info)))
    }

    /// The end of a cancelled request's stream is kept too: another instance may be tailing
    /// the stream, and rung when no client is attached here.
    fn append<'a>(&'a self, event: AppendEvent<'a>, detached: bool) -> Step<'a, StoreResult<()>> {
        let shared = &self.0;
        later(async move {
            let stored = shared.op(shared.store.append(event)).await;
            if detached {
                shared.ring(event.session, event.stream).await;
            }
            stored
        })
    }

    fn replay<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        after: u64,
    ) -> Step<'a, StoreResult<Vec<StoredEvent>>> {
        let shared = &self.0;
        later(shared.op(shared.store.replay(session, stream, after)))
    }

    fn forget_stream<'a>(&'a self, session: &'a str, stream: &'a str) -> Step<'a, StoreResult<()>> {
        let shared = &self.0;
        later(shared.op(shared.store.forget_stream(session, stream)))
    }

    /// Nothing: the shared record is dropped by DELETE, or expires, with its streams.
    fn forget_session<'a>(&'a self, _session: &'a str) -> Step<'a, StoreResult<()>> {
        done(Ok(()))
    }

    fn resume_elsewhere<'a>(
        &'a self,
        inner: &'a Arc<Inner>,
        session: &'a Arc<HttpSession>,
        token: &'a str,
        after: u64,
    ) -> Step<'a, Result<Elsewhere, StoreError>> {
        later(super::tail::resume_elsewhere(
            inner, &self.0, session, token, after,
        ))
    }
}
