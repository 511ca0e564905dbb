//! POST on the Streamable HTTP endpoint: a 2026-07-28 request (stateless), or messages of a
//! session (which an `initialize` creates).

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use oxmcp_jsonrpc::{ErrorObject, Frame, Inbound, Message, RequestId};
use oxmcp_types::{Feature, InitializeParams, ProtocolVersion};
use tokio::sync::mpsc;
use tracing::Instrument as _;

use crate::server::admission::{
    accepting, host_checks, plausible_session_id, stream_slot, version_checks,
};
use crate::server::clients::{Client, Refused};
use crate::server::config::ResponseMode;
use crate::server::endpoint::Inner;
use crate::server::protobuf::Encoding;
use crate::server::refusal::Refusal;
use crate::server::replies::{SESSION_HEADER, accepts, answer_response, header_str, read_body};
use crate::server::session::{Event, HttpSession, handshake_done, random_hex};
use crate::server::sse_stream::{priming, sse_event, sse_response};

/// What one POST body holds.
pub(crate) struct Posted {
    pub(crate) messages: Vec<Message>,
    pub(crate) batch: bool,
    /// Answers for invalid batch entries, merged into the batch's answer.
    pub(crate) entry_errors: Vec<Message>,
    /// The body the engine gets (the valid entries only, when some were invalid).
    body: Bytes,
}

impl Posted {
    /// Keeps only `messages` (the others went to another instance).
    pub(crate) fn keep_only(&mut self, messages: Vec<Message>) {
        if self.batch {
            self.body = Bytes::from(oxmcp_jsonrpc::encode_batch(&messages));
        }
        self.messages = messages;
    }

    /// The lone request of a POST that holds nothing else, taken out.
    fn single_request(&mut self) -> Option<oxmcp_jsonrpc::Request> {
        if self.batch || self.messages.len() != 1 {
            return None;
        }
        match self.messages.pop() {
            Some(Message::Request(r)) => Some(r),
            other => {
                self.messages.extend(other);
                None
            }
        }
    }

    /// What the engine gets: a lone message as decoded here (not decoded twice), a batch as
    /// its text.
    fn take_input(&mut self, context: oxmcp_jsonrpc::TransportContext) -> Inbound {
        if !self.batch
            && self.messages.len() == 1
            && let Some(m) = self.messages.pop()
        {
            return Inbound::decoded(m, Some(context));
        }
        Inbound::Frame(self.body.to_vec())
    }
}

/// Decodes a POST body; invalid entries of a batch are answered here, each with its own
/// error, and the engine gets the valid rest.
fn decode(inner: &Inner, body: Bytes) -> Result<Posted, Refusal> {
    // A batch over the limit is refused while it is parsed (-32600, 400).
    let max = inner.engine.max_batch;
    match Frame::decode_limited(&body, max) {
        Frame::Single(Ok(m)) => Ok(Posted {
            messages: vec![m],
            batch: false,
            entry_errors: Vec::new(),
            body,
        }),
        Frame::Single(Err(e)) => Err(Refusal::undecodable(e)),
        Frame::Batch(items) => {
            let mut ok = Vec::with_capacity(items.len());
            let mut entry_errors = Vec::new();
            for item in items {
                match item {
                    Ok(m) => ok.push(m),
                    Err(e) => entry_errors.push(Message::error(e.id, e.error)),
                }
            }
            let body = if entry_errors.is_empty() {
                body
            } else {
                Bytes::from(oxmcp_jsonrpc::encode_batch(&ok))
            };
            Ok(Posted {
                messages: ok,
                batch: true,
                entry_errors,
                body,
            })
        }
    }
}

/// Header checks that need no body: Host/Origin first (nothing is read for a refused
/// request), then `Content-Type` and `Accept`.
fn header_checks(inner: &Inner, headers: &HeaderMap) -> Result<(), Refusal> {
    accepting(&inner.config)?;
    host_checks(&inner.config, headers)
}

