//! `resources/list`, `resources/templates/list`, `resources/read` (a resource, else the first
//! matching template) and the legacy `resources/subscribe` / `unsubscribe`.

use futures::future::BoxFuture;
use oxmcp_engine::HandlerResult;
use oxmcp_jsonrpc::{ErrorObject, RawValue, parse_params};
use oxmcp_types::{EmptyResult, ResourceUriParams};

use super::Session;
use super::dispatch::Call;
use super::reply::{fail, list_with, ready};
use crate::dynamic::ServerHandler as _;
use crate::echo::echo;

impl Session {
    /// The params of a request naming a resource, refused (-32602) when the URI is longer
    /// than `ServerConfig::max_uri_len`.
    fn uri_params(&self, params: Option<&RawValue>) -> Result<ResourceUriParams, ErrorObject> {
        let p: ResourceUriParams = parse_params(params)?;
        let max = self.server.about.config.max_uri_len;
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
        call: Call<'_>,
    ) -> BoxFuture<'static, HandlerResult> {
        list_with(params, call, |server, ctx, cursor| async move {
            server.list_resources(&ctx, cursor).await
        })
    }

    pub(super) fn list_templates(
        &self,
        params: Option<&RawValue>,
        call: Call<'_>,
    ) -> BoxFuture<'static, HandlerResult> {
        list_with(params, call, |server, ctx, cursor| async move {
            server.list_resource_templates(&ctx, cursor).await
        })
    }

    /// `resources/read`: a registry reads a resource, else the first matching template.
    pub(super) fn read_resource(
        &self,
        params: Option<&RawValue>,
        call: Call<'_>,
    ) -> BoxFuture<'static, HandlerResult> {
        let p: ResourceUriParams = match self.uri_params(params) {
            Ok(p) => p,
            Err(e) => return fail(e),
        };
        call.note(|| crate::layer::Target::Resource(p.uri.clone()));
        let server = self.handler();
        let finish = call.finish.clone();
        let ctx = call.ctx(p.meta.as_ref());
        Box::pin(async move {
            let read = server.read_resource(ctx, p).await?;
            crate::modern::encode(finish.as_ref(), read)
        })
    }

    /// `resources/subscribe`.
    pub(super) fn subscribe_to(
        &self,
        params: Option<&RawValue>,
        call: &Call<'_>,
    ) -> BoxFuture<'static, HandlerResult> {
        let known = |p: ResourceUriParams| match self.handler().serves_uri(&p.uri) {
            // Nothing is held for a resource the server does not have.
            Some(false) => Err(crate::dynamic::resource_not_found(self.version(), &p.uri)),
            _ => Ok(p),
        };
        match self
            .uri_params(params)
            .map(|p| noted(call, p))
            .and_then(known)
            .and_then(|p| self.subscribe(p.uri))
        {
            Ok(()) => ready(&EmptyResult::default()),
            Err(e) => fail(e),
        }
    }

    /// `resources/unsubscribe`.
    pub(super) fn unsubscribe_from(
        &self,
        params: Option<&RawValue>,
        call: &Call<'_>,
    ) -> BoxFuture<'static, HandlerResult> {
        match self.uri_params(params).map(|p| noted(call, p)) {
            Ok(p) => {
                self.unsubscribe(&p.uri);
                ready(&EmptyResult::default())
            }
            Err(e) => fail(e),
        }
    }
}

/// `p` once its URI is noted for the layers.
fn noted(call: &Call<'_>, p: ResourceUriParams) -> ResourceUriParams {
    call.note(|| crate::layer::Target::Resource(p.uri.clone()));
    p
}
