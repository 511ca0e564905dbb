//! `resources/list`, `resources/templates/list`, `resources/read` (a resource, else the first
//! matching template) and the legacy `resources/subscribe` / `unsubscribe`.

use futures::future::BoxFuture;
use oxmcp_engine::HandlerResult;
use oxmcp_jsonrpc::{ErrorCode, ErrorObject, RawValue, parse_params};
use oxmcp_types::{
    EmptyResult, ListResourceTemplatesResult, ListResourcesResult, ResourceUriParams,
};

use super::Session;
use super::dispatch::Call;
use super::reply::{encode, fail, ready};
use crate::echo::echo;

impl Session {
    /// The params of a request naming a resource, refused (-32602) when the URI is longer
    /// than `ServerConfig::max_uri_len`.
    fn uri_params(&self, params: Option<&RawValue>) -> Result<ResourceUriParams, ErrorObject> {
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

    pub(super) fn list_resources(
        &self,
        params: Option<&RawValue>,
    ) -> BoxFuture<'static, HandlerResult> {
        self.list(
            params,
            |reg| reg.resources.values().map(|r| r.resource.clone()).collect(),
            |resources, next_cursor| ListResourcesResult {
                resources,
                next_cursor,
                ..Default::default()
            },
        )
    }

    pub(super) fn list_templates(
        &self,
        params: Option<&RawValue>,
    ) -> BoxFuture<'static, HandlerResult> {
        self.list(
            params,
            |reg| reg.templates.iter().map(|t| t.template.clone()).collect(),
            |resource_templates, next_cursor| ListResourceTemplatesResult {
                resource_templates,
                next_cursor,
                ..Default::default()
            },
        )
    }

    pub(super) fn read_resource(
        &self,
        params: Option<&RawValue>,
        call: Call,
    ) -> BoxFuture<'static, HandlerResult> {
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
        let version = call.version();
        let uri = p.uri.clone();
        let ctx = call.ctx(p.meta);
        match (direct, template) {
            (Some(h), _) => Box::pin(async move { encode(&h(ctx, uri).await?) }),
            (None, Some((h, vars))) => Box::pin(async move { encode(&h(ctx, uri, vars).await?) }),
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

    /// `resources/subscribe`.
    pub(super) fn subscribe_to(
        &self,
        params: Option<&RawValue>,
    ) -> BoxFuture<'static, HandlerResult> {
        match self.uri_params(params).and_then(|p| self.subscribe(p.uri)) {
            Ok(()) => ready(&EmptyResult::default()),
            Err(e) => fail(e),
        }
    }

    /// `resources/unsubscribe`.
    pub(super) fn unsubscribe_from(
        &self,
        params: Option<&RawValue>,
    ) -> BoxFuture<'static, HandlerResult> {
        match self.uri_params(params) {
            Ok(p) => {
                self.unsubscribe(&p.uri);
                ready(&EmptyResult::default())
            }
            Err(e) => fail(e),
        }
    }
}
