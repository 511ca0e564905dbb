//! MCP middleware: [`Layer`]s wrap every request on its way to a handler (tools, resources,
//! prompts, completion, tasks, custom methods; not `initialize`, `ping` or
//! `server/discover`), on every transport, stdio included. A layer sees the request's method,
//! params and who sent it ([`McpRequest`]), and may refuse it, rewrite its params, or observe
//! it and its answer; [`Next::run`] passes it on. Layers compose in the order they were added
//! ([`crate::ServerBuilder::layer`], [`crate::ServerConfig::layers`]): the first added sees the
//! request first and the answer last.
//!
//! Shipped layers: [`AuditLayer`] (one log line per request), [`RateLimitLayer`] (per tool,
//! per principal), [`TimeoutLayer`] (per tool), and with the `metrics` feature
//! [`MetricsLayer`] (Prometheus and OpenTelemetry instruments). A server whose only layer
//! is a `MetricsLayer` added with [`Layers::push`] or [`crate::ServerBuilder::layer`] records
//! the same series inline, without the machinery a chain of layers needs.
//!
//! ```
//! use futures::future::BoxFuture;
//! use oxmcp_engine::HandlerResult;
//! use oxmcp_jsonrpc::{ErrorCode, ErrorObject};
//! use oxmcp_server::layer::{Layer, McpRequest, Next, Target};
//! use oxmcp_server::{Ctx, Server};
//!
//! /// Only `alice` may call `delete`.
//! struct OnlyAlice;
//!
//! impl Layer for OnlyAlice {
//!     fn call(&self, req: McpRequest, next: Next) -> BoxFuture<'static, HandlerResult> {
//!         let refused = matches!(req.target(), Some(Target::Tool(name)) if name == "delete")
//!             && req.principal() != Some("alice");
//!         if refused {
//!             let e = ErrorObject::new(ErrorCode::INVALID_REQUEST, "not allowed");
//!             return Box::pin(async move { Err(e) });
//!         }
//!         next.run(req)
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = Server::builder("demo", "1.0.0")
//!     .tool("delete", "Deletes", |_ctx: Ctx, _a: serde_json::Value| async move {
//!         Ok::<_, String>("gone".to_owned())
//!     })
//!     .layer(OnlyAlice)
//!     .build()?;
//! # let _ = server;
//! # Ok(())
//! # }
//! ```

mod audit;
#[cfg(feature = "metrics")]
mod metrics;
mod rate_limit;
mod timeout;

use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;
use oxmcp_engine::HandlerResult;
use oxmcp_jsonrpc::{RawJson, Request, RequestId};
use oxmcp_types::ProtocolVersion;

pub use audit::AuditLayer;
#[cfg(feature = "metrics")]
pub use metrics::{MAX_NAMES, Metrics, MetricsLayer};
pub use rate_limit::{Quota, RateLimitLayer};

pub use timeout::{TIMED_OUT, TimeoutLayer};

/// Middleware around the requests a server's handlers answer; see the [module](self).
pub trait Layer: Send + Sync + 'static {
    /// Handles `req`: answer it here (a refusal, say), or pass it on with `next.run(req)`,
    /// before or after looking at or changing it, and look at the answer.
    fn call(&self, req: McpRequest, next: Next) -> BoxFuture<'static, HandlerResult>;
}

/// The layers of a server, outermost first. Cheap to clone.
#[derive(Clone, Default)]
pub struct Layers {
    layers: Vec<Arc<dyn Layer>>,
    /// The instruments of each layer that is a [`MetricsLayer`] (`None` for the others): a
    /// server whose only layer is one records inline, without the layers' machinery.
    #[cfg(feature = "metrics")]
    metrics: Vec<Option<Metrics>>,
}

impl Layers {
    /// No layers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `layer` inside those added before.
    pub fn push(&mut self, layer: impl Layer) {
        #[cfg(feature = "metrics")]
        self.metrics.push(
            (&layer as &dyn std::any::Any)
                .downcast_ref::<MetricsLayer>()
                .map(MetricsLayer::metrics),
        );
        self.layers.push(Arc::new(layer));
    }

    /// Adds a shared layer inside those added before.
    pub fn push_shared(&mut self, layer: Arc<dyn Layer>) {
        #[cfg(feature = "metrics")]
        self.metrics.push(None);
        self.layers.push(layer);
    }

    /// `self` with `layer` added inside the others.
    #[must_use]
    pub fn with(mut self, layer: impl Layer) -> Self {
        self.push(layer);
        self
    }

