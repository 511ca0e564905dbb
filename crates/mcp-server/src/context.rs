//! What a handler gets besides its arguments: progress, logging, cancellation, and requests to
//! the client (sampling, elicitation, roots).

use std::sync::Arc;

use mcp_engine::{CallError, Peer, RequestContext, RequestOptions};
use mcp_jsonrpc::RequestId;
use mcp_types::methods::{CreateMessage, Elicit, ListRoots};
use mcp_types::{
    ClientCapabilities, CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult,
    EmptyParams, Implementation, JsonObject, ListRootsResult, LoggingLevel, LoggingMessageParams,
    ProgressParams, ProgressToken, ProtocolVersion,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::modern::Era;
use crate::session::Session;

/// The context of one request, handed to every handler.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub(crate) rc: RequestContext,
    pub(crate) session: Arc<Session>,
    pub(crate) progress_token: Option<ProgressToken>,
    pub(crate) meta: Option<JsonObject>,
    pub(crate) era: Era,
}

impl Ctx {
    /// The request id.
    pub fn request_id(&self) -> &RequestId {
        &self.rc.id
    }

    /// Cancelled when the client cancels this request.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.rc.cancel
    }

    /// The request's `_meta`, if any.
    pub fn meta(&self) -> Option<&JsonObject> {
        self.meta.as_ref()
    }

    /// The connection to the client.
    pub fn peer(&self) -> &Peer {
        &self.rc.peer
    }

    /// The negotiated protocol version.
    pub fn protocol_version(&self) -> ProtocolVersion {
        match &self.era {
            Era::Modern(_) => ProtocolVersion::V2026_07_28,
            Era::Legacy => self.session.version(),
        }
    }

    /// The client's name and version.
    pub fn client_info(&self) -> Option<Implementation> {
        match &self.era {
            Era::Modern(m) => m.client_info.clone(),
            Era::Legacy => self.session.client_info(),
        }
    }

    /// The client's declared capabilities.
    pub fn client_capabilities(&self) -> ClientCapabilities {
        match &self.era {
            Era::Modern(m) => m.client_caps.clone(),
            Era::Legacy => self.session.client_capabilities(),
        }
    }

    /// Whether server-to-client requests are possible (legacy sessions); a modern request
    /// would need a multi round-trip (`input_required`) result instead.
    fn require_legacy(&self, what: &str) -> Result<(), CallError> {
        match &self.era {
            Era::Legacy => Ok(()),
            Era::Modern(_) => Err(CallError::Protocol(format!(
                "{what} from a 2026-07-28 request needs a multi round-trip result, which this server does not support yet"
            ))),
        }
    }

    /// Ends the HTTP stream this request is answered on, while the request goes on: the client
    /// reconnects (GET with `Last-Event-ID`) and gets the rest there. Does nothing on stdio.
    pub async fn close_stream(&self) {
        self.rc.peer.close_stream().await;
    }

    /// Reports progress, if the client asked for it (`_meta.progressToken`); otherwise a no-op.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        let Some(token) = self.progress_token.clone() else {
            return;
        };
        let params = ProgressParams {
            progress_token: token,
            progress,
            total,
            message,
            meta: None,
            extra: JsonObject::new(),
        };
        let _ = self
            .rc
            .peer
            .notify_raw("notifications/progress", &params)
            .await;
    }

    /// Sends a log message if `level` is at or above the client's chosen level.
    pub async fn log(&self, level: LoggingLevel, logger: Option<&str>, data: Value) {
        let enabled = match &self.era {
            // 2026-07-28: only when the request asked, at its own level.
            Era::Modern(m) => {
                self.session.logging_on() && m.log_level.is_some_and(|min| level >= min)
            }
            Era::Legacy => self.session.log_enabled(level),
        };
        if !enabled {
            return;
        }
        let params = LoggingMessageParams {
            level,
            logger: logger.map(str::to_owned),
            data,
            meta: None,
            extra: JsonObject::new(),
        };
        let _ = self
            .rc
            .peer
            .notify_raw("notifications/message", &params)
            .await;
    }

    /// Asks the client's model for a completion (`sampling/createMessage`).
    ///
    /// # Errors
    /// [`CallError::Protocol`] if the client did not declare `sampling`; otherwise as the call.
    pub async fn create_message(
        &self,
        params: &CreateMessageParams,
    ) -> Result<CreateMessageResult, CallError> {
        self.require_legacy("sampling")?;
        if self.client_capabilities().sampling.is_none() {
            return Err(CallError::Protocol(
                "the client does not support sampling".into(),
            ));
        }
        self.rc
            .peer
            .request::<CreateMessage>(params, &RequestOptions::default())
            .await
    }

    /// Asks the user for input through the client (`elicitation/create`).
    ///
    /// # Errors
    /// [`CallError::Protocol`] if the client did not declare `elicitation` (or the `url` mode
    /// for a URL elicitation); otherwise as the call.
    pub async fn elicit(&self, params: &ElicitParams) -> Result<ElicitResult, CallError> {
        self.require_legacy("elicitation")?;
        let caps = self.client_capabilities();
        let Some(elicitation) = caps.elicitation else {
            return Err(CallError::Protocol(
                "the client does not support elicitation".into(),
            ));
        };
        if params.mode.as_deref() == Some("url") && !elicitation.contains_key("url") {
            return Err(CallError::Protocol(
                "the client does not support URL elicitation".into(),
            ));
        }
        self.rc
            .peer
            .request::<Elicit>(params, &RequestOptions::default())
            .await
    }

    /// Asks the client for its roots (`roots/list`).
    ///
    /// # Errors
    /// [`CallError::Protocol`] if the client did not declare `roots`; otherwise as the call.
    pub async fn list_roots(&self) -> Result<ListRootsResult, CallError> {
        self.require_legacy("roots")?;
        if self.client_capabilities().roots.is_none() {
            return Err(CallError::Protocol(
                "the client does not support roots".into(),
            ));
        }
        self.rc
            .peer
            .request::<ListRoots>(&EmptyParams::default(), &RequestOptions::default())
            .await
    }
}
