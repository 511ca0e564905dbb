//! Streamable HTTP POSTs: one message each, the answer read as JSON or SSE, the session id
//! kept, an expired session replaced by replaying the handshake, and the HTTP+SSE probe on
//! an `initialize` the server refuses.

use std::sync::Arc;

use oxmcp_jsonrpc::{Inbound, Message};

use super::codec::Answer;
use super::failure::{Failure, is_sse, no_answer, read_limited, read_success, rpc_error_of};
use super::legacy::Fallback;
use super::{GateOpener, Posted, State};

/// What a POST's answer calls for before it is read.
enum Next {
    /// Read the answer.
    Read(reqwest::Response),
    /// Send it again (the session was replaced).
    Retry,
    /// Nothing more to do.
    Done,
}

/// How often one POST was sent again, and why.
#[derive(Default)]
struct Tries {
    /// Once, after the session expired.
    session: bool,
    /// After authorization challenges.
    challenges: u32,
}

impl State {
    /// POSTs one message. `opener` (for `notifications/initialized`) opens the standalone
    /// gate once the GET stream has its answer, or when this POST fails.
    pub(super) async fn post(
        self: &Arc<Self>,
        message: oxmcp_jsonrpc::OutMessage,
        opener: Option<GateOpener>,
    ) {
        let method = message.method().map(str::to_owned);
        let posted = Posted::from(message);
        let legacy = self.legacy_endpoint.lock().clone();
        if let Some(endpoint) = legacy {
            return self
                .legacy_post(&endpoint, &posted.line, posted.request)
                .await;
        }
        if posted.initialize {
            self.handshake.lock().0 = Some(posted.line.clone());
        } else if posted.initialized {
            self.handshake.lock().1 = Some(posted.line.clone());
        }
        if let Some(modern) = method
            .as_deref()
            .and_then(|m| super::modern::headers_of(m, &posted.line))
        {
            return self.post_modern(&posted, modern).await;
        }
        let mut tries = Tries::default();
        loop {
            match self.post_once(&posted, &mut tries).await {
                Next::Retry => continue,
                Next::Done => return,
                Next::Read(resp) => {
                    self.read_answer(resp, &posted).await;
                    break;
                }
            }
        }
        if posted.initialized && self.config.standalone_stream {
            let st = self.clone();
            tokio::spawn(async move { st.standalone(opener).await });
        }
    }

