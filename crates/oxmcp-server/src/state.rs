//! [`ServerState`]: what every connection of a [`crate::Server`] shares, in groups named
//! for what they hold (who the server is, its catalogue, hooks, live connections, tasks and
//! extensions, the user's handler), and the hooks' public types ([`Change`] and the callbacks).

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use oxmcp_engine::Peer;
use oxmcp_jsonrpc::ErrorObject;
use oxmcp_types::{
    CacheScope, Implementation, JsonObject, ListChangedCapability, ResourcesCapability,
    ServerCapabilities,
};
use parking_lot::Mutex;

use crate::config::ServerConfig;
use crate::dynamic::{Handler, HandlerCapabilities};
use crate::extensions::Extensions;
use crate::registry::{Catalogue, Declared};
use crate::session::Session;
use crate::tasks::Tasks;

/// What every connection of a server shares.
pub(crate) struct ServerState {
    pub(crate) about: About,
    pub(crate) catalogue: Arc<Catalogue>,
    pub(crate) hooks: Hooks,
    pub(crate) live: Live,
    pub(crate) features: Features,
    /// Who answers lists, calls, reads and completions: the catalogue, or the user's
    /// handler.
    pub(crate) handler: Arc<dyn Handler>,
}

/// Who the server is and what it declares: identity, instructions, declared families and
/// logging, and its settings.
pub(crate) struct About {
    pub(crate) info: Implementation,
    pub(crate) instructions: Option<String>,
    pub(crate) logging: bool,
    pub(crate) declare: Declared,
    pub(crate) config: ServerConfig,
    /// The `cacheScope` of cacheable 2026-07-28 results that set none: the configured one,
    /// private for a user's handler (which may answer each caller differently).
    pub(crate) cache_scope: CacheScope,
}

/// The user's hooks on subscriptions, changes and roots.
pub(crate) struct Hooks {
    /// Told of every resource a client starts holding a subscription to; may refuse it.
    pub(crate) on_subscribe: Option<SubscribeFn>,
    /// Told of every subscription a client stops holding.
    pub(crate) on_unsubscribe: Option<UnsubscribeFn>,
    /// Told of every change made here, for other instances.
    pub(crate) on_change: std::sync::OnceLock<ChangeFn>,
    /// Told of a session's roots each time they are read again after
    /// `notifications/roots/list_changed`.
    pub(crate) on_roots_changed: Option<RootsChangedFn>,
}

/// The connections being served, and the changes announced to them.
pub(crate) struct Live {
    pub(crate) sessions: Mutex<Vec<(Weak<Session>, Peer)>>,
    /// Changes announced to `subscriptions/listen` streams (2026-07-28).
    pub(crate) changes: tokio::sync::broadcast::Sender<Change>,
}

/// What goes beyond the core methods: tasks and extensions.
pub(crate) struct Features {
    /// Tasks, when any tool may run as one (or they were configured).
    pub(crate) tasks: Option<Arc<Tasks>>,
    /// Declared extensions and custom methods.
    pub(crate) extensions: Extensions,
    /// Where handlers keep their state, and its limits.
    pub(crate) state: HandlerState,
    /// The middleware around requests to handlers, outermost first (empty: none).
    pub(crate) layers: Arc<[Arc<dyn crate::layer::Layer>]>,
    /// The instruments of the only layer, when it is a metrics layer: then requests are
    /// recorded inline ([`crate::layer::Metrics::around`]), with what the layer would record.
    #[cfg(feature = "metrics")]
    pub(crate) only_metrics: Option<crate::layer::Metrics>,
}

/// Handlers' state: the backend and its limits.
pub(crate) struct HandlerState {
    pub(crate) store: Arc<dyn crate::handler_state::StateStore>,
    pub(crate) limits: Arc<crate::handler_state::StateLimits>,
}

/// Called with a legacy session's new roots after the client said they changed
/// (`notifications/roots/list_changed`) and the server read them again (`roots/list`).
pub type RootsChangedFn = Arc<dyn Fn(&[oxmcp_types::Root]) + Send + Sync>;

/// Called with the client's principal (when the transport verified who it is, as
/// [`crate::Ctx::principal`]; `None` otherwise) and the URI each time a client starts holding
/// a subscription to a resource: a legacy session's `resources/subscribe` of a URI it does not
/// hold yet, or a 2026-07-28 `subscriptions/listen` naming it. An error refuses the
/// subscription: the client gets it and nothing is stored. Called while the session's state is
/// locked: it must not block.
pub type SubscribeFn = Arc<dyn Fn(Option<&str>, &str) -> Result<(), ErrorObject> + Send + Sync>;

/// Called with the client's principal and the URI each time a client stops holding a
/// subscription that [`SubscribeFn`] accepted: `resources/unsubscribe`, the end of the
/// session's connection, or the end of the `subscriptions/listen` request. Exactly once per
/// accepted subscription, with the principal it was accepted for, so holders can be counted
/// (per principal too).
pub type UnsubscribeFn = Arc<dyn Fn(Option<&str>, &str) + Send + Sync>;

/// A change of the server's that its clients hear about (`list_changed`, a resource
/// update). Instances of one server share them through [`crate::Server::on_change`] and
/// [`crate::Server::apply_change`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", content = "uri", rename_all = "camelCase")]
pub enum Change {
    /// The tool list changed.
    Tools,
    /// The prompt list changed.
    Prompts,
    /// The resource list changed.
    Resources,
    /// The resource with this URI changed.
    ResourceUpdated(String),
}

/// Told of each change this instance makes ([`crate::Server::on_change`]).
pub type ChangeFn = Arc<dyn Fn(&Change) + Send + Sync>;

impl ServerState {
    /// Which method families are served now: the handler's (the catalogue's: those with
    /// something registered), and those declared up front.
    pub(crate) fn served(&self) -> HandlerCapabilities {
        let mut served = self.handler.capabilities();
        served.tools |= self.about.declare.tools;
        served.resources |= self.about.declare.resources;
        served.prompts |= self.about.declare.prompts;
        served
    }

    /// Capabilities, computed from what is served.
    pub(crate) fn capabilities(&self) -> ServerCapabilities {
        let served = self.served();
        let changes = served.list_changed.then_some(true);
        let listed = || ListChangedCapability::default().with_list_changed(changes);
        ServerCapabilities::default()
            .with_tools(served.tools.then(listed))
            .with_resources(served.resources.then(|| {
                ResourcesCapability::default()
                    .with_subscribe(served.subscribe.then_some(true))
                    .with_list_changed(changes)
            }))
            .with_prompts(served.prompts.then(listed))
            .with_logging(self.about.logging.then(JsonObject::new))
            .with_completions(served.completions.then(JsonObject::new))
            .with_extensions(self.declared_extensions())
            .with_extra(self.legacy_tasks_capability())
    }
}

impl ServerState {
    /// The declared extensions, the tasks extension included when tasks are on.
    fn declared_extensions(&self) -> Option<BTreeMap<String, JsonObject>> {
        let mut declared = self.features.extensions.declared.clone();
        if self.features.tasks.is_some() {
            declared.insert(oxmcp_types::TASKS_EXTENSION.to_owned(), JsonObject::new());
        }
        (!declared.is_empty()).then_some(declared)
    }

    /// The 2025-11-25 `tasks` capability when tasks are on (left out of `server/discover`).
    fn legacy_tasks_capability(&self) -> JsonObject {
        let mut extra = JsonObject::new();
        if self.features.tasks.is_some() {
            extra.insert(
                "tasks".to_owned(),
                serde_json::json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
            );
        }
        extra
    }
}
