//! What the engine drives: a request's era (a 2026-07-28 request carries its version in
//! `_meta`), the legacy lifecycle, and the multi round-trip (MRTR) rounds of a 2026-07-28
//! request around the method table.

use std::sync::Arc;

use futures::future::BoxFuture;
use oxmcp_engine::{HandlerResult, Peer, RequestContext, Service};
use oxmcp_jsonrpc::{ErrorObject, Notification, Request};
use oxmcp_types::methods::{
    CallTool, Discover, GetPrompt, Initialize, Ping, ReadResource, Request as _,
};
use oxmcp_types::{EmptyResult, ProtocolVersion, RequestMeta};

use super::Session;
use super::lifecycle::not_initialized;
use super::reply::{fail, ready};
use crate::echo::echo;
use crate::modern::{self, ModernMeta};
use crate::mrtr::Binding;

/// The `Arc<Session>` wrapper the engine drives (routing needs an owned handle to the session).
pub(crate) struct SessionService(pub(crate) Arc<Session>);

impl Service for SessionService {
    fn call(&self, req: Request, rc: RequestContext) -> BoxFuture<'static, HandlerResult> {
        let request = self.0.request_meta(&req, &rc);
        #[cfg(feature = "otel")]
        if let Some(trace) = trace_of(&req, request.as_deref()) {
            use tracing::Instrument as _;
            let span = crate::otel::request_span(&req.method, &trace);
            return Box::pin(self.answer(req, rc, request).instrument(span));
        }
        self.answer(req, rc, request)
    }

    fn notify(&self, n: Notification, peer: &Peer) {
        self.0.on_notification(&n, peer);
    }

    fn batch_allowed(&self) -> bool {
        self.0.batches_allowed()
    }
}

/// The W3C trace context in a request's `_meta`, if any: read from its [`RequestMeta`] when
/// it has one, else (a legacy request) from its params after a cheap look.
#[cfg(feature = "otel")]
fn trace_of(req: &Request, request: Option<&RequestMeta>) -> Option<oxmcp_types::TraceContext> {
    if let Some(request) = request {
        return oxmcp_types::TraceContext::from_meta(request.meta()?);
    }
    /// Built once: `str::contains` builds a searcher for each request.
    static TRACEPARENT: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(oxmcp_types::trace::TRACEPARENT));
    let raw = req.params.as_deref()?;
    TRACEPARENT.find(raw.get().as_bytes())?;
    let v: serde_json::Value = serde_json::from_str(raw.get()).ok()?;
    oxmcp_types::TraceContext::from_meta(v.get("_meta")?.as_object()?)
}

impl SessionService {
    fn answer(
        &self,
        req: Request,
        rc: RequestContext,
        request: Option<Arc<RequestMeta>>,
    ) -> BoxFuture<'static, HandlerResult> {
        let session = &self.0;
        let era = match session.era_of(&req, request) {
            Ok(era) => era,
            Err(e) => return fail(e),
        };
        match era {
            Some(meta) => match req.method.as_str() {
                Discover::METHOD => ready(&modern::discover(&session.server)),
                // Removed in 2026-07-28.
                Ping::METHOD | Initialize::METHOD => {
                    fail(ErrorObject::method_not_found(&req.method))
                }
                _ => session.modern_round(req, rc, meta),
            },
            None => match req.method.as_str() {
                Ping::METHOD => ready(&EmptyResult::default()),
                Initialize::METHOD => {
                    let answer = session.initialize(&req);
                    fitted(session.version(), Initialize::METHOD.to_owned(), answer)
                }
                _ if session.before_initialize() => not_initialized(&req),
                _ => {
                    // An older client gets results it can read.
                    let version = session.version();
                    let method = super::fit::needed(version).then(|| req.method.clone());
                    let answer = session.route(req, rc, None);
                    match method {
                        Some(method) => fitted(version, method, answer),
                        None => answer,
                    }
                }
            },
        }
    }
}