    /// Sends the POST once and sorts out its status: the HTTP+SSE probe, an expired session,
    /// a refusal.
    async fn post_once(self: &Arc<Self>, posted: &Posted, tries: &mut Tries) -> Next {
        let session = self.session.lock().clone();
        let resp = match self
            .post_request(&posted.line, session.as_deref())
            .send()
            .await
        {
            Ok(r) => r,
            Err(e) => {
                self.fail(posted.request.clone(), no_answer(e)).await;
                return Next::Done;
            }
        };
        let status = resp.status();
        if self.refused_protobuf(status) {
            return Next::Retry;
        }
        let legacy_unknown = self.legacy_endpoint.lock().is_none();
        if posted.initialize && matches!(status.as_u16(), 400 | 404 | 405) && legacy_unknown {
            // The backward-compatibility probe: maybe an HTTP+SSE (2024-11-05) server.
            match self.fall_back_to_legacy().await {
                Ok(endpoint) => {
                    self.legacy_post(&endpoint, &posted.line, posted.request.clone())
                        .await;
                    return Next::Done;
                }
                Err(Fallback::Refused(error)) => {
                    self.fail(posted.request.clone(), error).await;
                    return Next::Done;
                }
                Err(Fallback::NotLegacy(why)) => {
                    tracing::debug!("not a legacy HTTP+SSE server either: {why}");
                }
            }
        }
        if status == reqwest::StatusCode::NOT_FOUND
            && session.is_some()
            && !posted.initialize
            && !tries.session
        {
            // The session is gone: start a new one and try once more.
            tries.session = true;
            if self.reinitialize().await {
                return Next::Retry;
            }
        }
        if let Some(id) = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            *self.session.lock() = Some(id.to_owned());
        }
        match self.answer_challenge(&resp, &mut tries.challenges).await {
            Ok(true) => return Next::Retry,
            Ok(false) => {}
            Err(e) => {
                self.fail(posted.request.clone(), e).await;
                return Next::Done;
            }
        }
        if !status.is_success() {
            self.refused(resp, posted).await;
            return Next::Done;
        }
        Next::Read(resp)
    }

    /// A POST answered with an error status: the JSON-RPC error its body carries, else a
    /// transport error with the status.
    async fn refused(&self, resp: reqwest::Response, posted: &Posted) {
        let failure = Failure::of(&resp);
        let body = read_limited(resp, self.config.max_message)
            .await
            .unwrap_or_default();
        match rpc_error_of(&body) {
            Some(e) if posted.request.is_some() => {
                self.answer_error(posted.request.clone(), e).await;
            }
            Some(e) => tracing::warn!(
                status = %failure.status,
                "the server refused a notification or response: {}",
                oxmcp_jsonrpc::printable(&e.message)
            ),
            None => {
                self.fail(posted.request.clone(), failure.error(&body))
                    .await
            }
        }
    }

    /// A successful POST's answer: an SSE stream, or a JSON body (or nothing, 202).
    async fn read_answer(self: &Arc<Self>, resp: reqwest::Response, posted: &Posted) {
        if is_sse(&resp) {
            return self
                .consume_sse(resp, posted.request.clone(), posted.initialize)
                .await;
        }
        let body = match read_success(resp, self.config.max_message).await {
            Ok(b) => b,
            Err(e) => return self.fail(posted.request.clone(), e).await,
        };
        match body {
            Answer::Text(body) => {
                if posted.initialize {
                    self.note_version(&body);
                }
                if posted.request.is_some() {
                    self.deliver(body).await;
                }
            }
            Answer::Decoded(message) => {
                if posted.initialize
                    && let Message::Response(r) = &message
                    && let Ok(result) = &r.outcome
                {
                    self.note_version_of(result.get());
                }
                if posted.request.is_some() {
                    let _ = self.to_engine.send(Inbound::decoded(message, None)).await;
                }
            }
        }
    }

    pub(super) fn post_request(
        &self,
        line: &str,
        session: Option<&str>,
    ) -> reqwest::RequestBuilder {
        let mut req = self.body_of(self.request(reqwest::Method::POST), line);
        if let Some(s) = session {
            req = req.header("mcp-session-id", s);
        }
        req
    }

    /// Keeps the negotiated version from an `initialize` answer, for the version header.
    pub(super) fn note_version(&self, body: &str) {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(body) {
            self.keep_version(&v["result"]);
        }
    }

    /// [`Self::note_version`] from the answer's result alone.
    fn note_version_of(&self, result: &str) {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(result) {
            self.keep_version(&v);
        }
    }

    fn keep_version(&self, result: &serde_json::Value) {
        if let Some(pv) = result["protocolVersion"].as_str() {
            *self.version.lock() = Some(pv.to_owned());
        }
    }

    /// Replays the handshake without the old session id; the answers are not delivered (the
    /// engine has had them already).
    async fn reinitialize(self: &Arc<Self>) -> bool {
        let (init, initialized) = self.handshake.lock().clone();
        let Some(init) = init else { return false };
        *self.session.lock() = None;
        let Ok(resp) = self.post_request(&init, None).send().await else {
            return false;
        };
        let Some(id) = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
        else {
            return false;
        };
        drop(resp);
        *self.session.lock() = Some(id.clone());
        if let Some(n) = initialized {
            let _ = self.post_request(&n, Some(&id)).send().await;
        }
        tracing::info!("session expired; started a new one");
        true
    }
}
