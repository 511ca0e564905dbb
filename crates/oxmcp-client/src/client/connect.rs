//! Connecting: the `initialize` handshake, or the 2026-07-28 `server/discover` probe with
//! its fallback; a child process started and owned by the client.

use std::sync::Arc;

use oxmcp_engine::{CallError, Peer};
use oxmcp_jsonrpc::ErrorCode;
#[cfg(feature = "child")]
use oxmcp_transport::ChildProcess;
use oxmcp_transport::Link;
use oxmcp_types::methods;
use oxmcp_types::{
    ClientCapabilities, EmptyParams, InitializeParams, InitializeResult, JsonObject,
    ListChangedCapability, ProtocolVersion,
};
use oxmcp_types::{DiscoverResult, meta_keys};
use serde_json::Value;
use tokio::sync::mpsc;

use super::{
    Active, Client, ClientConfig, ClientService, ConnectError, EraChoice, ListCache, Subscriptions,
};
use crate::handler::ClientHandlers;

/// Whether an UnsupportedProtocolVersion error lists 2026-07-28 as supported.
pub(super) fn lists_our_version(e: &CallError) -> bool {
    e.rpc().is_some_and(|err| {
        err.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
            && err
                .data
                .as_ref()
                .and_then(|d| d.get("supported"))
                .and_then(Value::as_array)
                .is_some_and(|vs| {
                    vs.iter()
                        .any(|v| v == ProtocolVersion::V2026_07_28.as_str())
                })
    })
}

/// After a failed `server/discover` probe: whether to fall back to the handshake. A modern
/// error means a modern server; only if it lists a legacy version we speak do we fall back.
pub(super) fn falls_back(e: &CallError) -> bool {
    let err = match e {
        CallError::Rpc(err) => err,
        // An answer that is not a discover result: not a modern server.
        CallError::Decode(_) | CallError::Protocol(_) => return true,
        // No answer to judge by.
        _ => return false,
    };
    match err.code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION => err
            .data
            .as_ref()
            .and_then(|d| d.get("supported"))
            .and_then(Value::as_array)
            .is_some_and(|vs| {
                vs.iter()
                    .filter_map(Value::as_str)
                    .filter_map(ProtocolVersion::parse)
                    .any(ProtocolVersion::is_legacy)
            }),
        ErrorCode::MISSING_CLIENT_CAPABILITY | ErrorCode::HEADER_MISMATCH => false,
        _ => true,
    }
}

pub(super) fn capabilities_of(h: &ClientHandlers) -> ClientCapabilities {
    let mut caps = ClientCapabilities::default();
    if h.sampling.is_some() {
        let mut s = JsonObject::new();
        if h.sampling_tools {
            s.insert("tools".to_owned(), Value::Object(JsonObject::new()));
        }
        caps.sampling = Some(s);
    }
    if h.elicitation.is_some() {
        let mut e = JsonObject::new();
        e.insert("form".to_owned(), Value::Object(JsonObject::new()));
        if h.url_elicitation {
            e.insert("url".to_owned(), Value::Object(JsonObject::new()));
        }
        caps.elicitation = Some(e);
    }
    if h.roots.is_some() {
        caps.roots = Some(ListChangedCapability::default().with_list_changed(Some(true)));
    }
    if !h.extensions.is_empty() {
        caps.extensions = Some(h.extensions.clone());
    }
    caps
}

impl Client {
    /// Connects over a transport's channels and performs the `initialize` handshake (or, as
    /// [`ClientConfig::era`] says, the 2026-07-28 `server/discover` probe).
    ///
    /// # Errors
    /// [`ConnectError`] if the handshake fails.
    pub async fn connect(
        incoming: mpsc::Receiver<oxmcp_jsonrpc::Inbound>,
        outgoing: mpsc::Sender<oxmcp_jsonrpc::Outbound>,
        handlers: ClientHandlers,
        config: ClientConfig,
    ) -> Result<Client, ConnectError> {
        let peer = Peer::new(outgoing);
        let capabilities = capabilities_of(&handlers);
        let subscriptions: Subscriptions = Arc::default();
        let list_cache: ListCache = Arc::default();
        let service = Arc::new(ClientService {
            handlers: handlers.clone(),
            subscriptions: subscriptions.clone(),
            list_cache: list_cache.clone(),
        });
        let ended = tokio_util::sync::CancellationToken::new();
        let engine = {
            let ended = ended.clone();
            let run = oxmcp_engine::run(peer.clone(), incoming, service, config.engine.clone());
            tokio::spawn(async move {
                run.await;
                ended.cancel();
            })
        };
        let (init, version, active) = match discover(&peer, &capabilities, &config).await? {
            Some((init, meta)) => {
                let active = Active::Modern {
                    meta,
                    log_level: parking_lot::Mutex::new(None),
                };
                (init, ProtocolVersion::V2026_07_28, active)
            }
            None => {
                let (init, version) = handshake(&peer, capabilities, &config).await?;
                (init, version, Active::Legacy)
            }
        };
        Ok(Client {
            peer,
            handlers,
            subscriptions,
            list_cache,
            init,
            version,
            active,
            options: config.request,
            retry: config.retry,
            max_pages: config.max_pages,
            safe_tools: Default::default(),
            output_schemas: Default::default(),
            validate_output: config.validate_output,
            link: tokio::sync::Mutex::new(None),
            engine: Some(engine),
            ended,
        })
    }