fn media_checks(headers: &HeaderMap) -> Result<(), Refusal> {
    let ct = header_str(headers, header::CONTENT_TYPE).unwrap_or("");
    let json = ct
        .split(';')
        .next()
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"));
    if !json && !crate::server::protobuf::is_protobuf(headers) {
        return Err(Refusal::invalid_request(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/json (or application/mcp+protobuf)",
        ));
    }
    let plain =
        accepts(headers, "application/json") || crate::server::protobuf::wants_protobuf(headers);
    if !(plain && accepts(headers, "text/event-stream")) {
        return Err(Refusal::invalid_request(
            StatusCode::NOT_ACCEPTABLE,
            "Accept must list application/json and text/event-stream",
        ));
    }
    Ok(())
}

pub(crate) async fn handle_post(State(inner): State<Arc<Inner>>, request: Request) -> Response {
    let encoding = Encoding::of(request.headers());
    encoding.refusal(post(inner, request, encoding).await)
}

/// Answers a POST, its messages in `encoding` (refusals in JSON: `handle_post` writes them in
/// `encoding`).
async fn post(inner: Arc<Inner>, request: Request, encoding: Encoding) -> Response {
    let (mut parts, body) = request.into_parts();
    if let Err(r) = header_checks(&inner, &parts.headers) {
        return r.into_response();
    }
    if let Err(r) = crate::auth::authenticate(inner.config.auth.as_deref(), &mut parts).await {
        return r.into_response();
    }
    let headers = &parts.headers;
    let mut body = match read_body(&inner.config, headers, body).await {
        Ok(b) => b,
        Err(r) => return r.into_response(),
    };
    if crate::server::protobuf::is_protobuf(headers) {
        body = match crate::server::protobuf::body_to_json(&body, inner.config.max_body) {
            Ok(b) => b,
            Err(r) => return r.into_response(),
        };
    }
    // A modern request's version header is checked where its id is known (in `stateless`).
    let modern = crate::server::stateless::is_modern(headers, &body);
    if !modern && let Err(r) = version_checks(headers) {
        return r.into_response();
    }
    if let Err(r) = media_checks(headers) {
        return r.into_response();
    }
    let posted = match decode(&inner, body) {
        Ok(p) => p,
        Err(r) => return r.into_response(),
    };
    if let Err(r) = crate::auth::check_scopes(
        inner.config.auth.as_deref(),
        &parts.extensions,
        &posted.messages,
    ) {
        return r.into_response();
    }
    let client = Client::of(&inner.config, &parts.extensions);
    let span = crate::server::log_span::post(headers, &posted.messages, client.principal());
    // A listen stream lives no longer than the token it was opened with.
    let listens =
        |m: &Message| matches!(m, Message::Request(r) if r.method == "subscriptions/listen");
    let lease = (modern && posted.messages.iter().any(listens))
        .then(|| crate::server::lease::Lease::open(&inner.config, &parts))
        .flatten();
    // Moved, not cloned: nothing here reads the extensions after this.
    let context: oxmcp_jsonrpc::TransportContext = Arc::new(std::mem::take(&mut parts.extensions));
    if modern {
        if posted.batch {
            return Refusal::bad_request("JSON-RPC batches are not part of protocol 2026-07-28")
                .into_response();
        }
        return match posted.messages.into_iter().next() {
            Some(m) => {
                let principal = client.principal().map(str::to_owned);
                let answer = crate::server::stateless::handle(
                    &inner, headers, m, principal, context, encoding,
                )
                .instrument(span)
                .await;
                crate::server::sse_stream::until_lease_ends(answer, lease)
            }
            None => Refusal::bad_request("empty request").into_response(),
        };
    }
    post_in_session(&inner, headers, posted, &client, context, encoding)
        .instrument(span)
        .await
}

