//! [`MetricsLayer`] and [`Metrics`] (feature `metrics`): per-operation duration histograms
//! with bounded labels, requests in flight, and gauges or counters sampled at scrape time,
//! rendered in the Prometheus text format; with the `otel` feature and
//! [`Metrics::with_opentelemetry`] the same operation histogram is recorded as an
//! OpenTelemetry instrument too.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use oxmcp_engine::HandlerResult;
use parking_lot::{Mutex, RwLock};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::registry::Registry;

use super::{Layer, McpRequest, Next, Outcome, Registered, Target};
use durations::Durations;
use memo::{Memo, Series};

mod durations;
mod memo;

/// Distinct tool, prompt or resource names each given a series of their own; the calls of
/// others are labelled `_other`.
pub const MAX_NAMES: usize = 1_000;

/// The label value of a name past [`MAX_NAMES`] or never answered with a result.
const OTHER: &str = "_other";

/// Bucket bounds in seconds: OpenTelemetry's MCP recommendation, with finer ones below
/// 10 ms for in-process tools.
const BUCKETS: [f64; 18] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0,
    120.0, 300.0,
];

/// The labels of an operation, named after the OpenTelemetry MCP semantic conventions
/// (`mcp.method.name`, `gen_ai.tool.name`, `gen_ai.prompt.name`, `mcp.resource.uri`,
/// `error.type`) with dots as underscores. Empty labels are absent to Prometheus.
/// Built without allocating for a call that succeeded: the method's name is static for
/// MCP's methods, and a target's is shared with the set of known names.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Operation {
    mcp_method_name: Cow<'static, str>,
    gen_ai_tool_name: Option<Arc<str>>,
    gen_ai_prompt_name: Option<Arc<str>>,
    mcp_resource_uri: Option<Arc<str>>,
    error_type: Cow<'static, str>,
}

type Histograms = Family<Operation, Durations>;

