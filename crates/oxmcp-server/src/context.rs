//! What a handler gets besides its arguments: progress, logging, cancellation, and requests to
//! the client (sampling, elicitation, roots).

use std::sync::Arc;

use oxmcp_engine::{CallError, Peer, RequestContext, RequestOptions};
use oxmcp_jsonrpc::RequestId;
use oxmcp_jsonrpc::{ErrorCode, ErrorObject};
use oxmcp_types::methods::{CreateMessage, Elicit, ListRoots, Request as _};
use oxmcp_types::methods::{LoggingMessage, Notification as _, Progress};
use oxmcp_types::{
    ClientCapabilities, CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult,
    Implementation, JsonObject, ListRootsResult, LoggingLevel, LoggingMessageParams,
    ProgressParams, ProgressToken, ProtocolVersion,
};
use oxmcp_types::{InputRequest, InputRequests};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::modern::ModernMeta;
use crate::session::Session;

/// Why input from the client (sampling, elicitation, roots) is not there.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// 2026-07-28: the client has not answered yet. Return it with `?`: the request is
    /// answered with an `input_required` result, and the handler runs again when the client
    /// retries with the answers.
    #[error("waiting for the client's input (multi round-trip)")]
    Required,
    /// The client could not be asked, or its answer was an error (or of the wrong shape).
    #[error(transparent)]
    Call(#[from] CallError),
}

impl From<serde_json::Error> for InputError {
    fn from(e: serde_json::Error) -> Self {
        InputError::Call(CallError::Decode(e))
    }
}

impl InputError {
    /// The JSON-RPC error the client answered with, if that is what happened.
    pub fn rpc(&self) -> Option<&ErrorObject> {
        match self {
            InputError::Call(e) => e.rpc(),
            InputError::Required => None,
        }
    }
}

/// The context of one request, handed to every handler.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub(crate) rc: RequestContext,
    pub(crate) session: Arc<Session>,
    pub(crate) progress_token: Option<ProgressToken>,
    /// A legacy request's `_meta` (a 2026-07-28 request's is in its `RequestMeta`).
    pub(crate) meta: Option<JsonObject>,
    pub(crate) modern: Option<Arc<ModernMeta>>,
    /// Counts inputs asked for, to key them the same way on every round.
    pub(crate) inputs: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// The task this handler runs as (or may become), if any.
    pub(crate) task: Option<Arc<crate::tasks::TaskSlot>>,
}

impl Ctx {
    /// Who the client is, when the transport verified it (an authentication layer in front
    /// of Streamable HTTP, say); `None` otherwise. For a bearer token this is
    /// [`oxmcp_engine::Identity::principal`], the subject qualified by its issuer
    /// (`ISSUER#SUBJECT`, or the bare subject of a static token); [`Ctx::identity`] has the
    /// subject alone.
    pub fn principal(&self) -> Option<&str> {
        self.session.principal.as_deref()
    }

    /// Whom state made for this caller (tasks) belongs to: the verified principal, else the
    /// identity's principal key (issuer and subject); `None` when the transport knows nobody.
    pub(crate) fn owner(&self) -> Option<String> {
        self.principal()
            .map(str::to_owned)
            .or_else(|| self.identity().map(|i| i.principal()))
    }

    /// The W3C trace context the request carries in `_meta` (`traceparent`, `tracestate`),
    /// to pass on to what the handler calls. With the `otel` feature the request already
    /// runs in a span parented on it.
    pub fn trace_context(&self) -> Option<oxmcp_types::TraceContext> {
        oxmcp_types::TraceContext::from_meta(self.meta()?)
    }

    /// The id of the task this handler runs as, if it runs as one.
    pub fn task_id(&self) -> Option<String> {
        Some(self.task.as_ref()?.running.get()?.id.clone())
    }