    /// How many layers there are.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// These layers, then `inner`'s inside them.
    pub(crate) fn then(&self, inner: &Layers) -> Arc<[Arc<dyn Layer>]> {
        self.layers.iter().chain(&inner.layers).cloned().collect()
    }

    /// The instruments of the only layer of these and `inner`'s together, if it is a
    /// [`MetricsLayer`].
    #[cfg(feature = "metrics")]
    pub(crate) fn only_metrics(&self, inner: &Layers) -> Option<Metrics> {
        let mut all = self.metrics.iter().chain(&inner.metrics);
        match (all.next(), all.next()) {
            (Some(only), None) => only.clone(),
            _ => None,
        }
    }
}

impl std::fmt::Debug for Layers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Layers({})", self.layers.len())
    }
}

/// Whether `from`'s server has `target` in its own registry.
pub(crate) fn registered_in(from: &crate::session::Session, target: Option<&Target>) -> Registered {
    let Some(target) = target else {
        return Registered::No;
    };
    let catalogue = &from.server.catalogue;
    if !catalogue.answers {
        return Registered::Unknown;
    }
    let registry = catalogue.read();
    let found = match target {
        Target::Tool(name) => registry.tools.contains_key(name),
        Target::Prompt(name) => registry.prompts.contains_key(name),
        Target::Resource(uri) => registry.resources.contains_key(uri),
    };
    if found {
        return Registered::Yes;
    }
    let Target::Resource(uri) = target else {
        return Registered::No;
    };
    registry
        .templates
        .iter()
        .find(|t| t.parsed.matches(uri).is_some())
        .map_or(Registered::No, |t| {
            Registered::Template(t.template.uri_template.clone())
        })
}

/// A request as a layer can still see it after passing it on: its target if a layer read
/// it or the server noted it while parsing the params (so a layer that looks only at the
/// answer, such as the metrics layer, costs no parse of its own). The server notes the
/// target only for requests some layer keeps a `Seen` of.
pub struct Seen {
    noted: Noted,
}

impl std::fmt::Debug for Seen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Seen")
            .field("target", &self.target())
            .finish_non_exhaustive()
    }
}

impl Seen {
    /// The target, if it is known by now (`None` too when the params did not parse).
    pub fn target(&self) -> Option<&Target> {
        self.noted.target.get().and_then(Option::as_ref)
    }

    /// Whether the server's own registry has [`Seen::target`] ([`McpRequest::registered`]).
    pub fn registered(&self) -> Registered {
        registered_in(&self.noted.from, self.target())
    }
}

/// What [`McpRequest::registered`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Registered {
    /// Registered by its name (a tool, a prompt) or URI (a resource).
    Yes,
    /// A resource served by the template with this `uriTemplate`.
    Template(String),
    /// Not registered (or the request names nothing).
    No,
    /// The server answers from a [`crate::ServerHandler`], which alone knows.
    Unknown,
}

/// What a request names: the tool of `tools/call`, the prompt of `prompts/get`, the resource
/// of `resources/read`, `resources/subscribe` and `resources/unsubscribe`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A tool's name.
    Tool(String),
    /// A prompt's name.
    Prompt(String),
    /// A resource's URI.
    Resource(String),
}

impl Target {
    /// The name or URI.
    pub fn name(&self) -> &str {
        match self {
            Target::Tool(s) | Target::Prompt(s) | Target::Resource(s) => s,
        }
    }
}

/// One request on its way to a handler, as layers see it.
pub struct McpRequest {
    request: Request,
    /// A self-describing (2026-07-28) request, not one of its session's era.
    modern: bool,
    /// The connection it came on, and the target: read on first use by a layer, or noted
    /// by the server when it parses the params (if a layer keeps a [`Seen`]).
    noted: Noted,
}

/// Where a request came from, and its target once known: shared by the request and what
/// layers [`Seen`] of it; the server's parse of the params borrows it to note the target
/// while a `Seen` of it is kept.
pub(crate) struct Shared {
    /// The connection it came on: its server, principal and transport session.
    pub(crate) from: Arc<crate::session::Session>,
    pub(crate) target: OnceLock<Option<Target>>,
}

/// A request's [`Shared`] part.
pub(crate) type Noted = Arc<Shared>;

fn noted(from: Arc<crate::session::Session>) -> Noted {
    Arc::new(Shared {
        from,
        target: OnceLock::new(),
    })
}

