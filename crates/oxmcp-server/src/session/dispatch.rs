//! Which handler answers a request: the method table, by family (tools, resources and
//! prompts in their own modules; completion, logging and `subscriptions/listen` here).

use std::sync::Arc;

use futures::future::BoxFuture;
use oxmcp_engine::{HandlerResult, RequestContext};
use oxmcp_jsonrpc::{ErrorObject, RawValue, Request, parse_params};
use oxmcp_types::methods::{
    CallTool, Complete, GetPrompt, ListPrompts, ListResourceTemplates, ListResources, ListTools,
    Listen, ReadResource, Request as _, SetLevel, Subscribe, Unsubscribe,
};
use oxmcp_types::{
    CompleteParams, EmptyResult, JsonObject, ListenParams, SetLevelParams, progress_token,
};

use super::Session;
use super::reply::{fail, ready};
use crate::context::Ctx;
use crate::dynamic::ServerHandler as _;
use crate::echo::echo;
use crate::layer::{McpRequest, Next};
use crate::modern::{self, Finish, ModernMeta};

/// What the last layer's [`Next`] hands the request to: the method table, with what it
/// needs besides the request.
pub(crate) struct Tail {
    rc: RequestContext,
    request_meta: Option<Arc<ModernMeta>>,
}

impl Tail {
    /// Routes `req` through the method table, telling `noted` its target once parsed if a
    /// layer kept a [`crate::layer::Seen`] of the request.
    pub(crate) fn run(
        self,
        req: Request,
        noted: crate::layer::Noted,
    ) -> BoxFuture<'static, HandlerResult> {
        // The table notes the target before it returns, so it borrows `noted` (and its
        // session) rather than holding a count of its own. When no layer kept a `Seen` of
        // the request, nobody can read the target any more: it is not noted.
        let watched = std::sync::Arc::strong_count(&noted) > 1;
        noted.from.table(
            req,
            self.rc,
            self.request_meta,
            watched.then_some(Noting::Shared(&noted.target)),
        )
    }
}

/// One request on its way to a handler: what its [`Ctx`] is made of. Lives only while the
/// method table picks and starts the handler: what the handler's future needs it takes out.
pub(super) struct Call<'a> {
    pub(super) session: Arc<Session>,
    pub(super) rc: RequestContext,
    pub(super) modern: Option<Arc<ModernMeta>>,
    /// The fields its 2026-07-28 result carries (`None`: a legacy request).
    pub(super) finish: Option<Finish>,
    /// Where the layers read the target the params name (`None`: no layers, or none that
    /// kept a [`crate::layer::Seen`] of the request, and no metrics recorded inline).
    pub(super) noted: Option<Noting<'a>>,
}

/// Where the method table notes the target of a request that is watched.
#[derive(Clone, Copy)]
pub(crate) enum Noting<'a> {
    /// The request's shared part, which layers' [`crate::layer::Seen`]s read (a layer may
    /// have read the target first).
    Shared(&'a std::sync::OnceLock<Option<crate::layer::Target>>),
    /// A cell of the caller's, which reads it once the table returns (metrics recorded
    /// inline).
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    Local(&'a std::cell::Cell<Option<crate::layer::Target>>),
}

impl Call<'_> {
    /// Tells the layers the target the params name, now that they are parsed.
    pub(super) fn note(&self, target: impl FnOnce() -> crate::layer::Target) {
        match self.noted {
            // Read already if a layer asked (`McpRequest::target`): then nothing to make.
            Some(Noting::Shared(noted)) => {
                noted.get_or_init(|| Some(target()));
            }
            Some(Noting::Local(noted)) => noted.set(Some(target())),
            None => {}
        }
    }

    /// The handler's context, with the request's `_meta`: a 2026-07-28 request's from its
    /// [`oxmcp_types::RequestMeta`] (read once), a legacy one's `meta` from its typed params
    /// (cloned only then).
    pub(super) fn ctx(self, meta: Option<&JsonObject>) -> Ctx {
        let meta = match &self.modern {
            Some(_) => None,
            None => meta.cloned(),
        };
        self.ctx_owned(meta)
    }

    /// [`Call::ctx`] with a legacy request's `_meta` moved in (ignored on 2026-07-28).
    pub(super) fn ctx_owned(self, meta: Option<JsonObject>) -> Ctx {
        let meta = if self.modern.is_some() { None } else { meta };
        let progress_token = match &self.modern {
            Some(m) => progress_token(m.request.meta()),
            None => progress_token(meta.as_ref()),
        };
        Ctx {
            rc: self.rc,
            session: self.session,
            progress_token,
            meta,
            modern: self.modern,
            inputs: Default::default(),
            task: None,
        }
    }
}