/// A server's instruments. Cheap to clone; the clones share them.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Mutex<Registry>,
    operations: Histograms,
    in_flight: Gauge,
    /// Names that got a result once (so they exist), per kind: tools, prompts, resources.
    known: [RwLock<HashSet<Arc<str>>>; 3],
    /// `_other`, shared.
    other: Arc<str>,
    /// The series of calls answered before, found again without the label work.
    memo: Memo,
    /// The OpenTelemetry instrument, when asked for ([`Metrics::with_opentelemetry`]).
    #[cfg(feature = "otel")]
    otel: Option<opentelemetry::metrics::Histogram<f64>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Empty instruments: `mcp_server_operation_duration_seconds` and
    /// `mcp_server_requests_in_flight`.
    pub fn new() -> Self {
        let operations: Histograms = Family::default();
        let in_flight = Gauge::default();
        let mut registry = Registry::default();
        registry.register_with_unit(
            "mcp_server_operation_duration",
            "Time to answer a request, by method, tool, prompt or resource, and error type \
             (a JSON-RPC error code, or tool_error for a tool's result with isError)",
            prometheus_client::registry::Unit::Seconds,
            operations.clone(),
        );
        registry.register(
            "mcp_server_requests_in_flight",
            "Requests being answered",
            in_flight.clone(),
        );
        Self {
            inner: Arc::new(Inner {
                registry: Mutex::new(registry),
                operations,
                in_flight,
                known: Default::default(),
                other: Arc::from(OTHER),
                memo: Memo::default(),
                #[cfg(feature = "otel")]
                otel: None,
            }),
        }
    }

    /// These instruments, the operation histogram recorded as the OpenTelemetry instrument
    /// `mcp.server.operation.duration` (seconds, the same attributes) too, from the global
    /// meter provider: install yours before calling this. Call it before cloning or making
    /// the layer.
    #[cfg(feature = "otel")]
    #[must_use]
    pub fn with_opentelemetry(self) -> Self {
        let histogram = opentelemetry::global::meter("oxmcp")
            .f64_histogram("mcp.server.operation.duration")
            .with_unit("s")
            .with_description("Time to answer an MCP request")
            .with_boundaries(BUCKETS.to_vec())
            .build();
        let inner = Arc::try_unwrap(self.inner).map(|mut inner| {
            inner.otel = Some(histogram.clone());
            inner
        });
        match inner {
            Ok(inner) => Self {
                inner: Arc::new(inner),
            },
            // Shared already: those clones stay without it.
            Err(shared) => {
                tracing::warn!("Metrics::with_opentelemetry on shared instruments: ignored");
                Self { inner: shared }
            }
        }
    }

    /// The layer that records each request in these instruments.
    pub fn layer(&self) -> MetricsLayer {
        MetricsLayer {
            metrics: self.clone(),
        }
    }

    /// Adds a gauge read from `value` at each scrape (`labels`: one label's name, and the
    /// series `value` returns as (label value, number) pairs; `None`: one series, from the
    /// first pair).
    pub fn gauge_fn(
        &self,
        name: &str,
        help: &str,
        label: Option<&'static str>,
        value: impl Fn() -> Vec<(String, f64)> + Send + Sync + 'static,
    ) {
        self.sampled(name, help, label, Kind::Gauge, value);
    }

    /// Adds a counter (monotonic total; `name` without `_total`) read at each scrape, as
    /// [`Metrics::gauge_fn`].
    pub fn counter_fn(
        &self,
        name: &str,
        help: &str,
        label: Option<&'static str>,
        value: impl Fn() -> Vec<(String, f64)> + Send + Sync + 'static,
    ) {
        self.sampled(name, help, label, Kind::Counter, value);
    }

    fn sampled(
        &self,
        name: &str,
        help: &str,
        label: Option<&'static str>,
        kind: Kind,
        value: impl Fn() -> Vec<(String, f64)> + Send + Sync + 'static,
    ) {
        self.inner
            .registry
            .lock()
            .register_collector(Box::new(Sampled {
                name: name.to_owned(),
                help: help.to_owned(),
                label,
                kind,
                value: Box::new(value),
            }));
    }

    /// Everything, in the Prometheus text format (OpenMetrics 1.0, served as
    /// [`Metrics::CONTENT_TYPE`]).
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(16 * 1024);
        // Writing to a String cannot fail; an encoder error would be a bad metric name.
        if let Err(e) =
            prometheus_client::encoding::text::encode(&mut out, &self.inner.registry.lock())
        {
            tracing::warn!("metrics could not be rendered: {e}");
        }
        out
    }

    /// The content type of [`Metrics::render`]'s text.
    pub const CONTENT_TYPE: &'static str =
        "application/openmetrics-text; version=1.0.0; charset=utf-8";

    /// The label value of `target`: what the registry names it (its name, or a resource's
    /// template), or for a server answering from a handler its name once a call of it had a
    /// result; at most [`MAX_NAMES`] per kind, else `_other`. So unknown names add no series.
    fn label_of(&self, target: &Target, registered: &Registered, answered: bool) -> Arc<str> {
        let (i, name) = match target {
            Target::Tool(n) => (0, n),
            Target::Prompt(n) => (1, n),
            Target::Resource(n) => (2, n),
        };
        match registered {
            Registered::Yes => self.admit(i, name),
            Registered::Template(template) => self.admit(i, template),
            Registered::No => self.inner.other.clone(),
            Registered::Unknown if answered => self.admit(i, name),
            Registered::Unknown => match self.inner.known[i].read().get(name.as_str()) {
                Some(known) => known.clone(),
                None => self.inner.other.clone(),
            },
        }
    }

    /// `label`'s shared name if it has a series or may have one more, else `_other`.
    fn admit(&self, kind: usize, label: &str) -> Arc<str> {
        let known = &self.inner.known[kind];
        if let Some(known) = known.read().get(label) {
            return known.clone();
        }
        let mut known = known.write();
        if known.len() < MAX_NAMES {
            let label: Arc<str> = Arc::from(label);
            known.insert(label.clone());
            return label;
        }
        self.inner.other.clone()
    }

    /// Records a request that ended with `outcome` after `ns` nanoseconds: from the memo when a
    /// call of the same method, target and outcome had a series of its own before, else
    /// through [`Metrics::operation`] (and then remembered, if it may be).
    fn record(
        &self,
        method: Method,
        target: Option<&Target>,
        registered: impl FnOnce() -> Registered,
        outcome: Outcome,
        ns: u64,
    ) {
        let slot = Memo::slot(method.index, outcome);
        if let Some(slot) = slot
            && self
                .inner
                .memo
                .observe(slot, target, |series| self.observe(series, ns))
        {
            return;
        }
        let op = self.operation(method.label, target.map(|t| (t, registered())), outcome);
        let series = Series {
            histogram: self.inner.operations.get_or_create(&op).clone(),
            op,
        };
        self.observe(&series, ns);
        if let Some(slot) = slot {
            self.inner.memo.keep(slot, target, series);
        }
    }

    /// One observation of `series`, `ns` nanoseconds long.
    fn observe(&self, series: &Series, ns: u64) {
        series.histogram.observe(ns);
        #[cfg(feature = "otel")]
        self.otel_record(&series.op, ns as f64 / 1e9);
    }

    /// The labels of a request of `method` that named `target` (with what the registry
    /// says of it) and ended with `outcome`.
    fn operation(
        &self,
        method: Cow<'static, str>,
        target: Option<(&Target, Registered)>,
        outcome: Outcome,
    ) -> Operation {
        let answered = !matches!(outcome, Outcome::Error(_));
        let mut op = Operation {
            mcp_method_name: method,
            gen_ai_tool_name: None,
            gen_ai_prompt_name: None,
            mcp_resource_uri: None,
            error_type: match outcome {
                Outcome::Ok => Cow::Borrowed(""),
                Outcome::ToolError => Cow::Borrowed("tool_error"),
                Outcome::Error(code) if (-32768..=-32000).contains(&code) => {
                    Cow::Owned(code.to_string())
                }
                Outcome::Error(_) => Cow::Borrowed(OTHER),
            },
        };
        if let Some((target, registered)) = target {
            let label = Some(self.label_of(target, &registered, answered));
            match target {
                Target::Tool(_) => op.gen_ai_tool_name = label,
                Target::Prompt(_) => op.gen_ai_prompt_name = label,
                Target::Resource(_) => op.mcp_resource_uri = label,
            }
        }
        op
    }

    #[cfg(feature = "otel")]
    fn otel_record(&self, op: &Operation, seconds: f64) {
        use opentelemetry::KeyValue;
        let Some(otel) = &self.inner.otel else {
            return;
        };
        let mut attrs = vec![KeyValue::new(
            "mcp.method.name",
            op.mcp_method_name.to_string(),
        )];
        for (key, value) in [
            ("gen_ai.tool.name", &op.gen_ai_tool_name),
            ("gen_ai.prompt.name", &op.gen_ai_prompt_name),
            ("mcp.resource.uri", &op.mcp_resource_uri),
        ] {
            if let Some(value) = value {
                attrs.push(KeyValue::new(key, value.to_string()));
            }
        }
        if !op.error_type.is_empty() {
            attrs.push(KeyValue::new("error.type", op.error_type.to_string()));
        }
        otel.record(seconds, &attrs);
    }
}

