//! Legacy POSTs (protocol 2024-11-05 to 2025-11-25) on a stateless endpoint
//! ([`crate::HttpConfig::stateless`]): no session, each POST served on a state of its own.
//!
//! A POST without a request (`notifications/initialized`, a response) is accepted and goes
//! nowhere. A POST with requests gets a state made for it: its engine is fed an `initialize`
//! of the transport's own (the version of the `MCP-Protocol-Version` header, no client
//! capabilities; its answer is swallowed) and `notifications/initialized`, unless the POST
//! is the client's own `initialize`; then the POST is answered as a session's would be,
//! without `Mcp-Session-Id`, and the state is closed once its answer is sent (a JSON body at
//! once, an SSE stream when it ends or its client goes). Each state holds one of the
//! endpoint's sessionless permits (`HttpConfig::max_stateless_requests`) meanwhile.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use oxmcp_jsonrpc::{ErrorObject, Inbound, Message, RequestId};
use oxmcp_types::{Feature, InitializeParams, ProtocolVersion};
use tokio::sync::OwnedSemaphorePermit;

use crate::server::clients::Client;
use crate::server::endpoint::Inner;
use crate::server::post::{Posted, answer};
use crate::server::protobuf::Encoding;
use crate::server::refusal::Refusal;
use crate::server::replies::{VERSION_HEADER, answer_response, header_str};
use crate::server::session::HttpSession;

/// Numbers the one-request states (their ids appear in logs only).
static NEXT: AtomicU64 = AtomicU64::new(1);

/// The methods refused here: what they set up would outlive the state they ran on.
const NEEDS_A_SESSION: [&str; 2] = ["resources/subscribe", "resources/unsubscribe"];

/// Answers a legacy POST without a session.
pub(crate) async fn post(
    inner: &Arc<Inner>,
    headers: &HeaderMap,
    mut posted: Posted,
    client: &Client,
    context: oxmcp_jsonrpc::TransportContext,
    encoding: Encoding,
) -> Response {
    if let Some(refused) = refuse_session_methods(&mut posted, encoding) {
        return refused;
    }
    if !posted
        .messages
        .iter()
        .any(|m| matches!(m, Message::Request(_)))
    {
        // Notifications and responses: no state waits for them.
        if !posted.entry_errors.is_empty() {
            let errors = oxmcp_jsonrpc::encode_batch(&posted.entry_errors);
            return answer_response(errors, None, encoding);
        }
        return StatusCode::ACCEPTED.into_response();
    }
    let init = own_initialize(&posted);
    let version = match &init {
        Some(requested) => *requested,
        None => header_version(headers),
    };
    if posted.batch && !version.has(Feature::Batching) {
        return Refusal::bad_request(
            "JSON-RPC batches are not supported by the negotiated protocol version",
        )
        .into_response();
    }
    let Ok(permit) = inner.stateless.clone().try_acquire_owned() else {
        return Refusal::retry_later(
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            Duration::from_secs(1),
            "Server busy: too many requests in flight; retry later",
        )
        .into_response();
    };
    let id = format!("stateless-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let owner = client.principal().map(str::to_owned);
    let session = inner.start_sessionless(id, version, owner);
    if init.is_none() {
        initialize(&session, version).await;
    }
    session.mark_initialized();
    let answered = answer(inner, session.clone(), false, posted, context, encoding).await;
    close_after(
        answered,
        Closing {
            session,
            _permit: permit,
        },
    )
}

/// The version a client's own `initialize` (alone in its POST) gets, if the POST is one.
fn own_initialize(posted: &Posted) -> Option<ProtocolVersion> {
    if posted.batch {
        return None;
    }
    posted.messages.iter().find_map(|m| match m {
        Message::Request(r) if r.method == "initialize" => Some(
            oxmcp_jsonrpc::parse_params::<InitializeParams>(r.params.as_deref())
                .map(|p| ProtocolVersion::negotiate_legacy(&p.protocol_version))
                .unwrap_or(ProtocolVersion::LATEST_LEGACY),
        ),
        _ => None,
    })
}

/// The version a request is served in: its `MCP-Protocol-Version` header's (already checked
/// to be a known one), else 2025-03-26, as the specification tells a server to assume.
fn header_version(headers: &HeaderMap) -> ProtocolVersion {
    header_str(headers, &VERSION_HEADER)
        .and_then(ProtocolVersion::parse)
        .filter(|v| v.is_legacy())
        .unwrap_or(ProtocolVersion::V2025_03_26)
}

/// Feeds a new state the handshake the client made elsewhere: an `initialize` of the
/// transport's own in `version`, with no client capabilities, and `initialized`.
async fn initialize(session: &Arc<HttpSession>, version: ProtocolVersion) {
    let params = serde_json::json!({
        "protocolVersion": version.as_str(),
        "capabilities": {},
        "clientInfo": {"name": "oxmcp-stateless", "version": env!("CARGO_PKG_VERSION")},
    });
    let id = RequestId::String("oxmcp-stateless-init".to_owned());
    session.feed_own(id, "initialize", params).await;
    let initialized = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    session.feed(Inbound::Frame(initialized.to_vec())).await;
}

/// Answers the requests whose methods need a session with -32601 at once (a lone one as the
/// POST's answer, a batch's among the batch's answers); `Some`: the POST is answered so.
fn refuse_session_methods(posted: &mut Posted, encoding: Encoding) -> Option<Response> {
    let refused = |m: &Message| matches!(m, Message::Request(r) if NEEDS_A_SESSION.contains(&r.method.as_str()));
    if !posted.messages.iter().any(refused) {
        return None;
    }
    let (out, keep): (Vec<Message>, Vec<Message>) = std::mem::take(&mut posted.messages)
        .into_iter()
        .partition(refused);
    let errors = out.into_iter().filter_map(|m| match m {
        Message::Request(r) => {
            let e = ErrorObject::method_not_found(&r.method).with_data(serde_json::json!({
                "method": r.method,
                "reason": "this server is stateless: there is no session to send the \
                           resource's updates to",
            }));
            Some(Message::error(Some(r.id), e))
        }
        _ => None,
    });
    posted.entry_errors.extend(errors);
    if !posted.batch {
        let error = posted.entry_errors.pop()?;
        return Some(answer_response(error.encode(), None, encoding));
    }
    posted.keep_only(keep);
    None
}

/// What ends a one-request state: closing it, and giving its permit back.
struct Closing {
    session: Arc<HttpSession>,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Closing {
    fn drop(&mut self) {
        self.session.close();
    }
}

/// The answer, the state closed once it is sent: now for a body of known size (JSON, an
/// error), when the body is dropped for a stream (it ended, or its client went away).
fn close_after(answered: Response, closing: Closing) -> Response {
    if http_body::Body::size_hint(answered.body())
        .exact()
        .is_some()
    {
        drop(closing);
        return answered;
    }
    answered.map(move |body| {
        Body::from_stream(body.into_data_stream().map(move |chunk| {
            let _held = &closing;
            chunk
        }))
    })
}
