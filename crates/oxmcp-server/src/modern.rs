//! Revision 2026-07-28 on the server: requests that describe themselves in `_meta` (no
//! handshake), `server/discover`, and the fields every modern result carries.

use oxmcp_engine::HandlerResult;
use oxmcp_jsonrpc::{ErrorObject, RawValue, to_raw};
use oxmcp_types::methods::{
    ListPrompts, ListResourceTemplates, ListResources, ListTools, ReadResource, Request as _,
};
use oxmcp_types::{
    CacheScope, CallToolResult, ClientCapabilities, CompleteResult, DiscoverResult, EmptyResult,
    GetPromptResult, Implementation, InputRequiredResult, JsonObject, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
    ProtocolVersion, ReadResourceResult, RequestMeta, ResultType, meta_keys,
};
use serde::{Deserialize as _, Serialize};
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
    // Built once: `str::contains` would set up its searcher for the key on every request.
    static KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(meta_keys::PROTOCOL_VERSION));
    params.is_some_and(|raw| KEY.find(raw.get().as_bytes()).is_some())
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

/// What every 2026-07-28 result of one request carries: `resultType` (unless the handler
/// set one), the server's identity in `_meta`, and cache hints on cacheable results
/// (`cacheScope` private by default on a server built with a [`crate::ServerHandler`]).
/// Set on the typed result before its one encoding ([`encode`]).
#[derive(Clone)]
pub(crate) struct Finish {
    server: Arc<ServerState>,
    cacheable: bool,
}

impl std::fmt::Debug for Finish {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Finish")
            .field("cacheable", &self.cacheable)
            .finish_non_exhaustive()
    }
}

impl Finish {
    /// The fields `method`'s results carry on `server`.
    pub(crate) fn new(server: Arc<ServerState>, method: &str) -> Self {
        Self {
            server,
            cacheable: CACHEABLE.contains(&method),
        }
    }

    /// The cache hints (lifetime, scope) of a cacheable method's final result.
    fn cache(&self, interim: bool) -> Option<(u64, CacheScope)> {
        if !self.cacheable || interim {
            return None;
        }
        let cache = &self.server.about.config.cache;
        // A handler computes its results per request, perhaps per caller: private unless
        // the handler's result says otherwise.
        Some((cache.ttl_ms, self.server.about.cache_scope))
    }

    /// Adds the server's identity to `meta`, keeping what the handler put there.
    fn fill_meta(&self, meta: &mut JsonObject) {
        for (k, v) in server_meta(&self.server) {
            meta.entry(k).or_insert(v);
        }
    }

    /// Sets the fields a typed result leaves unset (a field among its unmodelled ones
    /// counts as set).
    fn fill(&self, slots: Slots<'_>) {
        let has = |key: &str| slots.extra.contains_key(key);
        if slots.result_type.is_none() && !has("resultType") {
            *slots.result_type = Some(ResultType::Complete);
        }
        if !has("_meta") {
            self.fill_meta(slots.meta.get_or_insert_with(JsonObject::new));
        }
        let interim = *slots.result_type == Some(ResultType::InputRequired);
        if let (Some((ttl, scope)), Some((ttl_ms, cache_scope))) =
            (self.cache(interim), slots.cache)
        {
            if ttl_ms.is_none() && !has("ttlMs") {
                *ttl_ms = Some(ttl);
            }
            if cache_scope.is_none() && !has("cacheScope") {
                *cache_scope = Some(scope);
            }
        }
    }

    /// Sets the fields a result built as a JSON object lacks.
    fn fill_object(&self, result: &mut JsonObject) {
        result
            .entry("resultType")
            .or_insert_with(|| Value::String("complete".to_owned()));
        let meta = result
            .entry("_meta")
            .or_insert_with(|| Value::Object(JsonObject::new()));
        if let Value::Object(meta) = meta {
            self.fill_meta(meta);
        }
        let interim = result.get("resultType").and_then(Value::as_str) == Some("input_required");
        if let Some((ttl, scope)) = self.cache(interim) {
            result.entry("ttlMs").or_insert_with(|| Value::from(ttl));
            let scope = match scope {
                CacheScope::Public => "public",
                CacheScope::Private => "private",
            };
            result
                .entry("cacheScope")
                .or_insert_with(|| Value::String(scope.to_owned()));
        }
    }
}

/// The 2026-07-28 fields of one typed result, to be set where unset.
struct Slots<'a> {
    result_type: &'a mut Option<ResultType>,
    meta: &'a mut Option<JsonObject>,
    /// `ttlMs` and `cacheScope`, on results that have them.
    cache: Option<(&'a mut Option<u64>, &'a mut Option<CacheScope>)>,
    extra: &'a JsonObject,
}

/// A result that carries the 2026-07-28 fields.
pub(crate) trait ModernResult: Serialize {
    /// Sets the fields `finish` says this result carries, where the handler left them unset.
    fn carry(&mut self, finish: &Finish) -> Result<(), ErrorObject>;
}