    /// Turns this call into a task now, for a tool registered with
    /// [`crate::TaskStart::WhenHandlerAsks`]: the client gets the task, and the handler goes
    /// on in the background (input it asks for from here on parks the task in
    /// `input_required`). Before this, the call was a plain request: input rounds of
    /// 2026-07-28 are answered synchronously, as the tasks extension recommends.
    ///
    /// Returns `true` if the handler now runs as a task; `false` when the call is not
    /// task-eligible (the client did not declare tasks, the tool forbids them, or it is
    /// one already) and simply goes on.
    pub async fn begin_task(&self) -> bool {
        let Some(slot) = &self.task else {
            return false;
        };
        if slot.running.get().is_some() {
            return true;
        }
        let Some(begin) = slot.begin.lock().take() else {
            return false;
        };
        let (ack, done) = tokio::sync::oneshot::channel();
        if begin.send(ack).is_err() {
            return false;
        }
        done.await.is_ok() && slot.running.get().is_some()
    }

    fn running_task(&self) -> Option<&Arc<crate::tasks::Running>> {
        self.task.as_ref()?.running.get()
    }

    /// Who the caller is, when the transport verified a token: subject, scopes, client and
    /// claims (Streamable HTTP with bearer-token protection).
    pub fn identity(&self) -> Option<&oxmcp_engine::Identity> {
        self.http_extensions()?
            .get::<Arc<oxmcp_engine::Identity>>()
            .map(|i| &**i)
    }

    /// The extensions of the HTTP request that carried this request (Streamable HTTP only):
    /// what the user's own middleware put there is visible to handlers.
    pub fn http_extensions(&self) -> Option<&http::Extensions> {
        self.transport_context::<http::Extensions>()
    }

    /// What the transport attached to this request, if it is a `T`.
    pub fn transport_context<T: std::any::Any>(&self) -> Option<&T> {
        self.rc.transport.as_deref()?.downcast_ref::<T>()
    }

    /// The request id.
    pub fn request_id(&self) -> &RequestId {
        &self.rc.id
    }

    /// Cancelled when the client cancels this request: by `notifications/cancelled` on a
    /// legacy session or stdio, by closing the request's response stream (or the connection
    /// awaiting its JSON answer) in 2026-07-28 over Streamable HTTP.
    ///
    /// The handler sees it: it keeps running after the token fires, so a `tokio::select!` on
    /// `ctx.cancellation().cancelled()` in the handler itself runs its branch (stop, clean up,
    /// return). A handler that has not returned
    /// [`EngineConfig::cancel_grace`](oxmcp_engine::EngineConfig::cancel_grace) (1 s by
    /// default) after the token fired is aborted (dropped). Whatever a cancelled handler
    /// returns is discarded (no response is sent for a cancelled request), and its requests
    /// to the client after the token fired fail with [`CallError::Cancelled`]; its
    /// notifications (a last log line) still reach the client.
    ///
    /// When the connection is killed because the client stopped reading, it fires too, but
    /// the handlers are aborted at once (only work spawned with a clone of it notices).
    pub fn cancellation(&self) -> &CancellationToken {
        &self.rc.cancel
    }

    /// The request's `_meta`, if any.
    pub fn meta(&self) -> Option<&JsonObject> {
        match &self.modern {
            Some(m) => m.request.meta(),
            None => self.meta.as_ref(),
        }
    }

    /// The server this request is served by (to change its tools or prompts at run time).
    pub fn server(&self) -> crate::Server {
        crate::Server {
            state: self.session.server.clone(),
        }
    }

    /// The connection to the client.
    pub fn peer(&self) -> &Peer {
        &self.rc.peer
    }

    /// The negotiated protocol version.
    pub fn protocol_version(&self) -> ProtocolVersion {
        match &self.modern {
            Some(_) => ProtocolVersion::V2026_07_28,
            None => self.session.version(),
        }
    }

    /// The client's name and version.
    pub fn client_info(&self) -> Option<Implementation> {
        match &self.modern {
            Some(m) => m.client_info.clone(),
            None => self.session.client_info(),
        }
    }

    /// The client's declared capabilities.
    pub fn client_capabilities(&self) -> ClientCapabilities {
        match &self.modern {
            Some(m) => m.client_caps.clone(),
            None => self.session.client_capabilities(),
        }
    }

