//! Revision 2026-07-28 on the server: requests that describe themselves in `_meta` (no
//! handshake), `server/discover`, and the fields every modern result carries.

use oxmcp_jsonrpc::{ErrorObject, RawJson, RawValue, to_raw};
use oxmcp_types::methods::{
    ListPrompts, ListResourceTemplates, ListResources, ListTools, ReadResource, Request as _,
};
use oxmcp_types::{
    CacheScope, ClientCapabilities, DiscoverResult, Implementation, JsonObject, LoggingLevel,
    ProtocolVersion, RequestMeta, ResultType, meta_keys,
};
use serde::Deserialize as _;
use serde_json::Value;
use std::sync::Arc;

use crate::state::ServerState;

/// What a modern request says about its client, and its multi round-trip state.
#[derive(Debug)]
pub(crate) struct ModernMeta {
    pub(crate) mrtr: crate::mrtr::Mrtr,
    pub(crate) client_info: Option<Implementation>,
    pub(crate) client_caps: ClientCapabilities,
    /// Log messages are sent only when the request asks for them, at or above this level.
    pub(crate) log_level: Option<LoggingLevel>,
    /// The request's `_meta` and multi round-trip members, read once.
    pub(crate) request: Arc<RequestMeta>,
}

/// Every version this server speaks, newest first (legacy ones through `initialize`).
pub(crate) fn supported_versions() -> Vec<String> {
    ProtocolVersion::ALL
        .iter()
        .rev()
        .map(|v| v.as_str().to_owned())
        .collect()
}

/// The `UnsupportedProtocolVersionError` (-32022): what was asked for, and what is spoken
/// (every known revision when `supported` is `None`).
pub(crate) fn unsupported_version_error(
    requested: &str,
    supported: Option<&[&str]>,
) -> ErrorObject {
    match supported {
        Some(s) => ErrorObject::unsupported_version(requested, s),
        None => ErrorObject::unsupported_version(requested, &ProtocolVersion::names_newest_first()),
    }
}

/// Whether a request may be a 2026-07-28 one, from a cheap look at its params text: legacy
/// requests (the hot path on old clients) are then never read for their `_meta`.
pub(crate) fn may_be_modern(params: Option<&RawValue>) -> bool {
    params.is_some_and(|raw| raw.get().contains(meta_keys::PROTOCOL_VERSION))
}

/// Reads a request's era from its [`RequestMeta`]. `Ok(None)`: a legacy request. An `Err` is
/// the `UnsupportedProtocolVersionError` to answer with.
pub(crate) fn detect(request: Arc<RequestMeta>) -> Result<Option<ModernMeta>, ErrorObject> {
    let Some(version) = request.protocol_version() else {
        return Ok(None);
    };
    let requested = version.as_str().unwrap_or_default();
    if ProtocolVersion::parse(requested).is_none_or(ProtocolVersion::is_legacy) {
        return Err(unsupported_version_error(requested, None));
    }
    let Some(caps) = request.meta_field(meta_keys::CLIENT_CAPABILITIES) else {
        return Err(ErrorObject::invalid_params(format!(
            "Invalid params: _meta.{} is required",
            meta_keys::CLIENT_CAPABILITIES
        )));
    };
    let client_caps = ClientCapabilities::deserialize(caps).map_err(|e| {
        ErrorObject::invalid_params(format!(
            "Invalid params: _meta.{}: {e}",
            meta_keys::CLIENT_CAPABILITIES
        ))
    })?;
    let field = |key: &str| request.meta_field(key);
    Ok(Some(ModernMeta {
        mrtr: crate::mrtr::Mrtr::default(),
        client_info: field(meta_keys::CLIENT_INFO)
            .and_then(|v| Implementation::deserialize(v).ok()),
        client_caps,
        log_level: field(meta_keys::LOG_LEVEL).and_then(|v| LoggingLevel::deserialize(v).ok()),
        request,
    }))
}

fn server_meta(server: &ServerState) -> JsonObject {
    let mut meta = JsonObject::new();
    if let Ok(info) = serde_json::to_value(&server.about.info) {
        meta.insert(meta_keys::SERVER_INFO.to_owned(), info);
    }
    meta
}

/// The `server/discover` result.
pub(crate) fn discover(server: &ServerState) -> DiscoverResult {
    let mut capabilities = server.capabilities();
    if let Some(r) = capabilities.resources.as_mut() {
        r.subscribe = None; // replaced by subscriptions/listen in 2026-07-28
    }
    // 2026-07-28 has the tasks extension instead of the 2025-11-25 `tasks` capability.
    capabilities.extra.remove("tasks");
    DiscoverResult::default()
        .with_result_type(Some(ResultType::Complete))
        .with_supported_versions(supported_versions())
        .with_capabilities(capabilities)
        .with_instructions(server.about.instructions.clone())
        .with_ttl_ms(Some(server.about.config.cache.ttl_ms))
        .with_cache_scope(Some(server.about.config.cache.scope))
        .with_meta(Some(server_meta(server)))
}

const CACHEABLE: &[&str] = &[
    ListTools::METHOD,
    ListPrompts::METHOD,
    ListResources::METHOD,
    ListResourceTemplates::METHOD,
    ReadResource::METHOD,
];

/// Adds what every modern result carries: `resultType` (unless the handler set one),
/// the server's identity in `_meta`, and cache hints on cacheable results (`cacheScope`
/// private by default on a server built with a [`crate::ServerHandler`]).
pub(crate) fn finish(
    raw: &RawJson,
    server: &ServerState,
    method: &str,
) -> Result<RawJson, ErrorObject> {
    let mut result: JsonObject = serde_json::from_str(raw.get())
        .map_err(|e| ErrorObject::internal(format!("result is not an object: {e}")))?;
    result
        .entry("resultType")
        .or_insert_with(|| Value::String("complete".to_owned()));
    let meta = result
        .entry("_meta")
        .or_insert_with(|| Value::Object(JsonObject::new()));
    if let Value::Object(meta) = meta {
        for (k, v) in server_meta(server) {
            meta.entry(k).or_insert(v);
        }
    }
    let interim = result.get("resultType").and_then(Value::as_str) == Some("input_required");
    if CACHEABLE.contains(&method) && !interim {
        let cache = &server.about.config.cache;
        result
            .entry("ttlMs")
            .or_insert_with(|| Value::from(cache.ttl_ms));
        // A handler computes its results per request, perhaps per caller: private unless
        // the handler's result says otherwise.
        let scope = match server.about.cache_scope {
            CacheScope::Public => "public",
            CacheScope::Private => "private",
        };
        result
            .entry("cacheScope")
            .or_insert_with(|| Value::String(scope.to_owned()));
    }
    to_raw(&result).map_err(|e| ErrorObject::internal(format!("could not encode the result: {e}")))
}
