//! 2026-07-28: requests that describe us in `_meta`, `input_required` rounds answered by our
//! handlers, and `subscriptions/listen` streams.

use std::sync::Arc;
use std::time::Duration;

use oxmcp_engine::{CallError, RequestOptions};
use oxmcp_jsonrpc::to_raw;
use oxmcp_types::JsonObject;
use oxmcp_types::meta_keys;
use oxmcp_types::methods::Request as RequestMethod;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::{Active, Client, service};
use crate::handler::ServerEvent;

/// Most `input_required` rounds a single call goes through before it fails.
pub(super) const MAX_INPUT_ROUNDS: usize = 8;

/// Open `subscriptions/listen` streams by subscription id (the listen request's id).
pub(super) type Subscriptions =
    Arc<parking_lot::Mutex<std::collections::HashMap<String, mpsc::Sender<ServerEvent>>>>;

/// A `subscriptions/listen` stream: typed notifications until dropped.
#[derive(Debug)]
pub struct Subscription {
    rx: mpsc::Receiver<ServerEvent>,
    task: JoinHandle<()>,
    key: String,
    subscriptions: Subscriptions,
}

impl Subscription {
    /// The next notification; `None` once the subscription has ended.
    pub async fn next(&mut self) -> Option<ServerEvent> {
        self.rx.recv().await
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        // Dropping the request sends notifications/cancelled, which ends it on the server.
        self.task.abort();
        self.subscriptions.lock().remove(&self.key);
    }
}

impl Client {
    pub(super) async fn request_once<R: RequestMethod>(
        &self,
        params: &R::Params,
        options: RequestOptions,
    ) -> Result<R::Result, CallError> {
        if !self.is_modern() {
            return self.peer.request::<R>(params, &options).await;
        }
        let value = serde_json::to_value(params)?;
        let result = self.value_request(R::METHOD, value, &options).await?;
        Ok(serde_json::from_value(result)?)
    }

    /// Sends any request (an extension's method, say) with `params` as JSON and returns the
    /// result's JSON. In the 2026-07-28 era the request describes us in `_meta`, and
    /// `input_required` rounds are answered by our handlers, as for the typed methods. Not
    /// retried.
    ///
    /// # Errors
    /// See [`CallError`]; the server's JSON-RPC error is [`CallError::Rpc`].
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, CallError> {
        #[allow(unused_mut)]
        let mut options = self.options.clone();
        #[cfg(feature = "otel")]
        crate::otel::inject(&mut options);
        self.value_request(method, params, &options).await
    }

    /// Sends a notification of any method (an extension's).
    ///
    /// # Errors
    /// [`CallError`] if the connection is gone.
    pub async fn notify(&self, method: &str, params: Value) -> Result<(), CallError> {
        let params = oxmcp_jsonrpc::to_raw(&params)?;
        self.peer.notify_raw(method, &params).await
    }

    /// [`Client::request`] with per-request options.
    pub(super) async fn value_request(
        &self,
        method: &str,
        mut value: Value,
        options: &RequestOptions,
    ) -> Result<Value, CallError> {
        let Active::Modern { meta, log_level } = &self.active else {
            let raw = self.peer.request_raw(method, value, options).await?;
            return Ok(serde_json::from_str(raw.get())?);
        };
        if !value.is_object() {
            value = Value::Object(JsonObject::new());
        }
        if let Value::Object(p) = &mut value {
            let m = p
                .entry("_meta")
                .or_insert_with(|| Value::Object(JsonObject::new()));
            if let Value::Object(m) = m {
                // What the request says of itself (a per-request capability) wins.
                for (k, v) in meta {
                    m.entry(k.clone()).or_insert_with(|| v.clone());
                }
                let level = *log_level.lock();
                if let Some(level) = level {
                    m.insert(
                        meta_keys::LOG_LEVEL.to_owned(),
                        serde_json::to_value(level)?,
                    );
                }
            }
        }
        // Multi round-trip: answer input_required with our handlers and retry, a bounded
        // number of times.
        for _ in 0..=MAX_INPUT_ROUNDS {
            let raw = self
                .peer
                .request_raw(method, value.clone(), options)
                .await?;
            let result: Value = serde_json::from_str(raw.get())?;
            if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
                return Ok(result);
            }
            let responses = self.answer_inputs(&result).await?;
            if let Value::Object(p) = &mut value {
                p.insert("inputResponses".to_owned(), Value::Object(responses));
                match result.get("requestState") {
                    Some(state) => p.insert("requestState".to_owned(), state.clone()),
                    None => p.remove("requestState"),
                };
            }
        }
        Err(CallError::Protocol(format!(
            "the server asked for input more than {MAX_INPUT_ROUNDS} times; giving up"
        )))
    }

    /// Answers the `inputRequests` of an `input_required` result (or of a task waiting for
    /// input) with our handlers: the `inputResponses` to send back.
    pub(crate) async fn answer_inputs(&self, result: &Value) -> Result<JsonObject, CallError> {
        let mut responses = JsonObject::new();
        if let Some(Value::Object(requests)) = result.get("inputRequests") {
            for (key, request) in requests {
                let method = request
                    .get("method")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let params = match request.get("params") {
                    Some(p) => Some(to_raw(p)?),
                    None => None,
                };
                let answer = service::answer(self.handlers.clone(), method, params)
                    .await
                    .map_err(CallError::Rpc)?;
                responses.insert(key.clone(), serde_json::from_str(answer.get())?);
            }
        }
        Ok(responses)
    }

    /// Opens a `subscriptions/listen` stream (2026-07-28) for the notifications in `filter`.
    /// The first event is the server's acknowledgement (`ServerEvent::Other` with method
    /// `notifications/subscriptions/acknowledged`); dropping the [`Subscription`] cancels it.
    ///
    /// # Errors
    /// [`CallError::Protocol`] on a legacy session (use `subscribe` and list-changed events).
    pub fn listen(&self, filter: oxmcp_types::ListenFilter) -> Result<Subscription, CallError> {
        let Active::Modern { meta, .. } = &self.active else {
            return Err(CallError::Protocol(
                "subscriptions/listen is 2026-07-28 only; on a legacy session use subscribe and list_changed events".into(),
            ));
        };
        let id = self.peer.reserve_id();
        let key = id.to_string();
        let (tx, rx) = mpsc::channel(256);
        self.subscriptions.lock().insert(key.clone(), tx);
        let params = serde_json::json!({ "_meta": meta, "notifications": filter });
        let peer = self.peer.clone();
        // A subscription lasts as long as the caller keeps it: no inactivity timeout.
        let forever = Duration::from_secs(365 * 24 * 3600);
        let options = RequestOptions::default()
            .timeout(forever)
            .max_total(forever);
        let task = tokio::spawn(async move {
            let _ = peer
                .request_raw_with_id(id, "subscriptions/listen", params, &options)
                .await;
        });
        Ok(Subscription {
            rx,
            task,
            key,
            subscriptions: self.subscriptions.clone(),
        })
    }

    /// Whether this client speaks 2026-07-28 with its server.
    pub fn is_modern(&self) -> bool {
        matches!(self.active, Active::Modern { .. })
    }
}