/// MCP's methods, labelled without an allocation.
const METHODS: [&str; 20] = [
    "tools/call",
    "tools/list",
    "resources/read",
    "resources/list",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/get",
    "prompts/list",
    "completion/complete",
    "logging/setLevel",
    "subscriptions/listen",
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
    "tasks/update",
    "skills/list",
    "skills/get",
    "ping",
];

/// A request's method as the layer labels it.
struct Method {
    /// Its place in [`METHODS`], if it is one of MCP's.
    index: Option<usize>,
    label: Cow<'static, str>,
}

/// The method's label: itself for MCP's methods and `x/y`-shaped custom ones up to 64 bytes,
/// `_other` otherwise (a server answers unknown methods with -32601, which is counted, not
/// each name apart).
fn method_label(method: &str) -> Method {
    if let Some(index) = METHODS.iter().position(|m| *m == method) {
        return Method {
            index: Some(index),
            label: Cow::Borrowed(METHODS[index]),
        };
    }
    let plausible = method.len() <= 64
        && method
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'_' | b'.' | b'-'));
    Method {
        index: None,
        label: if plausible {
            Cow::Owned(method.to_owned())
        } else {
            Cow::Borrowed(OTHER)
        },
    }
}

/// Records each request in [`Metrics`]: its duration by method, target and outcome, and
/// the requests in flight. Made by [`Metrics::layer`].
#[derive(Debug, Clone)]
pub struct MetricsLayer {
    metrics: Metrics,
}