macro_rules! modern_result {
    (cached: $($cached:ty),*; uncached: $($uncached:ty),*) => {
        $(impl ModernResult for $cached {
            fn carry(&mut self, finish: &Finish) -> Result<(), ErrorObject> {
                finish.fill(Slots {
                    result_type: &mut self.result_type,
                    meta: &mut self.meta,
                    cache: Some((&mut self.ttl_ms, &mut self.cache_scope)),
                    extra: &self.extra,
                });
                Ok(())
            }
        })*
        $(impl ModernResult for $uncached {
            fn carry(&mut self, finish: &Finish) -> Result<(), ErrorObject> {
                finish.fill(Slots {
                    result_type: &mut self.result_type,
                    meta: &mut self.meta,
                    cache: None,
                    extra: &self.extra,
                });
                Ok(())
            }
        })*
    };
}

modern_result!(
    cached: ListToolsResult, ListPromptsResult, ListResourcesResult,
        ListResourceTemplatesResult, ReadResourceResult;
    uncached: CallToolResult, GetPromptResult, CompleteResult, EmptyResult, InputRequiredResult
);

impl ModernResult for JsonObject {
    fn carry(&mut self, finish: &Finish) -> Result<(), ErrorObject> {
        finish.fill_object(self);
        Ok(())
    }
}

impl ModernResult for Value {
    fn carry(&mut self, finish: &Finish) -> Result<(), ErrorObject> {
        match self {
            Value::Object(result) => result.carry(finish),
            other => Err(ErrorObject::internal(format!(
                "result is not an object: {}",
                serde_json::from_value::<JsonObject>(other.clone())
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default()
            ))),
        }
    }
}

/// Encodes a result once: with the 2026-07-28 fields `finish` names set first, if any.
pub(crate) fn encode<T: ModernResult>(finish: Option<&Finish>, mut result: T) -> HandlerResult {
    if let Some(finish) = finish {
        result.carry(finish)?;
    }
    to_raw(&result).map_err(|e| ErrorObject::internal(format!("could not encode the result: {e}")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::atomic::{AtomicUsize, Ordering};

    use oxmcp_types::{CallToolResult, Content, ListToolsResult};
    use serde_json::{Value, json};

    use super::{Finish, ModernResult, encode};

    fn finish(method: &str) -> Finish {
        let server = crate::Server::builder("t", "0").build().unwrap();
        Finish::new(server.state, method)
    }

    /// A result that counts its encodings.
    #[derive(serde::Serialize)]
    #[serde(transparent)]
    struct Counted<'a>(CallToolResult, #[serde(skip)] &'a AtomicUsize);

    impl ModernResult for Counted<'_> {
        fn carry(&mut self, finish: &Finish) -> Result<(), oxmcp_jsonrpc::ErrorObject> {
            self.1.fetch_add(1, Ordering::Relaxed);
            self.0.carry(finish)
        }
    }

    /// A `tools/call` result gets its 2026-07-28 fields on the typed value and is encoded
    /// once, in its declared field order (a round trip through a map would sort `_meta`
    /// first), keeping what the handler set.
    #[test]
    fn a_tool_result_is_finished_typed_and_encoded_once() {
        let carried = AtomicUsize::new(0);
        let mut mine = oxmcp_types::JsonObject::new();
        mine.insert("mine".to_owned(), json!(1));
        let result = CallToolResult::default()
            .with_content(vec![Content::text("hi")])
            .with_meta(Some(mine));
        let raw = encode(Some(&finish("tools/call")), Counted(result, &carried)).unwrap();
        assert_eq!(carried.load(Ordering::Relaxed), 1);
        assert!(
            raw.get()
                .starts_with(r#"{"resultType":"complete","content":["#),
            "{}",
            raw.get()
        );
        let v: Value = serde_json::from_str(raw.get()).unwrap();
        assert_eq!(v["_meta"]["mine"], 1);
        assert_eq!(
            v["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "t"
        );
        assert!(v.get("ttlMs").is_none() && v.get("cacheScope").is_none());
    }

    /// A list result gets cache hints unless its handler set them; a legacy answer nothing.
    #[test]
    fn a_list_result_gets_cache_hints_and_a_legacy_one_nothing() {
        let list = ListToolsResult::default().with_ttl_ms(Some(5));
        let raw = encode(Some(&finish("tools/list")), list.clone()).unwrap();
        let v: Value = serde_json::from_str(raw.get()).unwrap();
        assert_eq!(v["ttlMs"], 5);
        assert_eq!(v["cacheScope"], "public");
        assert_eq!(v["resultType"], "complete");
        let raw = encode(None, list).unwrap();
        assert_eq!(raw.get(), r#"{"tools":[],"ttlMs":5}"#);
    }

    /// An object built as JSON (custom methods, tasks) is finished in place; anything else
    /// is an internal error.
    #[test]
    fn a_json_result_is_finished_in_place() {
        let raw = encode(
            Some(&finish("x/custom")),
            json!({"resultType": "input_required"}),
        )
        .unwrap();
        let v: Value = serde_json::from_str(raw.get()).unwrap();
        assert_eq!(v["resultType"], "input_required");
        assert!(v["_meta"].is_object());
        let e = encode(Some(&finish("x/custom")), json!(3)).unwrap_err();
        assert_eq!(e.code.0, -32603);
    }
}