    /// Whether the client declared the extension `id` (SEP-2133): in its `initialize`
    /// capabilities on a legacy session, in this request's `_meta` on 2026-07-28.
    pub fn client_supports_extension(&self, id: &str) -> bool {
        oxmcp_types::declares_extension(self.client_capabilities().extensions.as_ref(), id)
    }

    /// Reports progress, if the client asked for it (`_meta.progressToken`); otherwise a no-op.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        if let Some(run) = self.running_task() {
            run.progress(progress_text(progress, total, message.as_deref()))
                .await;
            if self.modern.is_some() {
                // 2026-07-28 tasks carry no progress notifications: the status message is it.
                return;
            }
        }
        if let Some(params) = self.progress_params(progress, total, message) {
            let _ = self.rc.peer.notify_raw(Progress::METHOD, &params).await;
        }
    }

    /// [`Ctx::progress`] without ever waiting for the client (for a relay that passes many
    /// requests' messages along and must not be held up by one slow client): queued in order
    /// with the client's other queued messages; dropped if even that queue is full.
    pub fn try_progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        if let Some(params) = self.progress_params(progress, total, message) {
            let _ = self.rc.peer.notify_queued(Progress::METHOD, &params);
        }
    }

    fn progress_params(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> Option<ProgressParams> {
        Some(ProgressParams {
            progress_token: self.progress_token.clone()?,
            progress,
            total,
            message,
            meta: None,
            extra: JsonObject::new(),
        })
    }

    /// Sends a log message if `level` is at or above the client's chosen level.
    pub async fn log(&self, level: LoggingLevel, logger: Option<&str>, data: Value) {
        if let Some(params) = self.log_params(level, logger, data) {
            let _ = self
                .rc
                .peer
                .notify_raw(LoggingMessage::METHOD, &params)
                .await;
        }
    }

    /// [`Ctx::log`] without ever waiting for the client (see [`Ctx::try_progress`]).
    pub fn try_log(&self, level: LoggingLevel, logger: Option<&str>, data: Value) {
        if let Some(params) = self.log_params(level, logger, data) {
            let _ = self.rc.peer.notify_queued(LoggingMessage::METHOD, &params);
        }
    }

    fn log_params(
        &self,
        level: LoggingLevel,
        logger: Option<&str>,
        data: Value,
    ) -> Option<LoggingMessageParams> {
        let enabled = match &self.modern {
            // 2026-07-28: only when the request asked, at its own level.
            Some(m) => self.session.logging_on() && m.log_level.is_some_and(|min| level >= min),
            None => self.session.log_enabled(level),
        };
        enabled.then(|| LoggingMessageParams {
            level,
            logger: logger.map(str::to_owned),
            data,
            meta: None,
            extra: JsonObject::new(),
        })
    }

    /// Gets input from the client: sampling, elicitation or roots results, by key.
    ///
    /// One handler serves both eras. On a legacy session each request is sent to the client
    /// as a real server-to-client request. On a 2026-07-28 request, answers come from the
    /// client's retry (`inputResponses` and the signed `requestState`); missing ones make the
    /// request end with an `input_required` result ([`InputError::Required`] here: return
    /// it with `?`), and the handler runs again on the retry, getting the answers this time.
    ///
    /// # Errors
    /// [`CallError::Protocol`] if the client lacks a needed capability (on 2026-07-28 the
    /// request is then answered with -32021), [`InputError::Required`], or the call's own.
    pub async fn request_inputs(&self, requests: InputRequests) -> Result<JsonObject, InputError> {
        let caps = self.client_capabilities();
        let task = self.running_task().cloned();
        for r in requests.values() {
            let (cap, present) = capability_for(&caps, r)?;
            if !present {
                return Err(self.missing_capability(cap).into());
            }
        }
        match (&self.modern, task) {
            // A 2026-07-28 task waits in input_required for tasks/update.
            (Some(_), Some(run)) => run
                .inputs(requests)
                .await
                .map_err(|e| InputError::Call(CallError::Rpc(e))),
            (None, task) => {
                if let Some(run) = &task {
                    run.asking(true).await;
                }
                let answers = self.ask_peer(requests, task.as_ref().map(|r| r.id.as_str()));
                let answers = answers.await;
                if let Some(run) = &task {
                    run.asking(false).await;
                }
                answers
            }
            (Some(m), None) => {
                let answers = m.mrtr.answers();
                let missing: InputRequests = requests
                    .iter()
                    .filter(|(k, _)| !answers.contains_key(*k))
                    .map(|(k, r)| (k.clone(), r.clone()))
                    .collect();
                if !missing.is_empty() {
                    m.mrtr.ask(missing);
                    return Err(InputError::Required);
                }
                Ok(requests
                    .keys()
                    .filter_map(|k| answers.get(k).map(|v| (k.clone(), v.clone())))
                    .collect())
            }
        }
    }

    /// The error for a client capability `cap` (`sampling.tools` for a nested one) that the
    /// client lacks; a 2026-07-28 request is then answered with -32021 naming it.
    fn missing_capability(&self, cap: &str) -> CallError {
        if let Some(m) = &self.modern {
            // `sampling.tools` is `{"sampling": {"tools": {}}}`.
            let mut required = JsonObject::new();
            let empty = || Value::Object(JsonObject::new());
            match cap.split_once('.') {
                Some((outer, inner)) => {
                    let mut sub = JsonObject::new();
                    sub.insert(inner.to_owned(), empty());
                    required.insert(outer.to_owned(), Value::Object(sub));
                }
                None => {
                    required.insert(cap.to_owned(), empty());
                }
            }
            m.mrtr.fail(
                ErrorObject::new(
                    ErrorCode::MISSING_CLIENT_CAPABILITY,
                    "Missing required client capability",
                )
                .with_data(serde_json::json!({ "requiredCapabilities": required })),
            );
        }
        CallError::Protocol(format!("the client does not support {cap}"))
    }

    /// Legacy sessions: each input request as a real server-to-client request (tied to its
    /// 2025-11-25 task, if any, by the related-task `_meta`).
    async fn ask_peer(
        &self,
        requests: InputRequests,
        task: Option<&str>,
    ) -> Result<JsonObject, InputError> {
        let mut out = JsonObject::new();
        for (key, r) in requests {
            let mut params = r.params.unwrap_or_else(|| Value::Object(JsonObject::new()));
            if let (Some(id), Value::Object(p)) = (task, &mut params) {
                let meta = p
                    .entry("_meta")
                    .or_insert_with(|| Value::Object(JsonObject::new()));
                if let Value::Object(meta) = meta {
                    meta.insert(
                        oxmcp_types::RELATED_TASK.to_owned(),
                        serde_json::json!({ "taskId": id }),
                    );
                }
            }
            let raw = self
                .rc
                .peer
                .request_raw(&r.method, params, &RequestOptions::default())
                .await?;
            out.insert(key, serde_json::from_str(raw.get())?);
        }
        Ok(out)
    }

    /// One input under a key of the handler's choosing, decoded as `T`.
    ///
    /// # Errors
    /// As [`Ctx::request_inputs`], or [`CallError::Decode`] for an answer of the wrong shape.
    pub async fn input<T: serde::de::DeserializeOwned>(
        &self,
        key: &str,
        method: &str,
        params: Value,
    ) -> Result<T, InputError> {
        let mut requests = InputRequests::new();
        requests.insert(
            key.to_owned(),
            InputRequest {
                method: method.to_owned(),
                params: Some(params),
            },
        );
        let mut answers = self.request_inputs(requests).await?;
        let answer = answers.remove(key).unwrap_or(Value::Null);
        Ok(serde_json::from_value(answer)?)
    }

    fn next_key(&self, method: &str) -> String {
        let n = self
            .inputs
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("{method}#{n}")
    }

    /// Asks the client's model for a completion (`sampling/createMessage`), in either era.
    ///
    /// # Errors
    /// As [`Ctx::request_inputs`].
    pub async fn create_message(
        &self,
        params: &CreateMessageParams,
    ) -> Result<CreateMessageResult, InputError> {
        let key = self.next_key(CreateMessage::METHOD);
        self.input(&key, CreateMessage::METHOD, serde_json::to_value(params)?)
            .await
    }

    /// Asks the user for input through the client (`elicitation/create`), in either era.
    ///
    /// # Errors
    /// As [`Ctx::request_inputs`].
    pub async fn elicit(&self, params: &ElicitParams) -> Result<ElicitResult, InputError> {
        let key = self.next_key(Elicit::METHOD);
        self.input(&key, Elicit::METHOD, serde_json::to_value(params)?)
            .await
    }

    /// Tells the client that the out-of-band interaction of URL-mode elicitation `id` is
    /// done (`notifications/elicitation/complete`), so that it may retry what waited for it.
    /// It often ends later, outside this handler: keep a clone of [`Ctx::peer`] and send
    /// [`oxmcp_types::methods::ElicitationComplete`] through it then.
    ///
    /// # Errors
    /// [`CallError`] if the connection is gone.
    pub async fn elicitation_complete(&self, id: &str) -> Result<(), CallError> {
        let params =
            oxmcp_types::ElicitationCompleteParams::default().with_elicitation_id(id.to_owned());
        self.rc
            .peer
            .notify::<oxmcp_types::methods::ElicitationComplete>(&params)
            .await
    }

    /// The client's roots. In a legacy session they are read once (`roots/list`) and kept
    /// until the client says they changed (`notifications/roots/list_changed`), when the
    /// server reads them again; a 2026-07-28 request asks each time.
    ///
    /// # Errors
    /// As [`Ctx::request_inputs`].
    pub async fn roots(&self) -> Result<Vec<oxmcp_types::Root>, InputError> {
        let legacy = self.modern.is_none();
        if legacy && let Some(roots) = self.session.cached_roots() {
            return Ok(roots);
        }
        let roots = self.list_roots().await?.roots;
        if legacy {
            self.session.cache_roots(roots.clone());
        }
        Ok(roots)
    }

    /// Asks the client for its roots (`roots/list`), in either era.
    ///
    /// # Errors
    /// As [`Ctx::request_inputs`].
    pub async fn list_roots(&self) -> Result<ListRootsResult, InputError> {
        let key = self.next_key(ListRoots::METHOD);
        self.input(&key, ListRoots::METHOD, Value::Object(JsonObject::new()))
            .await
    }
}

