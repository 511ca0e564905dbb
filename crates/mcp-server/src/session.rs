//! One connection's state (lifecycle, negotiated version, log level, subscriptions) and the
//! routing of its requests.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use mcp_engine::{HandlerResult, Peer, RequestContext, Service};
use mcp_jsonrpc::{ErrorCode, ErrorObject, Notification, Request, parse_params, to_raw};
use mcp_types::{
    CallToolParams, CallToolResult, ClientCapabilities, CompleteParams, EmptyResult, Feature,
    GetPromptParams, Implementation, InitializeParams, InitializeResult, JsonObject,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    LoggingLevel, PaginatedParams, ProtocolVersion, ResourceUriParams, SetLevelParams,
    progress_token,
};
use serde::Serialize;
use serde_json::Value;

use crate::context::Ctx;
use crate::echo::echo;
use crate::modern::{self, Era};
use crate::server::Inner;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Nothing but `initialize` and `ping` yet.
    New,
    /// `initialize` answered; waiting for `notifications/initialized` (requests are accepted).
    Initializing,
    /// Fully up.
    Ready,
}

#[derive(Debug)]
struct State {
    phase: Phase,
    version: ProtocolVersion,
    client_info: Option<Implementation>,
    client_caps: ClientCapabilities,
    log_level: LoggingLevel,
    subscriptions: HashSet<String>,
}

/// One client connection.
pub(crate) struct Session {
    pub(crate) server: Arc<Inner>,
    /// Who the transport says the client is, if it verified that.
    pub(crate) principal: Option<String>,
    state: Mutex<State>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("state", &*self.lock())
            .finish_non_exhaustive()
    }
}

fn encode<T: Serialize>(value: &T) -> HandlerResult {
    to_raw(value).map_err(|e| ErrorObject::internal(format!("could not encode the result: {e}")))
}

fn ready<T: Serialize>(value: &T) -> BoxFuture<'static, HandlerResult> {
    let r = encode(value);
    Box::pin(async move { r })
}

fn fail(e: ErrorObject) -> BoxFuture<'static, HandlerResult> {
    Box::pin(async move { Err(e) })
}

const CURSOR_PREFIX: &str = "mcp-offset:";

fn paginate<T: Clone>(
    items: &[T],
    cursor: Option<&str>,
    page: usize,
) -> Result<(Vec<T>, Option<String>), ErrorObject> {
    let start = match cursor {
        None => 0,
        Some(c) => c
            .strip_prefix(CURSOR_PREFIX)
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n <= items.len())
            .ok_or_else(|| ErrorObject::invalid_params(format!("Invalid cursor: {:?}", echo(c))))?,
    };
    let page = page.max(1);
    let end = (start + page).min(items.len());
    let next = (end < items.len()).then(|| format!("{CURSOR_PREFIX}{end}"));
    Ok((items[start..end].to_vec(), next))
}

/// Answers a paginated list request: read the cursor, cut the page, build the result.
fn list_page<T: Clone, R: Serialize>(
    params: Option<&mcp_jsonrpc::RawValue>,
    items: &[T],
    page: usize,
    build: impl FnOnce(Vec<T>, Option<String>) -> R,
) -> BoxFuture<'static, HandlerResult> {
    let p: PaginatedParams = match parse_params(params) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    match paginate(items, p.cursor.as_deref(), page) {
        Ok((items, next)) => ready(&build(items, next)),
        Err(e) => fail(e),
    }
}

impl Session {
    pub(crate) fn new(server: Arc<Inner>) -> Self {
        Self {
            principal: None,
            server,
            state: Mutex::new(State {
                phase: Phase::New,
                version: ProtocolVersion::LATEST_LEGACY,
                client_info: None,
                client_caps: ClientCapabilities::default(),
                log_level: LoggingLevel::Info,
                subscriptions: HashSet::new(),
            }),
        }
    }