/// A legacy POST once its body is decoded and checked: found or started in its session, shared
/// with the other instances if the session is shared, answered.
async fn post_in_session(
    inner: &Arc<Inner>,
    headers: &HeaderMap,
    mut posted: Posted,
    client: &Client,
    context: oxmcp_jsonrpc::TransportContext,
    encoding: Encoding,
) -> Response {
    if inner.config.stateless {
        let session_less = crate::server::sessionless::post;
        return session_less(inner, headers, posted, client, context, encoding).await;
    }
    let (session, new_session) = match find_or_start(inner, headers, &posted, client).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    if !new_session {
        let backend = inner.backend();
        match backend.share_incoming(&session, &posted.messages).await {
            Ok(Some(keep)) => posted.keep_only(keep),
            Ok(None) => {}
            Err(r) => return r.into(),
        }
    }
    session.touch();
    // The client's `notifications/initialized`, the first time: the session may park as
    // soon as its engine has handled it.
    let handshake_ended = !new_session
        && posted.messages.iter().any(handshake_done)
        && session.mark_initialized()
        && posted.messages.iter().any(initialized_notification);
    if posted.batch && !session.version().has(Feature::Batching) {
        return Refusal::bad_request(
            "JSON-RPC batches are not supported by the negotiated protocol version",
        )
        .into_response();
    }
    let parking = handshake_ended.then(|| session.clone());
    let response = answer(inner, session, new_session, posted, context, encoding).await;
    if let Some(session) = parking
        && inner.config.park_idle_after.is_some()
    {
        session.park_after_handshake();
    }
    response
}

/// `notifications/initialized`.
fn initialized_notification(m: &Message) -> bool {
    matches!(m, Message::Notification(n) if n.method == "notifications/initialized")
}

/// The session a POST belongs to, or a new one for an `initialize` without a session id.
async fn find_or_start(
    inner: &Arc<Inner>,
    headers: &HeaderMap,
    posted: &Posted,
    client: &Client,
) -> Result<(Arc<HttpSession>, bool), Response> {
    match header_str(headers, &SESSION_HEADER) {
        Some(id) if !plausible_session_id(id) => Err(Refusal::malformed_session_id().into()),
        // A session is only ever used by the principal that opened it: to anyone else it
        // does not exist.
        Some(id) => inner
            .backend()
            .lookup(inner, id, client.principal())
            .await
            .map(|s| (s, false))
            .map_err(Into::into),
        None => {
            let init = posted.messages.iter().find_map(|m| match m {
                Message::Request(r) if r.method == "initialize" => Some(r),
                _ => None,
            });
            let Some(init) = init.filter(|_| !posted.batch) else {
                return Err(Refusal::missing_session_id().into());
            };
            let requested = oxmcp_jsonrpc::parse_params::<InitializeParams>(init.params.as_deref())
                .map(|p| ProtocolVersion::negotiate_legacy(&p.protocol_version))
                .unwrap_or(ProtocolVersion::LATEST_LEGACY);
            let session = new_session(inner, requested, client)?;
            let backend = inner.backend();
            if let Some(record) = backend.session_record(requested, client.principal(), init) {
                *session.record.lock() = Some(Box::new(record));
            }
            Ok((session, true))
        }
    }
}

/// A new session, within the session caps of the endpoint and of the client.
fn new_session(
    inner: &Arc<Inner>,
    version: ProtocolVersion,
    client: &Client,
) -> Result<Arc<HttpSession>, Response> {
    inner.session_room()?;
    match inner.clients.admit(&inner.config, client) {
        Ok(()) => {}
        Err(Refused::TooMany) => {
            return Err(Refusal::retry_later(
                StatusCode::TOO_MANY_REQUESTS,
                None,
                Duration::from_secs(1),
                "Too many sessions for this client; end one (DELETE) first",
            )
            .into());
        }
        Err(Refused::TooFast(wait)) => {
            return Err(Refusal::retry_later(
                StatusCode::TOO_MANY_REQUESTS,
                None,
                wait,
                "Too many new sessions from this client; slow down",
            )
            .into());
        }
    }
    let Some(id) = random_hex(16) else {
        // Without OS randomness a session id would be guessable: make none.
        if let Some(key) = client.key() {
            inner.clients.release(&key);
        }
        return Err(Refusal::retry_later(
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            Duration::from_secs(1),
            "Cannot make a secure session id right now",
        )
        .into());
    };
    Ok(inner.start_session(id, version, client))
}