impl Session {
    /// Answers a request after the lifecycle checks: through the server's layers (if any),
    /// then the method table; when the only layer is a metrics layer, the request is recorded
    /// inline around the method table instead ([`crate::layer::Metrics::around`]).
    pub(super) fn route(
        self: &Arc<Self>,
        req: Request,
        rc: RequestContext,
        request_meta: Option<Arc<ModernMeta>>,
    ) -> BoxFuture<'static, HandlerResult> {
        let layers = &self.server.features.layers;
        if layers.is_empty() {
            return self.table(req, rc, request_meta, None);
        }
        #[cfg(feature = "metrics")]
        if let Some(metrics) = &self.server.features.only_metrics {
            return metrics.around(self, req, rc, request_meta);
        }
        let request = McpRequest::new(req, self.clone(), request_meta.is_some());
        let tail = Tail { rc, request_meta };
        Next::new(layers.clone(), tail).run(request)
    }

    /// The method table. A method this server does not serve (or not in this era) is
    /// -32601. The target the params name is noted in `noted`, if given.
    pub(crate) fn table(
        self: &Arc<Self>,
        req: Request,
        rc: RequestContext,
        request_meta: Option<Arc<ModernMeta>>,
        noted: Option<Noting<'_>>,
    ) -> BoxFuture<'static, HandlerResult> {
        let modern = request_meta.is_some();
        let call = Call {
            session: self.clone(),
            rc,
            modern: request_meta,
            finish: modern.then(|| Finish::new(self.server.clone(), &req.method)),
            noted,
        };
        let served = self.server.served();
        let subscribe = served.resources && served.subscribe;
        let params = req.params.as_deref();
        match req.method.as_str() {
            ListTools::METHOD if served.tools => self.list_tools(params, call),
            CallTool::METHOD if served.tools => self.call_tool(params, call),
            ListResources::METHOD if served.resources => self.list_resources(params, call),
            ListResourceTemplates::METHOD if served.resources => self.list_templates(params, call),
            ReadResource::METHOD if served.resources => self.read_resource(params, call),
            Subscribe::METHOD if subscribe && !modern => self.subscribe_to(params, &call),
            Unsubscribe::METHOD if subscribe && !modern => self.unsubscribe_from(params, &call),
            ListPrompts::METHOD if served.prompts => self.list_prompts(params, call),
            GetPrompt::METHOD if served.prompts => self.get_prompt(params, call),
            Complete::METHOD if served.completions => self.complete(params, call),
            Listen::METHOD if modern => {
                let p: ListenParams = match parse_params(params) {
                    Ok(p) => p,
                    Err(e) => return fail(e),
                };
                let listen = crate::listen::run(
                    self.server.clone(),
                    self.principal.clone(),
                    p.notifications,
                    call.rc,
                );
                let finish = call.finish;
                Box::pin(async move { modern::encode(finish.as_ref(), listen.await?) })
            }
            SetLevel::METHOD if self.server.about.logging && !modern => self.set_level(params),
            m if super::tasks::TASK_METHODS.contains(&m)
                && self.server.features.tasks.is_some() =>
            {
                self.task_method(m, params, call)
            }
            other => match self.server.features.extensions.methods.get(other) {
                Some(h) => custom(h.clone(), params, call),
                None => fail(ErrorObject::method_not_found(&echo(&req.method))),
            },
        }
    }

    /// `completion/complete`: at most 100 values.
    fn complete(
        &self,
        params: Option<&RawValue>,
        call: Call<'_>,
    ) -> BoxFuture<'static, HandlerResult> {
        let p: CompleteParams = match parse_params(params) {
            Ok(p) => p,
            Err(e) => return fail(e),
        };
        let server = self.handler();
        let finish = call.finish.clone();
        let ctx = call.ctx(p.meta.as_ref());
        Box::pin(async move {
            let mut r = server.complete(ctx, p).await?;
            r.completion.values.truncate(100);
            modern::encode(finish.as_ref(), r)
        })
    }

    /// `logging/setLevel` (legacy: a 2026-07-28 request carries its level in `_meta`).
    fn set_level(&self, params: Option<&RawValue>) -> BoxFuture<'static, HandlerResult> {
        let p: SetLevelParams = match parse_params(params) {
            Ok(p) => p,
            Err(e) => return fail(e),
        };
        self.lock().log_level = p.level;
        ready(&EmptyResult::default())
    }
}

/// A custom method ([`crate::ServerBuilder::method`]): its handler with the request's `_meta`
/// in the [`Ctx`].
fn custom(
    h: crate::extensions::MethodFn,
    params: Option<&RawValue>,
    call: Call<'_>,
) -> BoxFuture<'static, HandlerResult> {
    let value: Option<serde_json::Value> = match params.map(|p| serde_json::from_str(p.get())) {
        None => None,
        Some(Ok(v)) => Some(v),
        Some(Err(e)) => return fail(ErrorObject::invalid_params(format!("invalid params: {e}"))),
    };
    let meta = value
        .as_ref()
        .and_then(|v| v.get("_meta"))
        .and_then(serde_json::Value::as_object);
    let finish = call.finish.clone();
    let ctx = call.ctx(meta);
    Box::pin(async move { modern::encode(finish.as_ref(), h(ctx, value).await?) })
}