impl std::fmt::Debug for McpRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the params: they may hold secrets.
        f.debug_struct("McpRequest")
            .field("id", &self.request.id)
            .field("method", &self.request.method)
            .field("principal", &self.principal())
            .finish_non_exhaustive()
    }
}

impl McpRequest {
    pub(crate) fn new(request: Request, from: Arc<crate::session::Session>, modern: bool) -> Self {
        Self {
            request,
            modern,
            noted: noted(from),
        }
    }

    /// The method, e.g. `tools/call`.
    pub fn method(&self) -> &str {
        &self.request.method
    }

    /// The JSON-RPC id.
    pub fn id(&self) -> &RequestId {
        &self.request.id
    }

    /// The params as sent (or as a layer before rewrote them).
    pub fn params(&self) -> Option<&oxmcp_jsonrpc::RawValue> {
        self.request.params.as_deref()
    }

    /// The params read as `T`.
    ///
    /// # Errors
    /// -32602 when they do not read as `T`.
    pub fn params_as<T: serde::de::DeserializeOwned>(
        &self,
    ) -> Result<T, oxmcp_jsonrpc::ErrorObject> {
        oxmcp_jsonrpc::parse_params(self.params())
    }

    /// Replaces the params the handler (and the layers inside this one) will see.
    pub fn set_params(&mut self, params: Option<RawJson>) {
        self.request.params = params;
        self.noted = noted(self.noted.from.clone());
    }

    /// Who the transport verified the sender to be (the issuer-qualified subject of a
    /// bearer token, say); `None`: nobody verified.
    pub fn principal(&self) -> Option<&str> {
        self.noted.from.principal.as_deref()
    }

    /// The transport's session (Streamable HTTP's `Mcp-Session-Id`), if it has one.
    pub fn session(&self) -> Option<&str> {
        self.noted.from.transport_session()
    }

    /// The protocol version the request is served in (`2026-07-28` for a self-describing
    /// request, else the version its session negotiated).
    pub fn protocol_version(&self) -> ProtocolVersion {
        if self.modern {
            ProtocolVersion::V2026_07_28
        } else {
            self.noted.from.version()
        }
    }

    /// The tool, prompt or resource the request names, read from its params on first use.
    pub fn target(&self) -> Option<&Target> {
        self.noted
            .target
            .get_or_init(|| target_of(&self.request.method, self.params()))
            .as_ref()
    }

    /// Whether the server's own registry has the [`McpRequest::target`]: the tool or prompt
    /// of that name, the resource of that URI, or a template matching it.
    pub fn registered(&self) -> Registered {
        registered_in(&self.noted.from, self.target())
    }

    /// What layers can still read of the request after passing it on ([`Seen`]).
    pub fn seen(&self) -> Seen {
        Seen {
            noted: self.noted.clone(),
        }
    }

    /// The request, and where the server notes its target when it parses the params (if a
    /// [`Seen`] of it is kept).
    pub(crate) fn into_parts(self) -> (Request, Noted) {
        (self.request, self.noted)
    }
}

/// The name or URI a request's params carry, for the methods that name one.
fn target_of(method: &str, params: Option<&oxmcp_jsonrpc::RawValue>) -> Option<Target> {
    /// Borrowed where the JSON has no escapes: no allocation but the one kept.
    #[derive(serde::Deserialize)]
    struct Named<'a> {
        #[serde(borrow)]
        name: Option<std::borrow::Cow<'a, str>>,
        #[serde(borrow)]
        uri: Option<std::borrow::Cow<'a, str>>,
    }
    let kind = match method {
        "tools/call" => Target::Tool,
        "prompts/get" => Target::Prompt,
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => Target::Resource,
        _ => return None,
    };
    let named: Named<'_> = serde_json::from_str(params?.get()).ok()?;
    let found = match method {
        "tools/call" | "prompts/get" => named.name,
        _ => named.uri,
    };
    found.map(|n| kind(n.into_owned()))
}

/// The layers inside the current one, then the handler.
pub struct Next {
    /// The server's layers, from `index` on (`None`: none left, the handler is next).
    layers: Option<Arc<[Arc<dyn Layer>]>>,
    index: usize,
    tail: crate::session::Tail,
}

impl std::fmt::Debug for Next {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let left = self.layers.as_ref().map_or(0, |l| l.len() - self.index);
        write!(f, "Next({left} layers left)")
    }
}

impl Next {
    pub(crate) fn new(layers: Arc<[Arc<dyn Layer>]>, tail: crate::session::Tail) -> Self {
        Self {
            layers: Some(layers),
            index: 0,
            tail,
        }
    }