/// Hands the messages to the session's engine and answers the POST: 202 for notifications
/// and responses only, else the requests' answers as JSON or an SSE stream.
pub(crate) async fn answer(
    inner: &Arc<Inner>,
    session: Arc<HttpSession>,
    new_session: bool,
    mut posted: Posted,
    context: oxmcp_jsonrpc::TransportContext,
    encoding: Encoding,
) -> Response {
    let ids: Vec<RequestId> = posted
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Request(r) => Some(r.id.clone()),
            _ => None,
        })
        .collect();
    if ids.is_empty() {
        return accept_only(&session, posted, context, encoding).await;
    }
    let mode = inner.config.response_mode;
    if mode == ResponseMode::Sse
        && let Err(r) = stream_slot(&inner.config, &session)
    {
        return r.into_response();
    }
    // A batch gets one answer (an array), related to its first request.
    let (routed, answers) = if posted.batch {
        (vec![ids[0].clone()], 1)
    } else {
        (ids.clone(), ids.len())
    };
    let batch = posted.batch.then_some(ids.as_slice());
    let sse = mode == ResponseMode::Sse;
    // An id still in flight (or twice in one batch) must not be reused: answering it here
    // keeps the first request's response on its own stream.
    let (token, rx) = match session.open_post_stream(&routed, answers, sse, batch) {
        Ok(opened) => opened,
        Err(dup) => {
            let e = ErrorObject::invalid_request(format!("request id {dup} is already in use"));
            return answer_response(Message::error(Some(dup), e).encode(), None, encoding);
        }
    };
    // Its requests are in flight now: a state change they ask for is shared with their
    // answers, once accepted.
    inner.backend().expect_changes(&session, &posted.messages);
    if mode == ResponseMode::Json {
        session.answer_as_json(&token);
    }
    // One request is answered on this task, when it may be (see `direct`).
    let request = (mode != ResponseMode::Sse && !new_session && session.direct().is_some())
        .then(|| posted.single_request())
        .flatten();
    let handed = match request {
        Some(request) => crate::server::direct::answer_here(&session, request, context).await,
        None => session.feed(posted.take_input(context)).await,
    };
    if !handed {
        return Refusal::unknown_session().into_response();
    }
    let reply = Reply {
        inner,
        session: &session,
        token,
        new_session,
        entry_errors: posted.entry_errors,
        encoding,
    };
    reply.send(rx).await
}

/// A POST with no request in it (notifications, responses, invalid batch entries): 202, or
/// the errors of its invalid entries.
async fn accept_only(
    session: &Arc<HttpSession>,
    mut posted: Posted,
    context: oxmcp_jsonrpc::TransportContext,
    encoding: Encoding,
) -> Response {
    if !posted.messages.is_empty() && !session.feed(posted.take_input(context)).await {
        return Refusal::unknown_session().into_response();
    }
    if !posted.entry_errors.is_empty() {
        let errors = oxmcp_jsonrpc::encode_batch(&posted.entry_errors);
        return answer_response(errors, None, encoding);
    }
    StatusCode::ACCEPTED.into_response()
}

/// The answer to a POST whose requests went to the engine: what comes on its stream,
/// as one JSON body or as an SSE stream.
struct Reply<'a> {
    inner: &'a Arc<Inner>,
    session: &'a Arc<HttpSession>,
    token: String,
    new_session: bool,
    /// Answers owed for invalid batch entries (the engine never saw them).
    entry_errors: Vec<Message>,
    /// The encoding the client takes its answers in.
    encoding: Encoding,
}

