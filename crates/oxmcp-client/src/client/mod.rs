//! [`Client`]: connect, handshake, typed calls, shutdown. The rooms: `connect` (the
//! handshake or the 2026-07-28 probe), `service` (what the server asks of us), `requests`
//! (sending, with retries), `modern` (2026-07-28 `_meta`, input rounds and
//! `subscriptions/listen`), `cache` (cacheable list pages) and `calls` (typed methods).

mod cache;
mod calls;
mod connect;
mod modern;
mod output;
mod requests;
mod service;
mod tasks;

use cache::ListCache;
pub use calls::invalid_header_annotation;
pub use modern::Subscription;
use modern::Subscriptions;
use service::ClientService;
pub use tasks::{TaskHandle, ToolCall};

use oxmcp_engine::{CallError, EngineConfig, Peer, RequestOptions};
#[cfg(feature = "child")]
use oxmcp_transport::ChildConfig;
use oxmcp_transport::{Exit, Link};
use oxmcp_types::{
    Implementation, InitializeResult, JsonObject, LoggingLevel, ProtocolVersion, ServerCapabilities,
};
use tokio::task::JoinHandle;

use crate::handler::ClientHandlers;

/// Errors connecting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The server process could not be started.
    #[cfg(feature = "child")]
    #[error(transparent)]
    Spawn(#[from] oxmcp_transport::ChildError),
    /// The handshake failed. The message names the cause (`initialize failed: HTTP 401
    /// Unauthorized`); the [`CallError`] is the field, not repeated as `source()`.
    #[error("initialize failed: {0}")]
    Initialize(CallError),
    /// The server answered with a version we do not speak.
    #[error("the server chose protocol version {0:?}, which this client does not support")]
    Version(String),
    /// The transport could not connect (the URL, the network, TLS, a refused upgrade).
    #[error("{0}")]
    Transport(String),
}

impl From<CallError> for ConnectError {
    fn from(e: CallError) -> Self {
        ConnectError::Initialize(e)
    }
}

/// Client settings.
#[derive(Debug, Clone, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "", generate_private = false)]
pub struct ClientConfig {
    /// Which protocol era to speak.
    pub era: EraChoice,
    /// How failed calls of safe methods are retried.
    pub retry: crate::retry::RetryPolicy,
    /// Our name and version.
    pub info: Implementation,
    /// The version we ask for.
    pub protocol_version: ProtocolVersion,
    /// Default options for requests.
    pub request: RequestOptions,
    /// Message loop settings.
    pub engine: EngineConfig,
    /// Child process settings (stdio). The child's environment is by default a small safe set
    /// from ours (`PATH`, `HOME`, `LANG`, ...; see [`oxmcp_transport::env::SAFE_VARS`]), not all
    /// of it: add what the server needs with `child.env.var(..)`, or use
    /// [`oxmcp_transport::ChildEnv::inherit_all`].
    #[cfg(feature = "child")]
    pub child: ChildConfig,
    /// Most pages [`Client::list_tools`] and the other `list_all_*` methods request before
    /// they give up with [`CallError::Protocol`] (they also stop when the server repeats a
    /// cursor). Default 1,000.
    pub max_pages: usize,
    /// Check each tool result's `structuredContent` against the tool's `outputSchema` (as
    /// [`Client::list_tools`] last saw it): a result without it, or not matching it, fails
    /// the call with [`CallError::Protocol`]. Default on.
    pub validate_output: bool,
}

/// Which protocol era a client speaks: the one choice every front end uses (the CLI's
/// `--era`, the gateway's `era = "..."`), parsed from `legacy`, `modern` (or its version,
/// `2026-07-28`) or `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EraChoice {
    /// The `initialize` handshake (2024-11-05 .. 2025-11-25).
    #[default]
    Legacy,
    /// 2026-07-28 only: self-describing requests, no handshake.
    #[serde(alias = "2026-07-28")]
    Modern,
    /// Probe with `server/discover`; speak 2026-07-28 if the server does, else fall back to
    /// the handshake. Either way the same handlers answer sampling, elicitation and roots:
    /// as server-to-client requests on a legacy session, as `input_required` rounds (retried
    /// for the caller, at most 8 rounds) in 2026-07-28.
    Auto,
}

