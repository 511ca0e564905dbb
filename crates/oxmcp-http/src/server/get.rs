//! GET (the standalone stream, or resuming one with `Last-Event-ID`) and DELETE (ending a
//! session) on the Streamable HTTP endpoint; both 405 on a stateless one
//! (`HttpConfig::stateless`), which has no sessions.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::server::admission::{accepting, common_checks, plausible_session_id, stream_slot};
use crate::server::clients::Principal;
use crate::server::endpoint::Inner;
use crate::server::protobuf::Encoding;
use crate::server::refusal::Refusal;
use crate::server::replies::{LAST_EVENT_ID, SESSION_HEADER, accepts, header_str};
use crate::server::session::Event;
use crate::server::sse_stream::{priming, sse_event, sse_response};

/// Host/Origin checks, then the bearer token: the request's parts and principal.
async fn checked(inner: &Inner, request: Request) -> Result<(Parts, Option<String>), Response> {
    let (mut parts, _) = request.into_parts();
    common_checks(&inner.config, &parts.headers)?;
    crate::auth::authenticate(inner.config.auth.as_deref(), &mut parts).await?;
    let principal = parts.extensions.get::<Principal>().map(|p| p.0.clone());
    Ok((parts, principal))
}

/// The session a request names, if it exists (here or in the shared store) and belongs to
/// the request's principal (a session used with another subject's token does not exist for
/// it: 404).
async fn session_of(
    inner: &Arc<Inner>,
    headers: &HeaderMap,
    principal: Option<&str>,
) -> Result<Arc<crate::server::session::HttpSession>, Response> {
    let Some(id) = header_str(headers, &SESSION_HEADER) else {
        return Err(Refusal::missing_session_id().into());
    };
    if !plausible_session_id(id) {
        return Err(Refusal::malformed_session_id().into());
    }
    inner
        .backend()
        .lookup(inner, id, principal)
        .await
        .map_err(Into::into)
}

pub(crate) async fn handle_get(State(inner): State<Arc<Inner>>, request: Request) -> Response {
    let encoding = Encoding::of(request.headers());
    encoding.refusal(get(inner, request).await)
}

async fn get(inner: Arc<Inner>, request: Request) -> Response {
    let (parts, principal) = match checked(&inner, request).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    if inner.config.stateless {
        // No session, so no stream of its own to open or resume.
        return Refusal::method_not_allowed().into_response();
    }
    // The stream lives no longer than the token it was opened with.
    let lease = crate::server::lease::Lease::open(&inner.config, &parts);
    crate::server::sse_stream::until_lease_ends(
        stream(inner, &parts.headers, principal).await,
        lease,
    )
}

/// The GET stream a checked request asks for: a resumed one, or the standalone stream.
async fn stream(inner: Arc<Inner>, headers: &HeaderMap, principal: Option<String>) -> Response {
    let headers = headers.clone();
    if !accepts(&headers, "text/event-stream") {
        return Refusal::invalid_request(
            StatusCode::NOT_ACCEPTABLE,
            "Accept must list text/event-stream",
        )
        .into_response();
    }
    if crate::server::stateless::is_modern(&headers, &[]) {
        // 2026-07-28 has no GET stream (subscriptions/listen replaces it).
        return Refusal::method_not_allowed().into_response();
    }
    let session = match session_of(&inner, &headers, principal.as_deref()).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    session.touch();
    if let Err(r) = accepting(&inner.config) {
        return r.into_response();
    }
    if let Err(r) = stream_slot(&inner.config, &session) {
        return r.into_response();
    }
    let keep_alive = inner.config.keep_alive;
    let encoding = Encoding::of(&headers);
    let event = |e: &Event| sse_event(e, encoding);
    let mut replayed = Vec::new();
    if let Some(last) = header_str(&headers, &LAST_EVENT_ID) {
        if last.len() > 256 || !last.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
            return Refusal::bad_request("Bad Request: malformed Last-Event-ID").into_response();
        }
        if let Some(resumed) = session.resume(last).await {
            let chunks: Vec<String> = resumed.replay.iter().map(event).collect();
            return sse_response(chunks, resumed.live, keep_alive, None, encoding);
        }
        // Not a stream of this instance: one another instance writes, a GET stream whose
        // instance died, or one whose events are gone. A live session is never answered
        // 404 here (that would tell the client the session ended): it gets what the shared
        // log still holds, then a new GET stream.
        let (token, seq) = last.rsplit_once('-').unwrap_or((last, "0"));
        let seq = seq.parse().unwrap_or(0);
        let backend = inner.backend();
        match backend.resume_elsewhere(&inner, &session, token, seq).await {
            Ok(crate::server::scale_out::Elsewhere::Request(resumed)) => {
                let chunks: Vec<String> = resumed.replay.iter().map(event).collect();
                return sse_response(chunks, resumed.live, keep_alive, None, encoding);
            }
            Ok(crate::server::scale_out::Elsewhere::Standalone(events)) => replayed = events,
            Err(e) => return crate::server::scale_out::store_failed(&e).into(),
        }
    }
    let Some((token, rx)) = session.open_standalone().await else {
        return Refusal::invalid_request(
            StatusCode::CONFLICT,
            "A GET stream is already open for this session",
        )
        .into_response();
    };
    // A parked session's engine runs again while the stream is open, so that what the
    // server sends every session reaches it. (Woken once the stream is registered: a
    // session with a GET stream is not parked again.)
    if !session.wake().await {
        return Refusal::unknown_session().into_response();
    }
    let mut chunks: Vec<String> = replayed.iter().map(event).collect();
    chunks.push(priming(&token, inner.config.sse_retry));
    sse_response(chunks, Some(rx), keep_alive, None, encoding)
}

pub(crate) async fn handle_delete(State(inner): State<Arc<Inner>>, request: Request) -> Response {
    let (parts, principal) = match checked(&inner, request).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    if inner.config.stateless {
        return Refusal::method_not_allowed().into_response();
    }
    let headers = parts.headers;
    let session = match session_of(&inner, &headers, principal.as_deref()).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    // Ended everywhere first (with a store, every instance then answers 404), then here.
    if let Err(e) = inner.backend().end_session(&session.id).await {
        return crate::server::scale_out::store_failed(&e).into();
    }
    inner.remove(&session.id);
    StatusCode::OK.into_response()
}