impl Reply<'_> {
    /// Whether the stream gets a priming event to resume from (2025-11-25 on; never without
    /// sessions, where nothing resumes).
    fn resumable(&self) -> bool {
        !self.inner.config.stateless && self.session.version() >= ProtocolVersion::V2025_11_25
    }

    fn session_header(&self) -> Option<&str> {
        self.new_session.then_some(self.session.id.as_str())
    }

    async fn send(self, mut rx: mpsc::Receiver<Event>) -> Response {
        let prime_now = self.inner.config.response_mode == ResponseMode::Sse
            && !self.new_session
            && self.entry_errors.is_empty()
            && self.resumable();
        if prime_now {
            // SSE was asked for: the client gets the stream (and an event id to resume from)
            // at once, not when the first message is ready.
            self.session.mark_sse(&self.token);
            self.session.announce_stream(&self.token).await;
            let priming = priming(&self.token, self.inner.config.sse_retry);
            return self.stream(vec![priming], Some(rx));
        }
        let Some(first) = rx.recv().await else {
            // The stream was detached before anything was sent (polling mode).
            self.session.mark_sse(&self.token);
            let priming = priming(&self.token, self.inner.config.sse_retry);
            return self.stream(vec![priming], None);
        };
        if first.is_end_marker() {
            // Cancelled before anything was sent.
            return self.nothing_sent().await;
        }
        if self.new_session && first.last && first.error {
            // A failed initialize leaves no session behind.
            self.inner.remove(&self.session.id);
            return answer_response(first.data, None, self.encoding);
        }
        if self.new_session
            && let Err(r) = self.save_session().await
        {
            return r;
        }
        let json = match self.inner.config.response_mode {
            ResponseMode::Json => true,
            ResponseMode::Sse => false,
            ResponseMode::Auto => first.last,
        } || !self.entry_errors.is_empty();
        if json {
            self.json(first, rx).await
        } else {
            self.sse(first, rx)
        }
    }

    /// Saves a new session's record (a store-backed endpoint's, for the other instances)
    /// before the client learns its id; a session that cannot be saved is not made.
    async fn save_session(&self) -> Result<(), Response> {
        let Some(record) = self.session.record.lock().take() else {
            return Ok(());
        };
        let id = &self.session.id;
        if let Err(e) = self.inner.backend().save_session(id, &record).await {
            self.inner.remove(id);
            return Err(crate::server::scale_out::store_failed(&e).into());
        }
        Ok(())
    }

    /// The request ended without a response (cancelled): an SSE stream with nothing on it,
    /// or the errors of a batch's invalid entries, which are still owed.
    async fn nothing_sent(&self) -> Response {
        self.session.forget_stream(&self.token).await;
        if !self.entry_errors.is_empty() {
            let errors = oxmcp_jsonrpc::encode_batch(&self.entry_errors);
            return answer_response(errors, self.session_header(), self.encoding);
        }
        self.stream(Vec::new(), None)
    }

    /// One JSON body: the last event (the response), with the batch's invalid entries' errors.
    async fn json(&self, first: Event, mut rx: mpsc::Receiver<Event>) -> Response {
        let mut last = first;
        while !last.last {
            match rx.recv().await {
                Some(e) => last = e,
                None => break,
            }
        }
        if last.is_end_marker() {
            return self.nothing_sent().await;
        }
        self.session.forget_stream(&self.token).await;
        if !self.entry_errors.is_empty() {
            let merged = crate::server::replies::merge_batch(&last.data, &self.entry_errors);
            return answer_response(merged, self.session_header(), self.encoding);
        }
        answer_response(last.data, self.session_header(), self.encoding)
    }

    /// An SSE stream: a priming event (2025-11-25 on), the first event, then the rest live.
    fn sse(&self, first: Event, rx: mpsc::Receiver<Event>) -> Response {
        self.session.mark_sse(&self.token);
        let mut chunks = Vec::new();
        if self.resumable() {
            chunks.push(priming(&self.token, self.inner.config.sse_retry));
        }
        let done = first.last;
        chunks.push(sse_event(&first, self.encoding));
        self.stream(chunks, (!done).then_some(rx))
    }

    fn stream(&self, chunks: Vec<String>, rx: Option<mpsc::Receiver<Event>>) -> Response {
        sse_response(
            chunks,
            rx,
            self.inner.config.keep_alive,
            self.session_header(),
            self.encoding,
        )
    }
}