    pub(crate) fn with_principal(mut self, principal: Option<String>) -> Self {
        self.principal = principal;
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn version(&self) -> ProtocolVersion {
        self.lock().version
    }

    pub(crate) fn client_info(&self) -> Option<Implementation> {
        self.lock().client_info.clone()
    }

    pub(crate) fn client_capabilities(&self) -> ClientCapabilities {
        self.lock().client_caps.clone()
    }

    pub(crate) fn logging_on(&self) -> bool {
        self.server.logging
    }

    pub(crate) fn log_enabled(&self, level: LoggingLevel) -> bool {
        self.server.logging && level >= self.lock().log_level
    }

    pub(crate) fn is_ready(&self) -> bool {
        self.lock().phase != Phase::New
    }

    pub(crate) fn is_subscribed(&self, uri: &str) -> bool {
        self.lock().subscriptions.contains(uri)
    }

    /// `resources/subscribe`: holds `uri` unless the session is at its limit or the
    /// `on_subscribe` hook refuses (a URI held already is not held twice).
    fn subscribe(&self, uri: String) -> Result<(), ErrorObject> {
        let mut st = self.lock();
        if st.subscriptions.contains(&uri) {
            return Ok(());
        }
        let limit = self.server.config.max_subscriptions;
        if st.subscriptions.len() >= limit {
            return Err(too_many_subscriptions(limit));
        }
        if let Some(hook) = &self.server.on_subscribe {
            hook(&uri)?;
        }
        st.subscriptions.insert(uri);
        Ok(())
    }

    /// `resources/unsubscribe`.
    fn unsubscribe(&self, uri: &str) {
        let mut st = self.lock();
        if st.subscriptions.remove(uri) {
            if let Some(hook) = &self.server.on_unsubscribe {
                hook(uri);
            }
        }
    }

    /// Drops every subscription the session holds, telling `on_unsubscribe` of each.
    pub(crate) fn release_subscriptions(&self) {
        let held = std::mem::take(&mut self.lock().subscriptions);
        if let Some(hook) = &self.server.on_unsubscribe {
            for uri in &held {
                hook(uri);
            }
        }
    }

    fn initialize(&self, req: &Request) -> BoxFuture<'static, HandlerResult> {
        let params: InitializeParams = match parse_params(req.params.as_deref()) {
            Ok(p) => p,
            Err(e) => return fail(e),
        };
        let version = ProtocolVersion::negotiate_legacy(&params.protocol_version);
        {
            let mut st = self.lock();
            if st.phase != Phase::New {
                return fail(ErrorObject::invalid_request(
                    "the session is already initialized",
                ));
            }
            st.phase = Phase::Initializing;
            st.version = version;
            st.client_info = Some(params.client_info);
            st.client_caps = params.capabilities;
        }
        let mut capabilities = self.server.capabilities();
        if !version.has(Feature::Completions) {
            capabilities.completions = None;
        }
        ready(&InitializeResult {
            protocol_version: version.as_str().to_owned(),
            capabilities,
            server_info: self.server.info.clone(),
            instructions: self.server.instructions.clone(),
            ..InitializeResult::default()
        })
    }

    /// The params of a request naming a resource, refused (-32602) when the URI is longer
    /// than `ServerConfig::max_uri_len`.
    fn uri_params(
        &self,
        params: Option<&mcp_jsonrpc::RawValue>,
    ) -> Result<ResourceUriParams, ErrorObject> {
        let p: ResourceUriParams = parse_params(params)?;
        let max = self.server.config.max_uri_len;
        if p.uri.len() > max {
            return Err(ErrorObject::invalid_params(format!(
                "Invalid params: the resource URI is {} bytes, over the limit of {max}: {}",
                p.uri.len(),
                echo(&p.uri)
            ))
            .with_data(serde_json::json!({ "length": p.uri.len(), "limit": max })));
        }
        Ok(p)
    }

