//! The backward-compatibility probe and the 2024-11-05 HTTP+SSE transport: a GET stream whose
//! first event names the endpoint to POST to, and every answer on that stream.

use std::sync::Arc;
use std::time::Duration;

use oxmcp_jsonrpc::{RequestId, TransportError};

use super::State;
use super::failure::{Failure, is_sse, no_answer};
use super::stream::Events;

/// Why the HTTP+SSE fallback was not taken.
pub(super) enum Fallback {
    /// The server does not speak HTTP+SSE either; the probe's own failure stands.
    NotLegacy(String),
    /// It answered in a way the client refuses: this error fails the `initialize`.
    Refused(TransportError),
}

impl State {
    /// GETs the URL as an HTTP+SSE stream, waits for its `endpoint` event and keeps reading
    /// the stream's messages in the background. Refuses (failing the `initialize`) a
    /// redirected stream and an endpoint on another origin.
    pub(super) async fn fall_back_to_legacy(self: &Arc<Self>) -> Result<String, Fallback> {
        let resp = self
            .request(reqwest::Method::GET)
            .header("accept", "text/event-stream")
            .send()
            .await
            .map_err(|e| Fallback::NotLegacy(e.without_url().to_string()))?;
        if resp.status().is_redirection() {
            return Err(Fallback::Refused(Failure::of(&resp).error("")));
        }
        if !resp.status().is_success() || !is_sse(&resp) {
            return Err(Fallback::NotLegacy(format!(
                "GET answered {}",
                resp.status()
            )));
        }
        let mut events = Events::new(resp, self.config.max_message);
        let endpoint = loop {
            let ev = tokio::time::timeout(Duration::from_secs(10), events.next(&self.closed))
                .await
                .map_err(|_| Fallback::NotLegacy("no endpoint event within 10 s".to_owned()))?;
            let Some(ev) = ev else {
                let why = "the stream ended before the endpoint event";
                return Err(Fallback::NotLegacy(why.to_owned()));
            };
            if ev.event == "endpoint" {
                break ev.data;
            }
        };
        let endpoint = crate::origin::resolve_endpoint(&self.url, &endpoint)
            .map_err(|why| {
                Fallback::Refused(TransportError::Invalid(format!("{why} ({endpoint:?})")))
            })?
            .to_string();
        *self.legacy_endpoint.lock() = Some(endpoint.clone());
        let st = self.clone();
        tokio::spawn(async move {
            while let Some(ev) = events.next(&st.closed).await {
                if ev.event.is_empty() || ev.event == "message" {
                    st.deliver(ev.data).await;
                }
            }
            if !st.closed.is_cancelled() {
                tracing::warn!("the HTTP+SSE stream ended; the session is over");
            }
        });
        tracing::info!("the server speaks the 2024-11-05 HTTP+SSE transport; using it");
        Ok(endpoint)
    }

    /// POSTs one message to the HTTP+SSE endpoint (its answer comes on the stream).
    pub(super) async fn legacy_post(&self, endpoint: &str, line: &str, request: Option<RequestId>) {
        let req = self
            .http
            .post(endpoint)
            .header("content-type", "application/json")
            .body(line.to_owned());
        match self.credentials(req, "POST", endpoint).send().await {
            Ok(r) if r.status().is_success() => {}
            Ok(r) => {
                let failure = Failure::of(&r);
                let body = r.text().await.unwrap_or_default();
                self.fail(request, failure.error(&body)).await;
            }
            Err(e) => self.fail(request, no_answer(e)).await,
        }
    }
}