impl std::str::FromStr for EraChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "legacy" => Ok(EraChoice::Legacy),
            "modern" | "2026-07-28" => Ok(EraChoice::Modern),
            "auto" => Ok(EraChoice::Auto),
            other => Err(format!(
                "unknown era {other:?} (legacy, modern or 2026-07-28, or auto)"
            )),
        }
    }
}

/// The era in use.
#[derive(Debug)]
enum Active {
    Legacy,
    Modern {
        meta: JsonObject,
        log_level: parking_lot::Mutex<Option<LoggingLevel>>,
    },
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            era: EraChoice::Legacy,
            retry: crate::retry::RetryPolicy::default(),
            info: Implementation::new("mcp-rs-client", env!("CARGO_PKG_VERSION")),
            protocol_version: ProtocolVersion::LATEST_LEGACY,
            request: RequestOptions::default(),
            engine: EngineConfig::default(),
            #[cfg(feature = "child")]
            child: ChildConfig::default(),
            max_pages: 1000,
            validate_output: true,
        }
    }
}

/// A connected, initialized MCP client.
pub struct Client {
    peer: Peer,
    handlers: ClientHandlers,
    subscriptions: Subscriptions,
    list_cache: ListCache,
    init: InitializeResult,
    version: ProtocolVersion,
    active: Active,
    options: RequestOptions,
    retry: crate::retry::RetryPolicy,
    /// [`ClientConfig::max_pages`].
    pub(crate) max_pages: usize,
    /// Tools known to be safe to repeat (read-only or idempotent), from `list_tools`.
    safe_tools: parking_lot::Mutex<std::collections::HashSet<String>>,
    /// Output schemas of the listed tools, to check results against.
    output_schemas: output::OutputSchemas,
    /// [`ClientConfig::validate_output`].
    validate_output: bool,
    /// What the transport opened (a child process, an HTTP session): closed with the client.
    link: tokio::sync::Mutex<Option<Box<dyn Link>>>,
    engine: Option<JoinHandle<()>>,
    /// Cancelled when the connection's message loop has ended (the server went away).
    ended: tokio_util::sync::CancellationToken,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server", &self.init.server_info)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// The `initialize` result (server info, capabilities, instructions).
    pub fn server(&self) -> &InitializeResult {
        &self.init
    }

    /// The server's capabilities.
    pub fn server_capabilities(&self) -> &ServerCapabilities {
        &self.init.capabilities
    }

    /// The negotiated version.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.version
    }

    /// The underlying connection.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// The child server's pid, when it runs as a child.
    pub async fn child_pid(&self) -> Option<u32> {
        self.link.lock().await.as_ref().and_then(|l| l.pid())
    }

    /// Resolves when the connection has ended: the server process exited or closed its
    /// output, or the transport gave up. Outstanding requests have failed with
    /// [`CallError::Closed`] by then.
    pub async fn closed(&self) {
        self.ended.cancelled().await;
    }

    /// Whether the connection has ended (see [`Client::closed`]).
    pub fn is_closed(&self) -> bool {
        self.ended.is_cancelled()
    }

    /// Closes what the transport opened, as [`Client::close`] does (a child server: close
    /// stdin, SIGTERM, SIGKILL; an HTTP session: DELETE), without consuming the client, for
    /// callers that share it. Returns how a child ended; `None` when there is no child or
    /// it was already closed.
    pub async fn close_transport(&self) -> Option<Exit> {
        let link = self.link.lock().await.take();
        match link {
            Some(l) => l.close().await,
            None => None,
        }
    }

    /// Graceful shutdown: no new requests (they fail with [`CallError::ShuttingDown`]),
    /// in-flight requests get up to `deadline` to be answered, then the connection closes
    /// as in [`Client::close`]. Returns how a child server ended.
    pub async fn shutdown(self, deadline: std::time::Duration) -> Option<Exit> {
        self.peer.drain();
        if tokio::time::timeout(deadline, self.peer.wait_idle())
            .await
            .is_err()
        {
            tracing::warn!(
                pending = self.peer.pending_count(),
                "shutdown deadline passed with requests in flight; closing"
            );
        }
        self.close().await
    }

    /// Closes the connection and what its transport opened: a child server is shut down as
    /// the spec says (close stdin, wait, SIGTERM, wait, SIGKILL, whole process group), an
    /// HTTP session is ended with DELETE. Returns how a child ended.
    pub async fn close(mut self) -> Option<Exit> {
        let exit = self.close_transport().await;
        if let Some(engine) = self.engine.take() {
            engine.abort();
        }
        exit
    }
}