    /// Passes `req` to the next layer, or to the handler after the last.
    pub fn run(self, req: McpRequest) -> BoxFuture<'static, HandlerResult> {
        let Next {
            layers,
            index,
            tail,
        } = self;
        let Some(layer) = layers.as_ref().and_then(|l| l.get(index)) else {
            let (req, noted) = req.into_parts();
            return tail.run(req, noted);
        };
        // The layer is borrowed from the list this call holds; the last one's `Next` needs
        // no list (one count fewer to take and give back per request).
        let rest = layers
            .as_ref()
            .filter(|l| index + 1 < l.len())
            .map(Arc::clone);
        let next = Next {
            layers: rest,
            index: index + 1,
            tail,
        };
        layer.call(req, next)
    }
}

/// How a request ended, for layers that observe answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A result.
    Ok,
    /// A `tools/call` result with `isError: true` (the tool ran and failed).
    ToolError,
    /// A JSON-RPC error with this code.
    Error(i32),
}

impl Outcome {
    /// The outcome of `answer`.
    pub fn of(answer: &HandlerResult) -> Outcome {
        match answer {
            Ok(raw) if is_tool_error(raw.get()) => Outcome::ToolError,
            Ok(_) => Outcome::Ok,
            Err(e) => Outcome::Error(e.code.0),
        }
    }

    /// The outcome of `answer` to a request of `method`: [`Outcome::of`] for the methods
    /// whose result may be a tool's (`tools/call`, and `tasks/result` of a task that ran
    /// one), else a result is [`Outcome::Ok`] without a look at it (a large resource is
    /// not searched for a flag it cannot carry).
    pub(crate) fn of_answer_to(method: &str, answer: &HandlerResult) -> Outcome {
        match answer {
            Ok(_) if !matches!(method, "tools/call" | "tasks/result") => Outcome::Ok,
            _ => Outcome::of(answer),
        }
    }
}

/// Whether a result's JSON says `"isError": true` at its top level (a cheap look: the flag
/// is searched for, then confirmed by reading the result).
fn is_tool_error(json: &str) -> bool {
    static FLAG: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new("\"isError\""));
    if FLAG.find(json.as_bytes()).is_none() {
        return false;
    }
    #[derive(serde::Deserialize)]
    struct Flag {
        #[serde(rename = "isError", default)]
        is_error: bool,
    }
    serde_json::from_str::<Flag>(json).is_ok_and(|f| f.is_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_tool_results_are_searched_for_a_tool_error() {
        let flagged: HandlerResult = Ok(oxmcp_jsonrpc::RawValue::from_string(
            r#"{"content":[],"isError":true}"#.to_owned(),
        )
        .unwrap());
        assert_eq!(
            Outcome::of_answer_to("tools/call", &flagged),
            Outcome::ToolError
        );
        assert_eq!(
            Outcome::of_answer_to("tasks/result", &flagged),
            Outcome::ToolError
        );
        assert_eq!(
            Outcome::of_answer_to("resources/read", &flagged),
            Outcome::Ok
        );
        let failed: HandlerResult = Err(oxmcp_jsonrpc::ErrorObject::method_not_found("x"));
        assert_eq!(
            Outcome::of_answer_to("x/y", &failed),
            Outcome::Error(-32601)
        );
    }

    #[test]
    fn targets_are_read_from_the_params() {
        let raw = |s: &str| oxmcp_jsonrpc::RawValue::from_string(s.to_owned()).unwrap();
        let tool = raw(r#"{"name":"echo","arguments":{"name":"x"}}"#);
        assert_eq!(
            target_of("tools/call", Some(&tool)),
            Some(Target::Tool("echo".into()))
        );
        let read = raw(r#"{"uri":"file:///a"}"#);
        assert_eq!(
            target_of("resources/read", Some(&read)),
            Some(Target::Resource("file:///a".into()))
        );
        assert_eq!(target_of("tools/list", Some(&tool)), None);
        assert_eq!(target_of("tools/call", Some(&raw("[1]"))), None);
    }

    #[test]
    fn tool_errors_are_told_from_results() {
        assert!(is_tool_error(r#"{"content":[],"isError":true}"#));
        assert!(!is_tool_error(r#"{"content":[],"isError":false}"#));
        assert!(!is_tool_error(
            r#"{"content":[{"type":"text","text":"\"isError\": true"}]}"#
        ));
    }
}
