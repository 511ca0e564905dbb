//! [`Local`]: the backend of an endpoint serving alone. Its sessions live in this process
//! only, and its streams' events in an [`EventLog`] (a [`oxmcp_store::MemoryEventLog`] by
//! default), so a stream resumes on this instance. Nothing is shared: every hook that would
//! tell other instances something does nothing, at no cost.

use std::sync::Arc;

use oxmcp_jsonrpc::{Message, Request, RequestId};
use oxmcp_store::{
    AppendEvent, EventLog, SessionRecord, StoreError, StoreResult, StoredEvent, StreamInfo,
};
use oxmcp_types::ProtocolVersion;

use super::{SessionBackend, Step, done};
use crate::server::endpoint::Inner;
use crate::server::refusal::Refusal;
use crate::server::scale_out::Elsewhere;
use crate::server::session::{HttpSession, Routed};

/// The backend of one instance: its event log.
pub(crate) struct Local {
    log: Arc<dyn EventLog>,
}

impl Local {
    /// A backend keeping stream events in `log`.
    pub(crate) fn new(log: Arc<dyn EventLog>) -> Self {
        Self { log }
    }
}

impl SessionBackend for Local {
    fn start(&self, _inner: &Arc<Inner>) {}

    fn parks(&self) -> bool {
        true
    }

    fn lookup<'a>(
        &'a self,
        inner: &'a Arc<Inner>,
        id: &'a str,
        principal: Option<&'a str>,
    ) -> Step<'a, Result<Arc<HttpSession>, Refusal>> {
        let local = inner.sessions().get(id).cloned();
        done(
            local
                .filter(|s| s.owner.as_deref() == principal)
                .ok_or_else(Refusal::unknown_session),
        )
    }

    fn session_record(
        &self,
        _version: ProtocolVersion,
        _owner: Option<&str>,
        _init: &Request,
    ) -> Option<SessionRecord> {
        None
    }

    fn save_session<'a>(
        &'a self,
        _id: &'a str,
        _record: &'a SessionRecord,
    ) -> Step<'a, StoreResult<()>> {
        done(Ok(()))
    }

    fn end_session<'a>(&'a self, _id: &'a str) -> Step<'a, StoreResult<()>> {
        done(Ok(()))
    }

    fn share_incoming<'a>(
        &'a self,
        _session: &'a HttpSession,
        _messages: &'a [Message],
    ) -> Step<'a, Result<Option<Vec<Message>>, Refusal>> {
        done(Ok(None))
    }

    fn expect_changes(&self, _session: &HttpSession, _messages: &[Message]) {}

    fn before_route<'a>(
        &'a self,
        _session: &'a HttpSession,
        _routed: &'a mut Routed,
    ) -> Step<'a, bool> {
        done(true)
    }

    fn ended(&self, _session: &HttpSession, _ended: &[RequestId]) {}

    fn stream_prefix(&self) -> &str {
        "s"
    }

    fn stream_info(&self, _ids: &[RequestId], _batch: bool) -> Option<StreamInfo> {
        None
    }

    fn open_stream<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        info: &'a StreamInfo,
    ) -> Step<'a, StoreResult<()>> {
        futures::future::Either::Right(self.log.open_stream(session, stream, info))
    }

    /// The end of a cancelled request's stream (empty `data`) is not kept: no other instance
    /// tails this one's streams.
    fn append<'a>(&'a self, event: AppendEvent<'a>, _detached: bool) -> Step<'a, StoreResult<()>> {
        if event.data.is_empty() {
            return done(Ok(()));
        }
        futures::future::Either::Right(self.log.append(event))
    }

    fn replay<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        after: u64,
    ) -> Step<'a, StoreResult<Vec<StoredEvent>>> {
        futures::future::Either::Right(self.log.replay(session, stream, after))
    }

    fn forget_stream<'a>(&'a self, session: &'a str, stream: &'a str) -> Step<'a, StoreResult<()>> {
        futures::future::Either::Right(self.log.forget_stream(session, stream))
    }

    fn forget_session<'a>(&'a self, session: &'a str) -> Step<'a, StoreResult<()>> {
        futures::future::Either::Right(self.log.forget_session(session))
    }

    /// Another instance's streams are never resumed here: a stream unknown to the session is
    /// a GET stream whose events are gone.
    fn resume_elsewhere<'a>(
        &'a self,
        _inner: &'a Arc<Inner>,
        _session: &'a Arc<HttpSession>,
        _token: &'a str,
        _after: u64,
    ) -> Step<'a, Result<Elsewhere, StoreError>> {
        done(Ok(Elsewhere::Standalone(Vec::new())))
    }
}
