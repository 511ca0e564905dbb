//! [`ServerConfig`]: a server's settings and limits.

use oxmcp_engine::EngineConfig;

/// Cache hints on cacheable results (2026-07-28: lists and `resources/read`).
#[derive(Debug, Clone, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "", generate_private = false)]
pub struct CacheConfig {
    /// `ttlMs`: how long a client may reuse the result.
    pub ttl_ms: u64,
    /// `cacheScope`: who may share a cached copy.
    pub scope: oxmcp_types::CacheScope,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self {
            ttl_ms: 60_000,
            scope: oxmcp_types::CacheScope::Public,
        }
    }
}

/// Settings of a server.
#[derive(Debug, Clone, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "", generate_private = false)]
pub struct ServerConfig {
    /// Serve the handshake era (2024-11-05 .. 2025-11-25).
    pub legacy: bool,
    /// Serve self-describing 2026-07-28 requests.
    pub modern: bool,
    /// Cache hints for modern (2026-07-28) results.
    pub cache: CacheConfig,
    /// Signs `requestState` of multi round-trip requests (random unless shared by instances).
    pub request_state_key: crate::mrtr::RequestStateKey,
    /// How long a `requestState` stays valid after the server issued it (default 15 min): a
    /// retry with an older one is refused with -32602.
    pub request_state_ttl: std::time::Duration,
    /// Items per page of list results.
    pub page_size: usize,
    /// Message loop settings.
    pub engine: EngineConfig,
    /// Resources one session may be subscribed to at once (`resources/subscribe`), and URIs
    /// one `subscriptions/listen` may name (default 1,000). One more is refused with -32602
    /// (`data.limit` says the limit) and nothing is stored.
    pub max_subscriptions: usize,
    /// The longest resource URI a request may name, in bytes (`resources/read`,
    /// `resources/subscribe`, `resources/unsubscribe`); a longer one is refused with -32602.
    /// Default 8 KiB.
    pub max_uri_len: usize,
    /// Where task state lives when the builder names no store ([`crate::ServerBuilder::task_store`]);
    /// `None`: in this process's memory. Instances sharing a store share their tasks.
    pub task_store: Option<std::sync::Arc<dyn crate::tasks::TaskStore>>,
    /// Where handlers' state lives ([`crate::Ctx::session_state`], [`crate::Ctx::user_state`]);
    /// `None`: in this process's memory ([`crate::MemoryStateStore`]). Instances sharing a
    /// store see the same state.
    pub state_store: Option<std::sync::Arc<dyn crate::handler_state::StateStore>>,
    /// Limits on handlers' state: key and value sizes, keys and bytes per scope, lifetimes.
    pub state_limits: crate::handler_state::StateLimits,
    /// MCP middleware around every request to a handler ([`crate::layer`]), outside those
    /// added with [`crate::ServerBuilder::layer`]. None by default.
    pub layers: crate::layer::Layers,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            legacy: true,
            modern: true,
            cache: CacheConfig::default(),
            request_state_key: crate::mrtr::RequestStateKey::random(),
            request_state_ttl: std::time::Duration::from_secs(15 * 60),
            page_size: 100,
            // JSON-RPC answers unparseable input with `"id": null`; a client never
            // answers a response, so this cannot start an error storm.
            engine: EngineConfig::default()
                .max_in_flight(64)
                .answer_unidentified(true),
            max_subscriptions: 1_000,
            max_uri_len: 8 * 1024,
            task_store: None,
            state_store: None,
            state_limits: crate::handler_state::StateLimits::default(),
            layers: crate::layer::Layers::new(),
        }
    }
}
