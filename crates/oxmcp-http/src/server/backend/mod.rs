//! Where an endpoint keeps what its sessions need beyond this process: the [`SessionBackend`]
//! trait, with [`Local`] (this instance only: sessions here, stream events in an
//! [`oxmcp_store::EventLog`]) and `crate::server::scale_out::ScaleOut` (several instances
//! sharing an [`oxmcp_store::Store`]). An endpoint picks one, once: the local one unless
//! `StreamableHttp::with_store` was given a store before serving. ([`Sessionless`], which
//! keeps nothing, serves the one-request states of `HttpConfig::stateless`.) The request paths and the
//! sessions call it without asking which kind it is.
//!
//! Every operation is one call through `Arc<dyn SessionBackend>`. What the local backend
//! answers at once comes back as a ready future ([`Step`]), so it costs no allocation;
//! only work that waits on a store (or on the event log's own future) is boxed.

mod local;
mod sessionless;

use std::future::{Future, Ready};
use std::sync::Arc;

use crate::server::refusal::Refusal;
use futures::future::{BoxFuture, Either};
use oxmcp_jsonrpc::{Message, Request, RequestId};
use oxmcp_store::{AppendEvent, SessionRecord, StoreError, StoreResult, StoredEvent, StreamInfo};
use oxmcp_types::ProtocolVersion;

pub(crate) use local::Local;
pub(crate) use sessionless::Sessionless;

use crate::server::endpoint::Inner;
use crate::server::scale_out::Elsewhere;
use crate::server::session::{HttpSession, Routed};

/// What a backend operation returns: ready at once (no allocation), or a boxed future.
pub(crate) type Step<'a, T> = Either<Ready<T>, BoxFuture<'a, T>>;

/// A [`Step`] that is ready at once.
pub(crate) fn done<'a, T>(value: T) -> Step<'a, T> {
    Either::Left(std::future::ready(value))
}

/// A [`Step`] that waits on `future`.
pub(crate) fn later<'a, T>(future: impl Future<Output = T> + Send + 'a) -> Step<'a, T> {
    Either::Right(Box::pin(future))
}

/// What sessions share beyond this process, and where their streams' events are kept.
pub(crate) trait SessionBackend: Send + Sync + 'static {
    /// Starts the backend's own tasks, which end with the endpoint.
    fn start(&self, inner: &Arc<Inner>);

    /// Whether its idle sessions may be parked ([`HttpSession::park`]): only where every
    /// message for a session comes through this instance's request paths (which start a
    /// parked engine again), not where another instance's changes are fed to it.
    fn parks(&self) -> bool {
        false
    }

    /// The session `id` of `principal` (a session is only ever used by the principal that
    /// opened it: to anyone else it does not exist).
    fn lookup<'a>(
        &'a self,
        inner: &'a Arc<Inner>,
        id: &'a str,
        principal: Option<&'a str>,
    ) -> Step<'a, Result<Arc<HttpSession>, Refusal>>;

    /// What is saved of a new session once its `initialize` succeeds (`None`: nothing).
    fn session_record(
        &self,
        version: ProtocolVersion,
        owner: Option<&str>,
        init: &Request,
    ) -> Option<SessionRecord>;

    /// Saves a new session's record (before its client learns its id).
    fn save_session<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
    ) -> Step<'a, StoreResult<()>>;

    /// Ends a session everywhere it is served (DELETE), before this instance drops it.
    fn end_session<'a>(&'a self, id: &'a str) -> Step<'a, StoreResult<()>>;

    /// Passes on what a POST to an existing session must tell other instances; returns the
    /// messages this instance's engine gets (`None`: all of them).
    fn share_incoming<'a>(
        &'a self,
        session: &'a HttpSession,
        messages: &'a [Message],
    ) -> Step<'a, Result<Option<Vec<Message>>, Refusal>>;

    /// Notes the state changes that `messages` (whose requests are now in flight) ask for.
    fn expect_changes(&self, session: &HttpSession, messages: &[Message]);

    /// Looks at an outgoing message before it is routed (and may rewrite an answer); `false`
    /// when it goes to no stream (the answer to a request of the transport's own).
    fn before_route<'a>(
        &'a self,
        session: &'a HttpSession,
        routed: &'a mut Routed,
    ) -> Step<'a, bool>;

    /// Requests whose streams just ended.
    fn ended(&self, session: &HttpSession, ended: &[RequestId]);

    /// The prefix of the session's stream tokens.
    fn stream_prefix(&self) -> &str;

    /// What is recorded of a new stream answering `ids` (none for a GET stream), for
    /// instances that resume it; `None` when only this instance reads its log.
    fn stream_info(&self, ids: &[RequestId], batch: bool) -> Option<StreamInfo>;

    /// Records a stream before its first event.
    fn open_stream<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        info: &'a StreamInfo,
    ) -> Step<'a, StoreResult<()>>;

    /// Stores one event of a stream; `detached`: no client is attached to it here.
    fn append<'a>(&'a self, event: AppendEvent<'a>, detached: bool) -> Step<'a, StoreResult<()>>;

    /// The stream's stored events with `seq > after`, oldest first.
    fn replay<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        after: u64,
    ) -> Step<'a, StoreResult<Vec<StoredEvent>>>;

    /// Drops one stream's events.
    fn forget_stream<'a>(&'a self, session: &'a str, stream: &'a str) -> Step<'a, StoreResult<()>>;

    /// Drops what this instance keeps of a session's events (a shared record is dropped by
    /// DELETE, or expires).
    fn forget_session<'a>(&'a self, session: &'a str) -> Step<'a, StoreResult<()>>;

    /// Resumes a stream this instance does not hold, after event `after`.
    fn resume_elsewhere<'a>(
        &'a self,
        inner: &'a Arc<Inner>,
        session: &'a Arc<HttpSession>,
        token: &'a str,
        after: u64,
    ) -> Step<'a, Result<Elsewhere, StoreError>>;
}
