//! [`Sessionless`]: the backend of the one-request states that serve legacy POSTs when
//! `HttpConfig::stateless` is on. Such a state lives as long as its POST's answer, so nothing
//! is kept for later (no stream resumes: its events are not stored), nothing is shared, and a
//! request to the client fails at once (its answer would come in another POST, which no
//! state waits for). The answer to the `initialize` the transport itself feeds the state is
//! swallowed.

use std::sync::Arc;

use oxmcp_jsonrpc::{Message, Request, RequestId};
use oxmcp_store::{AppendEvent, SessionRecord, StoreError, StoreResult, StoredEvent, StreamInfo};
use oxmcp_types::ProtocolVersion;

use super::{SessionBackend, Step, done};
use crate::server::endpoint::Inner;
use crate::server::refusal::Refusal;
use crate::server::scale_out::Elsewhere;
use crate::server::session::{HttpSession, Routed};

/// Why a request to the client fails in stateless mode.
const NO_WAY_BACK: &str = "the server is stateless (HttpConfig::stateless): the client's answer \
                           to a request would come in another POST, which nothing waits for";

/// The backend of a one-request state: keeps nothing.
pub(crate) struct Sessionless;

impl SessionBackend for Sessionless {
    fn start(&self, _inner: &Arc<Inner>) {}

    /// Never asked: a stateless endpoint looks no session up.
    fn lookup<'a>(
        &'a self,
        _inner: &'a Arc<Inner>,
        _id: &'a str,
        _principal: Option<&'a str>,
    ) -> Step<'a, Result<Arc<HttpSession>, Refusal>> {
        done(Err(Refusal::unknown_session()))
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

    /// Swallows the answer to the transport's own `initialize`, and fails a request to the
    /// client at once instead of sending it.
    fn before_route<'a>(
        &'a self,
        session: &'a HttpSession,
        routed: &'a mut Routed,
    ) -> Step<'a, bool> {
        if routed.ends
            && routed
                .related
                .as_ref()
                .is_some_and(|id| session.swallowed(id))
        {
            return done(false);
        }
        if let Some(id) = routed.request.take() {
            session.fail_request(id, NO_WAY_BACK);
            return done(false);
        }
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
        _session: &'a str,
        _stream: &'a str,
        _info: &'a StreamInfo,
    ) -> Step<'a, StoreResult<()>> {
        done(Ok(()))
    }

    fn append<'a>(&'a self, _event: AppendEvent<'a>, _detached: bool) -> Step<'a, StoreResult<()>> {
        done(Ok(()))
    }

    fn replay<'a>(
        &'a self,
        _session: &'a str,
        _stream: &'a str,
        _after: u64,
    ) -> Step<'a, StoreResult<Vec<StoredEvent>>> {
        done(Ok(Vec::new()))
    }

    fn forget_stream<'a>(
        &'a self,
        _session: &'a str,
        _stream: &'a str,
    ) -> Step<'a, StoreResult<()>> {
        done(Ok(()))
    }

    fn forget_session<'a>(&'a self, _session: &'a str) -> Step<'a, StoreResult<()>> {
        done(Ok(()))
    }

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