    /// Connects over a transport's channels and takes charge of what the transport opened
    /// (`link`: a child process, an HTTP session), which [`Client::close`] then closes. If
    /// the handshake fails, `link` is closed before the error is returned.
    ///
    /// # Errors
    /// [`ConnectError`] if the handshake fails.
    pub async fn connect_over(
        channels: oxmcp_transport::Channels,
        link: impl Link,
        handlers: ClientHandlers,
        config: ClientConfig,
    ) -> Result<Client, ConnectError> {
        let link: Box<dyn Link> = Box::new(link);
        match Client::connect(channels.incoming, channels.outgoing, handlers, config).await {
            Ok(client) => {
                *client.link.lock().await = Some(link);
                Ok(client)
            }
            Err(e) => {
                link.close().await;
                Err(e)
            }
        }
    }

    /// Starts `program args...` as a child process and connects to it over stdio. The child
    /// gets the environment `config.child.env` describes: by default only the safe set (no
    /// API keys or tokens from ours).
    ///
    /// # Errors
    /// [`ConnectError`] if it cannot be started or the handshake fails.
    #[cfg(feature = "child")]
    pub async fn spawn<S: AsRef<std::ffi::OsStr>>(
        program: &str,
        args: &[S],
        handlers: ClientHandlers,
        config: ClientConfig,
    ) -> Result<Client, ConnectError> {
        let (child, io) = ChildProcess::spawn(program, args, config.child.clone())?;
        Client::connect_over(io, child, handlers, config).await
    }
}

/// The 2026-07-28 probe: `server/discover` with our `_meta`. `Some` (the server's answer as
/// an `initialize` result, and the `_meta` our requests carry) when the server speaks
/// 2026-07-28; `None` when the handshake should be tried instead (a legacy server, or a
/// legacy-only client).
async fn discover(
    peer: &Peer,
    capabilities: &ClientCapabilities,
    config: &ClientConfig,
) -> Result<Option<(InitializeResult, JsonObject)>, ConnectError> {
    if config.era == EraChoice::Legacy {
        return Ok(None);
    }
    let mut meta = JsonObject::new();
    meta.insert(
        meta_keys::PROTOCOL_VERSION.to_owned(),
        Value::from(ProtocolVersion::V2026_07_28.as_str()),
    );
    meta.insert(
        meta_keys::CLIENT_INFO.to_owned(),
        serde_json::to_value(&config.info).map_err(CallError::from)?,
    );
    meta.insert(
        meta_keys::CLIENT_CAPABILITIES.to_owned(),
        serde_json::to_value(capabilities).map_err(CallError::from)?,
    );
    let params = serde_json::json!({ "_meta": meta });
    let method = <methods::Discover as methods::Request>::METHOD;
    let mut probe: Result<DiscoverResult, CallError> =
        peer.request_as(method, &params, &config.request).await;
    // A -32022 that lists our version asks for a retry, not a fallback.
    if probe.as_ref().err().is_some_and(lists_our_version) {
        probe = peer.request_as(method, &params, &config.request).await;
    }
    match probe {
        Ok(d)
            if d.supported_versions
                .iter()
                .any(|v| v == ProtocolVersion::V2026_07_28.as_str()) =>
        {
            let server_info = d
                .meta
                .as_ref()
                .and_then(|m| m.get(meta_keys::SERVER_INFO))
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or_default();
            let init = InitializeResult::default()
                .with_protocol_version(ProtocolVersion::V2026_07_28.as_str().to_owned())
                .with_capabilities(d.capabilities)
                .with_server_info(server_info)
                .with_instructions(d.instructions);
            Ok(Some((init, meta)))
        }
        // A modern server that does not speak our version, or a modern-only client.
        Ok(d) if config.era == EraChoice::Modern => {
            Err(ConnectError::Version(d.supported_versions.join(", ")))
        }
        Err(e) if config.era == EraChoice::Modern || !falls_back(&e) => {
            Err(ConnectError::Initialize(e))
        }
        // Anything else identifies a legacy server: fall back to the handshake.
        _ => {
            tracing::debug!("server/discover failed; falling back to initialize");
            Ok(None)
        }
    }
}

/// The legacy handshake: `initialize`, a version we speak, then `initialized`.
async fn handshake(
    peer: &Peer,
    capabilities: ClientCapabilities,
    config: &ClientConfig,
) -> Result<(InitializeResult, ProtocolVersion), ConnectError> {
    let params = InitializeParams::default()
        .with_protocol_version(config.protocol_version.as_str().to_owned())
        .with_capabilities(capabilities)
        .with_client_info(config.info.clone());
    let init: InitializeResult = peer
        .request::<methods::Initialize>(&params, &config.request)
        .await?;
    let Some(version) = ProtocolVersion::parse(&init.protocol_version).filter(|v| v.is_legacy())
    else {
        return Err(ConnectError::Version(init.protocol_version));
    };
    peer.notify::<methods::Initialized>(&EmptyParams::default())
        .await?;
    Ok((init, version))
}
