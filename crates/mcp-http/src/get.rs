//! GET (the standalone stream, or resuming one with `Last-Event-ID`) and DELETE (ending a
//! session) on the Streamable HTTP endpoint.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use mcp_jsonrpc::ErrorCode;

use crate::admission::{accepting, common_checks, session_of, stream_slot};
use crate::clients::Principal;
use crate::respond::*;
use crate::server::Inner;
use crate::sse_out::{priming, sse_event, sse_response};

/// Host/Origin checks, then the bearer token: the request's headers and principal.
async fn checked(inner: &Inner, request: Request) -> Result<(HeaderMap, Option<String>), Response> {
    let (mut parts, _) = request.into_parts();
    common_checks(&inner.config, &parts.headers)?;
    crate::auth::authenticate(inner.config.auth.as_deref(), &mut parts).await?;
    let principal = parts.extensions.get::<Principal>().map(|p| p.0.clone());
    Ok((parts.headers, principal))
}

pub(crate) async fn handle_get(State(inner): State<Arc<Inner>>, request: Request) -> Response {
    let (headers, principal) = match checked(&inner, request).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    if !accepts(&headers, "text/event-stream") {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            None,
            ErrorCode::INVALID_REQUEST,
            "Accept must list text/event-stream",
        );
    }
    if crate::stateless::is_modern(&headers, &[]) {
        // 2026-07-28 has no GET stream (subscriptions/listen replaces it).
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    let session = match session_of(&inner, &headers, principal.as_deref()) {
        Ok(s) => s,
        Err(r) => return r,
    };
    session.touch();
    if let Err(r) = accepting(&inner.config) {
        return r;
    }
    if let Err(r) = stream_slot(&inner.config, &session) {
        return r;
    }
    let keep_alive = inner.config.keep_alive;
    if let Some(last) = header_str(&headers, "last-event-id") {
        if last.len() > 256 || !last.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
            return bad_request("Bad Request: malformed Last-Event-ID");
        }
        let Some(resumed) = session.resume(last).await else {
            return rpc_error(
                StatusCode::NOT_FOUND,
                None,
                ErrorCode::INVALID_REQUEST,
                "Unknown Last-Event-ID for this session",
            );
        };
        let chunks: Vec<String> = resumed.replay.iter().map(sse_event).collect();
        return sse_response(chunks, resumed.live, keep_alive, None);
    }
    let Some((token, rx)) = session.open_standalone().await else {
        return rpc_error(
            StatusCode::CONFLICT,
            None,
            ErrorCode::INVALID_REQUEST,
            "A GET stream is already open for this session",
        );
    };
    sse_response(
        vec![priming(&token, inner.config.sse_retry)],
        Some(rx),
        keep_alive,
        None,
    )
}

pub(crate) async fn handle_delete(State(inner): State<Arc<Inner>>, request: Request) -> Response {
    let (headers, principal) = match checked(&inner, request).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let session = match session_of(&inner, &headers, principal.as_deref()) {
        Ok(s) => s,
        Err(r) => return r,
    };
    inner.remove(&session.id);
    StatusCode::OK.into_response()
}