/// `answer` fitted to what a client of `version` reads (see `fit`).
fn fitted(
    version: ProtocolVersion,
    method: String,
    answer: BoxFuture<'static, HandlerResult>,
) -> BoxFuture<'static, HandlerResult> {
    if !super::fit::needed(version) {
        return answer;
    }
    Box::pin(async move { super::fit::fit(version, &method, answer.await) })
}

impl Session {
    /// The request's [`RequestMeta`]: the one its transport read already (Streamable HTTP
    /// checks its headers against it), else read here, once, when the request may be a
    /// 2026-07-28 one and the server speaks that revision. `None`: a legacy request.
    fn request_meta(&self, req: &Request, rc: &RequestContext) -> Option<Arc<RequestMeta>> {
        if !self.server.about.config.modern {
            return None;
        }
        let handed = rc
            .transport
            .as_deref()
            .and_then(|t| t.downcast_ref::<http::Extensions>())
            .and_then(|e| e.get::<Arc<RequestMeta>>());
        if let Some(request) = handed {
            return Some(request.clone());
        }
        let params = req.params.as_deref();
        modern::may_be_modern(params).then(|| Arc::new(RequestMeta::parse(params)))
    }

    /// The era of a request: 2026-07-28 when its `_meta` says so (and the server speaks
    /// it), else legacy. A modern-only server refuses legacy requests as the new revision
    /// refuses an unknown version (`initialize` as an unknown method).
    fn era_of(
        &self,
        req: &Request,
        request: Option<Arc<RequestMeta>>,
    ) -> Result<Option<Arc<ModernMeta>>, ErrorObject> {
        let config = &self.server.about.config;
        let era = match request.map(modern::detect) {
            Some(Ok(Some(meta))) => Some(Arc::new(meta)),
            None | Some(Ok(None)) => None,
            Some(Err(e)) if req.method != Initialize::METHOD => return Err(e),
            Some(Err(_)) => None,
        };
        if era.is_none() && !config.legacy {
            return Err(if req.method == Initialize::METHOD {
                ErrorObject::method_not_found(&echo(&req.method))
            } else {
                modern::unsupported_version_error(
                    "",
                    Some(&[ProtocolVersion::V2026_07_28.as_str()]),
                )
            });
        }
        Ok(era)
    }

    /// How `requestState` is signed and checked for this session's client.
    fn binding(&self) -> Binding<'_> {
        Binding {
            key: &self.server.about.config.request_state_key,
            principal: self.principal.as_deref(),
            ttl: self.server.about.config.request_state_ttl,
        }
    }

    /// One round of a 2026-07-28 request: the answers to earlier input requests (from a
    /// verified `requestState`) are handed to the handler; if it asks for more, the answer
    /// is an `input_required` result with a new signed `requestState`.
    fn modern_round(
        self: &Arc<Self>,
        req: Request,
        rc: RequestContext,
        meta: Arc<ModernMeta>,
    ) -> BoxFuture<'static, HandlerResult> {
        let method = req.method.clone();
        match crate::mrtr::answers_of(&self.binding(), &method, &meta.request) {
            Ok(a) => *meta.mrtr.answers.lock() = a,
            Err(e) => return fail(e),
        }
        let session = self.clone();
        let fut = self.route(req, rc, Some(meta.clone()));
        Box::pin(async move {
            let result = fut.await;
            if let Some(e) = meta.mrtr.take_fatal() {
                return Err(e);
            }
            let server = &session.server;
            let pending = meta.mrtr.take_pending();
            let rounds = matches!(
                method.as_str(),
                CallTool::METHOD | GetPrompt::METHOD | ReadResource::METHOD
            );
            if !pending.is_empty() && rounds {
                let state =
                    session
                        .binding()
                        .sign(&method, meta.request.subject(), &meta.mrtr.answers());
                let interim = oxmcp_types::InputRequiredResult::default()
                    .with_result_type(Some(oxmcp_types::ResultType::InputRequired))
                    .with_input_requests(Some(pending))
                    .with_request_state(Some(state));
                let finish = modern::Finish::new(server.clone(), &method);
                return modern::encode(Some(&finish), interim);
            }
            // Its fields set by the method table (see `Call::finish`).
            result
        })
    }
}