    fn route(
        self: &Arc<Self>,
        req: Request,
        rc: RequestContext,
        era: Era,
    ) -> BoxFuture<'static, HandlerResult> {
        let ctx = |rc: RequestContext, meta: Option<JsonObject>| Ctx {
            rc,
            session: self.clone(),
            progress_token: progress_token(meta.as_ref()),
            meta,
            era: era.clone(),
            inputs: Default::default(),
        };
        let version = match &era {
            Era::Modern(_) => ProtocolVersion::V2026_07_28,
            Era::Legacy => self.version(),
        };
        let modern = matches!(era, Era::Modern(_));
        let served = self.server.served();
        let page = self.server.config.page_size;
        let not_found = || fail(ErrorObject::method_not_found(&echo(&req.method)));
        let params = req.params.as_deref();
        match req.method.as_str() {
            "tools/list" if served.tools => {
                let items: Vec<_> = self
                    .server
                    .read()
                    .tools
                    .values()
                    .map(|t| t.tool.clone())
                    .collect();
                list_page(params, &items, page, |tools, next_cursor| ListToolsResult {
                    tools,
                    next_cursor,
                    ..Default::default()
                })
            }
            "tools/call" if served.tools => {
                let p: CallToolParams = match parse_params(params) {
                    Ok(p) => p,
                    Err(e) => return fail(e),
                };
                let Some(entry) = self.server.read().tools.get(&p.name).cloned() else {
                    let name = echo(&p.name);
                    return fail(
                        ErrorObject::invalid_params(format!("Unknown tool: {name}"))
                            .with_data(serde_json::json!({ "tool": name })),
                    );
                };
                let ctx = ctx(rc, p.meta);
                Box::pin(async move {
                    let args = p.arguments.unwrap_or_default();
                    let args_value = Value::Object(args);
                    if let Err(errors) = entry.input.validate(&args_value) {
                        return encode(&CallToolResult::error(format!(
                            "Invalid arguments for tool {}: {}",
                            entry.tool.name,
                            errors.join("; ")
                        )));
                    }
                    let Value::Object(args) = args_value else {
                        return Err(ErrorObject::internal("arguments are not an object"));
                    };
                    let result = (entry.handler)(ctx, args).await?;
                    if let (Some(schema), false) = (&entry.output, result.failed()) {
                        let structured = result.structured_content.clone().unwrap_or(Value::Null);
                        if let Err(errors) = schema.validate(&structured) {
                            return Err(ErrorObject::internal(format!(
                                "tool {} returned structuredContent that does not match its outputSchema",
                                entry.tool.name
                            ))
                            .with_data(serde_json::json!({ "errors": errors })));
                        }
                    }
                    encode(&result)
                })
            }
            "resources/list" if served.resources => {
                let items: Vec<_> = self
                    .server
                    .read()
                    .resources
                    .values()
                    .map(|r| r.resource.clone())
                    .collect();
                list_page(params, &items, page, |resources, next_cursor| {
                    ListResourcesResult {
                        resources,
                        next_cursor,
                        ..Default::default()
                    }
                })
            }
            "resources/templates/list" if served.resources => {
                let items: Vec<_> = self
                    .server
                    .read()
                    .templates
                    .iter()
                    .map(|t| t.template.clone())
                    .collect();
                list_page(params, &items, page, |resource_templates, next_cursor| {
                    ListResourceTemplatesResult {
                        resource_templates,
                        next_cursor,
                        ..Default::default()
                    }
                })
            }
            "resources/read" if served.resources => {
                let p: ResourceUriParams = match self.uri_params(params) {
                    Ok(p) => p,
                    Err(e) => return fail(e),
                };
                let (direct, template) = {
                    let reg = self.server.read();
                    let direct = reg.resources.get(&p.uri).map(|r| r.handler.clone());
                    let template = if direct.is_none() {
                        reg.templates.iter().find_map(|t| {
                            t.parsed
                                .matches(&p.uri)
                                .map(|vars| (t.handler.clone(), vars))
                        })
                    } else {
                        None
                    };
                    (direct, template)
                };
                let uri = p.uri.clone();
                let ctx = ctx(rc, p.meta);
                match (direct, template) {
                    (Some(h), _) => Box::pin(async move { encode(&h(ctx, uri).await?) }),
                    (None, Some((h, vars))) => {
                        Box::pin(async move { encode(&h(ctx, uri, vars).await?) })
                    }
                    (None, None) => {
                        let code = ErrorCode(version.resource_not_found_code());
                        let uri = echo(&p.uri);
                        fail(
                            ErrorObject::new(code, format!("Resource not found: {uri}"))
                                .with_data(serde_json::json!({ "uri": uri })),
                        )
                    }
                }
            }
            "resources/subscribe" | "resources/unsubscribe" if served.resources && !modern => {
                let p: ResourceUriParams = match self.uri_params(params) {
                    Ok(p) => p,
                    Err(e) => return fail(e),
                };
                if req.method == "resources/subscribe" {
                    if let Err(e) = self.subscribe(p.uri) {
                        return fail(e);
                    }
                } else {
                    self.unsubscribe(&p.uri);
                }
                ready(&EmptyResult::default())
            }
            "prompts/list" if served.prompts => {
                let items: Vec<_> = self
                    .server
                    .read()
                    .prompts
                    .values()
                    .map(|p| p.prompt.clone())
                    .collect();
                list_page(params, &items, page, |prompts, next_cursor| {
                    ListPromptsResult {
                        prompts,
                        next_cursor,
                        ..Default::default()
                    }
                })
            }
            "prompts/get" if served.prompts => {
                let p: GetPromptParams = match parse_params(params) {
                    Ok(p) => p,
                    Err(e) => return fail(e),
                };
                let Some(entry) = self.server.read().prompts.get(&p.name).cloned() else {
                    return fail(ErrorObject::invalid_params(format!(
                        "Unknown prompt: {}",
                        echo(&p.name)
                    )));
                };
                let args: BTreeMap<String, String> = p.arguments.unwrap_or_default();
                let missing: Vec<&str> = entry
                    .prompt
                    .arguments
                    .iter()
                    .flatten()
                    .filter(|a| a.required == Some(true) && !args.contains_key(&a.name))
                    .map(|a| a.name.as_str())
                    .collect();
                if !missing.is_empty() {
                    return fail(ErrorObject::invalid_params(format!(
                        "Missing required arguments for prompt {}: {}",
                        p.name,
                        missing.join(", ")
                    )));
                }
                let ctx = ctx(rc, p.meta);
                Box::pin(async move { encode(&(entry.handler)(ctx, args).await?) })
            }
            "completion/complete" if self.server.completion.is_some() => {
                let p: CompleteParams = match parse_params(params) {
                    Ok(p) => p,
                    Err(e) => return fail(e),
                };
                let Some(h) = self.server.completion.clone() else {
                    return not_found();
                };
                let ctx = ctx(rc, p.meta.clone());
                Box::pin(async move {
                    let mut r = h(ctx, p).await?;
                    r.completion.values.truncate(100);
                    encode(&r)
                })
            }
            "subscriptions/listen" if modern => {
                let p: mcp_types::ListenParams = match parse_params(params) {
                    Ok(p) => p,
                    Err(e) => return fail(e),
                };
                Box::pin(crate::listen::run(self.server.clone(), p.notifications, rc))
            }
            "logging/setLevel" if self.server.logging && !modern => {
                let p: SetLevelParams = match parse_params(params) {
                    Ok(p) => p,
                    Err(e) => return fail(e),
                };
                self.lock().log_level = p.level;
                ready(&EmptyResult::default())
            }
            _ => not_found(),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Normally released when the connection ends already; this covers a dropped serve.
        self.release_subscriptions();
    }
}

