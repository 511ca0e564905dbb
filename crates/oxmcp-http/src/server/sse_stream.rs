//! SSE output: the one response builder every event stream goes through, and the events
//! written on it.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use futures::Stream;
use tokio::sync::mpsc;

use crate::server::protobuf::Encoding;
use crate::server::replies::SESSION_HEADER;
use crate::server::session::Event;

/// The comment sent while a stream has nothing to say, so that proxies keep it open.
pub(crate) const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// A `text/event-stream` response (no caching, with the session header when given) whose
/// body is `stream`.
pub(crate) fn sse_body(
    stream: impl Stream<Item = Result<Bytes, Infallible>> + Send + 'static,
    session: Option<&str>,
) -> Response {
    // Counted open while the body lives (`crate::stats`).
    let open = crate::stats::Open::new(crate::stats::Transport::Sse);
    let stream = futures::StreamExt::map(stream, move |item| {
        let _ = &open;
        item
    });
    let mut resp = Response::new(Body::from_stream(stream));
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Some(id) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        h.insert(SESSION_HEADER.clone(), id);
    }
    resp
}

/// Ends `resp`'s body when `lease` ends (its token expired, or was refused when checked
/// again): a long-lived stream lives no longer than the token it was opened with. The lease
/// is watched as long as the body lives.
pub(crate) fn until_lease_ends(
    resp: Response,
    lease: Option<crate::server::lease::Watched>,
) -> Response {
    use futures::StreamExt as _;
    let Some(lease) = lease else {
        return resp;
    };
    resp.map(move |body| {
        let ended = async move {
            let why = lease.ended().await;
            tracing::debug!("an SSE stream ends with its token: {why}");
        };
        Body::from_stream(body.into_data_stream().take_until(ended))
    })
}

/// One event carrying a message, without an id (streams that are never resumed).
pub(crate) fn sse_message(data: &str, encoding: Encoding) -> Bytes {
    Bytes::from(encoding.event(None, data))
}

/// One SSE event carrying a message, with its id.
pub(crate) fn sse_event(e: &Event, encoding: Encoding) -> String {
    encoding.event(Some(&e.id), &e.data)
}

/// The priming event of a stream (an id and `retry`, no data).
pub(crate) fn priming(token: &str, retry: Duration) -> String {
    format!("id: {token}-0\nretry: {}\ndata: \n\n", retry.as_millis())
}

/// An SSE response: `first` chunks, then the live events of `rx` in `encoding` until the
/// last one, with keep-alive comments while nothing happens.
pub(crate) fn sse_response(
    first: Vec<String>,
    rx: Option<mpsc::Receiver<Event>>,
    keep_alive: Duration,
    session: Option<&str>,
    encoding: Encoding,
) -> Response {
    let state = (VecDeque::from(first), rx, false);
    let stream = futures::stream::unfold(state, move |(mut queue, mut rx, done)| async move {
        if let Some(chunk) = queue.pop_front() {
            return Some((Ok::<_, Infallible>(Bytes::from(chunk)), (queue, rx, done)));
        }
        if done {
            return None;
        }
        let live = rx.as_mut()?;
        match tokio::time::timeout(keep_alive, live.recv()).await {
            // The request ended without a response (cancelled): the stream just ends.
            Ok(Some(e)) if e.is_end_marker() => None,
            Ok(Some(e)) => {
                let last = e.last;
                Some((Ok(Bytes::from(sse_event(&e, encoding))), (queue, rx, last)))
            }
            Ok(None) => None,
            Err(_) => Some((Ok(Bytes::from_static(KEEP_ALIVE)), (queue, rx, false))),
        }
    });
    sse_body(stream, session)
}