impl Layer for MetricsLayer {
    fn call(&self, req: McpRequest, next: Next) -> BoxFuture<'static, HandlerResult> {
        let timed = self.metrics.start(req.method());
        let seen = req.seen();
        let answer = next.run(req);
        Box::pin(async move {
            let answer = answer.await;
            // The target as the server read it (or a layer before): no parse of our own.
            timed.end(&answer, seen.target(), || seen.registered());
            answer
        })
    }
}

impl MetricsLayer {
    /// Its instruments.
    pub(crate) fn metrics(&self) -> Metrics {
        self.metrics.clone()
    }
}

impl Metrics {
    /// What [`MetricsLayer`] does, for a server whose only layer it is: the request goes
    /// straight to `session`'s method table, which notes its target here, and is recorded
    /// as the layer records it, without the request's shared part, the `Next` and the
    /// layer's call that a chain of layers needs.
    pub(crate) fn around(
        &self,
        session: &Arc<crate::session::Session>,
        req: oxmcp_jsonrpc::Request,
        rc: oxmcp_engine::RequestContext,
        modern: Option<Arc<crate::modern::ModernMeta>>,
    ) -> BoxFuture<'static, HandlerResult> {
        let timed = self.start(&req.method);
        let noted = std::cell::Cell::new(None);
        let answer = session.table(req, rc, modern, Some(crate::session::Noting::Local(&noted)));
        let target = noted.into_inner();
        // Whether the registry has the target is asked only when the memo does not know it.
        let from = target.is_some().then(|| session.clone());
        Box::pin(async move {
            let answer = answer.await;
            timed.end(&answer, target.as_ref(), || match &from {
                Some(from) => super::registered_in(from, target.as_ref()),
                None => Registered::No,
            });
            answer
        })
    }

    /// Starts timing a request of `method`, and counts it in flight.
    fn start(&self, method: &str) -> Timed {
        let method = method_label(method);
        let started = Instant::now();
        self.inner.in_flight.inc();
        Timed {
            method,
            started,
            in_flight: InFlight(self.clone()),
        }
    }
}

/// A request being answered: what [`Timed::end`] records once it is.
struct Timed {
    method: Method,
    started: Instant,
    in_flight: InFlight,
}

impl Timed {
    /// Records the request that ended with `answer`, naming `target` (of which `registered`
    /// says whether the registry has it), and takes it off the in-flight gauge.
    fn end(
        self,
        answer: &HandlerResult,
        target: Option<&Target>,
        registered: impl FnOnce() -> Registered,
    ) {
        // Saturates past 584 years.
        let ns = u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let outcome = Outcome::of_answer_to(&self.method.label, answer);
        self.in_flight
            .0
            .record(self.method, target, registered, outcome, ns);
    }
}

/// Takes a request off the in-flight gauge when it ends, answered or dropped.
struct InFlight(Metrics);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.inner.in_flight.dec();
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Gauge,
    Counter,
}

/// A metric read at scrape time.
struct Sampled {
    name: String,
    help: String,
    label: Option<&'static str>,
    kind: Kind,
    value: Box<dyn Fn() -> Vec<(String, f64)> + Send + Sync>,
}

impl std::fmt::Debug for Sampled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampled").field("name", &self.name).finish()
    }
}

impl Sampled {
    fn encode_value(
        &self,
        value: f64,
        encoder: prometheus_client::encoding::MetricEncoder<'_>,
    ) -> Result<(), std::fmt::Error> {
        match self.kind {
            Kind::Gauge => ConstGauge::new(value).encode(encoder),
            Kind::Counter => ConstCounter::new(value.max(0.0)).encode(encoder),
        }
    }
}

impl Collector for Sampled {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let values = (self.value)();
        let metric_type = match self.kind {
            Kind::Gauge => ConstGauge::new(0.0f64).metric_type(),
            Kind::Counter => ConstCounter::new(0.0f64).metric_type(),
        };
        let mut family = encoder.encode_descriptor(&self.name, &self.help, None, metric_type)?;
        match self.label {
            None => {
                if let Some((_, value)) = values.first() {
                    self.encode_value(*value, family)?;
                }
            }
            Some(key) => {
                for (label, value) in values.iter().take(MAX_NAMES) {
                    let labels = [(key, label.as_str())];
                    let encoder = family.encode_family(&labels)?;
                    self.encode_value(*value, encoder)?;
                }
            }
        }
        Ok(())
    }
}