/// A progress report as a task's status message: "3/10: copying", "3: copying", "3/10".
fn progress_text(progress: f64, total: Option<f64>, message: Option<&str>) -> String {
    let amount = match total {
        Some(t) => format!("{progress}/{t}"),
        None => format!("{progress}"),
    };
    match message {
        Some(m) => format!("{amount}: {m}"),
        None => amount,
    }
}

/// The client capability an input request needs (`sampling.tools` for a sampling request
/// with tools, ...) and whether `caps` has it.
fn capability_for(
    caps: &ClientCapabilities,
    r: &InputRequest,
) -> Result<(&'static str, bool), CallError> {
    Ok(match r.method.as_str() {
        "sampling/createMessage" => {
            let tools = r
                .params
                .as_ref()
                .is_some_and(|p| p.get("tools").is_some() || p.get("toolChoice").is_some());
            let ok = caps
                .sampling
                .as_ref()
                .is_some_and(|s| !tools || s.contains_key("tools"));
            (if tools { "sampling.tools" } else { "sampling" }, ok)
        }
        "elicitation/create" => {
            let url = r
                .params
                .as_ref()
                .and_then(|p| p.get("mode"))
                .and_then(Value::as_str)
                == Some("url");
            let ok = caps
                .elicitation
                .as_ref()
                .is_some_and(|e| !url || e.contains_key("url"));
            ("elicitation", ok)
        }
        "roots/list" => ("roots", caps.roots.is_some()),
        other => {
            return Err(CallError::Protocol(format!(
                "{other} is not a client input method"
            )));
        }
    })
}