/// -32602 for one subscription too many.
pub(crate) fn too_many_subscriptions(limit: usize) -> ErrorObject {
    ErrorObject::invalid_params(format!("Too many subscriptions: at most {limit} at once"))
        .with_data(serde_json::json!({ "limit": limit }))
}

/// The `Arc<Session>` wrapper the engine drives (routing needs an owned handle to the session).
pub(crate) struct SessionService(pub(crate) Arc<Session>);

impl SessionService {
    fn on_notification(&self, n: &Notification) {
        match n.method.as_str() {
            "notifications/initialized" => {
                let mut st = self.0.lock();
                if st.phase == Phase::Initializing {
                    st.phase = Phase::Ready;
                }
            }
            other => tracing::debug!(method = other, "notification ignored"),
        }
    }
}

impl Service for SessionService {
    fn call(&self, req: Request, rc: RequestContext) -> BoxFuture<'static, HandlerResult> {
        let session = &self.0;
        let config = &session.server.config;
        let era = if config.modern {
            match modern::detect(req.params.as_deref()) {
                Ok(Some(meta)) => Era::Modern(Arc::new(meta)),
                Ok(None) => Era::Legacy,
                Err(e) if req.method != "initialize" => return fail(e),
                Err(_) => Era::Legacy,
            }
        } else {
            Era::Legacy
        };
        if matches!(era, Era::Legacy) && !config.legacy {
            // A modern-only server: everything without 2026-07-28 _meta is refused the way
            // the new revision refuses an unknown version.
            let e = modern::unsupported_version_error(
                "",
                Some(&[ProtocolVersion::V2026_07_28.as_str()]),
            );
            return fail(if req.method == "initialize" {
                ErrorObject::method_not_found(&echo(&req.method))
            } else {
                e
            });
        }
        if let Era::Modern(_) = era {
            return match req.method.as_str() {
                "server/discover" => ready(&modern::discover(&session.server)),
                // Removed in 2026-07-28.
                "ping" | "initialize" => fail(ErrorObject::method_not_found(&req.method)),
                _ => {
                    let server = session.server.clone();
                    let method = req.method.clone();
                    let Era::Modern(meta) = &era else {
                        return fail(ErrorObject::internal("era"));
                    };
                    let binding = crate::mrtr::Binding {
                        key: &server.config.request_state_key,
                        principal: session.principal.as_deref(),
                        ttl: server.config.request_state_ttl,
                    };
                    match crate::mrtr::answers_of(&binding, &method, req.params.as_deref()) {
                        Ok(a) => {
                            *meta
                                .mrtr
                                .answers
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner) = a
                        }
                        Err(e) => return fail(e),
                    }
                    let subject = req
                        .params
                        .as_deref()
                        .and_then(|p| serde_json::from_str::<serde_json::Value>(p.get()).ok())
                        .map(|v| crate::mrtr::subject(&v))
                        .unwrap_or_default();
                    let meta = meta.clone();
                    let principal = session.principal.clone();
                    let fut = session.route(req, rc, era);
                    Box::pin(async move {
                        let result = fut.await;
                        if let Some(e) = meta.mrtr.take_fatal() {
                            return Err(e);
                        }
                        let pending = meta.mrtr.take_pending();
                        let mrtr_method = matches!(
                            method.as_str(),
                            "tools/call" | "prompts/get" | "resources/read"
                        );
                        if !pending.is_empty() && mrtr_method {
                            let binding = crate::mrtr::Binding {
                                key: &server.config.request_state_key,
                                principal: principal.as_deref(),
                                ttl: server.config.request_state_ttl,
                            };
                            let state = binding.sign(&method, &subject, &meta.mrtr.answers());
                            let interim = mcp_types::InputRequiredResult {
                                result_type: Some(mcp_types::ResultType::InputRequired),
                                input_requests: Some(pending),
                                request_state: Some(state),
                                ..Default::default()
                            };
                            return modern::finish(&encode(&interim)?, &server, &method);
                        }
                        modern::finish(&result?, &server, &method)
                    })
                }
            };
        }
        match req.method.as_str() {
            "ping" => ready(&EmptyResult::default()),
            "initialize" => session.initialize(&req),
            _ if session.lock().phase == Phase::New => fail(
                ErrorObject::new(
                    ErrorCode::INVALID_REQUEST,
                    format!("Invalid Request: {} before initialize", echo(&req.method)),
                )
                .with_data(serde_json::json!({ "reason": "not initialized" })),
            ),
            _ => session.route(req, rc, Era::Legacy),
        }
    }

    fn notify(&self, n: Notification, _peer: &Peer) {
        self.on_notification(&n);
    }

    fn batch_allowed(&self) -> bool {
        let st = self.0.lock();
        st.phase != Phase::New && st.version.has(Feature::Batching)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::{Arc, Mutex};

    use serde_json::{Value, json};
    use tokio::sync::mpsc;

    use crate::{Server, ServerConfig};

    /// Serves `lines` on one connection that then ends; returns the answers by id.
    async fn serve(server: &Server, lines: &[Value]) -> Vec<Value> {
        let (in_tx, in_rx) = mpsc::channel(64);
        let (out_tx, mut out_rx) = mpsc::channel(64);
        for l in lines {
            in_tx.send(l.to_string().into_bytes().into()).await.unwrap();
        }
        drop(in_tx);
        server.serve(in_rx, out_tx).await;
        let mut out = Vec::new();
        while let Ok(o) = out_rx.try_recv() {
            if let Some(line) = o.line() {
                out.push(serde_json::from_str(line).unwrap());
            }
        }
        out
    }

    fn req(id: i64, method: &str, params: Value) -> Value {
        json!({"jsonrpc":"2.0","id":id,"method":method,"params":params})
    }

    #[tokio::test]
    async fn subscribe_hooks_pair_up_and_the_end_of_a_connection_releases() {
        let log = Arc::new(Mutex::new(Vec::<String>::new()));
        let (sub, unsub) = (log.clone(), log.clone());
        let server = Server::builder("t", "0")
            .declare_resources()
            .config(ServerConfig {
                max_subscriptions: 2,
                ..ServerConfig::default()
            })
            .on_subscribe(move |uri| {
                if uri == "x://refused" {
                    return Err(mcp_jsonrpc::ErrorObject::invalid_params("no"));
                }
                sub.lock().unwrap().push(format!("+{uri}"));
                Ok(())
            })
            .on_unsubscribe(move |uri| unsub.lock().unwrap().push(format!("-{uri}")))
            .build()
            .unwrap();
        let uri = |u: &str| json!({ "uri": u });
        let out = serve(
            &server,
            &[
                req(0, "initialize", json!({"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}})),
                json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
                req(1, "resources/subscribe", uri("x://a")),
                req(2, "resources/subscribe", uri("x://a")),
                req(3, "resources/subscribe", uri("x://refused")),
                req(4, "resources/subscribe", uri("x://b")),
                req(5, "resources/subscribe", uri("x://c")),
                req(6, "resources/unsubscribe", uri("x://a")),
                req(7, "resources/unsubscribe", uri("x://refused")),
                req(8, "resources/subscribe", uri("x://c")),
            ],
        )
        .await;
        let answer = |id: i64| out.iter().find(|m| m["id"] == id).unwrap().clone();
        assert_eq!(answer(2)["result"], json!({}));
        assert_eq!(answer(3)["error"]["code"], -32602);
        assert_eq!(answer(5)["error"]["code"], -32602, "over the limit of 2");
        assert_eq!(answer(5)["error"]["data"]["limit"], 2);
        assert_eq!(answer(8)["result"], json!({}));
        // Held twice, refused, over the limit and not held: no hook; the rest once each, and
        // what was held when the connection ended is released.
        // Held twice, refused, over the limit or not held: no hook; the rest once each (in
        // order: requests are routed as they come), then what was held when the connection
        // ended is released.
        let mut log = log.lock().unwrap().clone();
        let mut end = log.split_off(4);
        assert_eq!(log, ["+x://a", "+x://b", "-x://a", "+x://c"]);
        end.sort();
        assert_eq!(end, ["-x://b", "-x://c"]);
    }
}
