//! The registry as a [`Handler`]: pages of `ServerConfig::page_size`, the tools, prompts,
//! resources and templates registered, required prompt arguments checked, the completion
//! provider. Lists are answered at once; calls return the registered function's future.

use futures::future::Either;
use oxmcp_jsonrpc::ErrorObject;
use oxmcp_types::{
    CallToolParams, CallToolResult, CompleteParams, CompleteResult, GetPromptParams,
    GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, ReadResourceResult, ResourceUriParams, Tool,
};

use super::erased::{Answer, Handler, now};
use super::{
    HandlerCapabilities, Target, missing_prompt_arguments, paginate, resource_not_found,
    unknown_prompt, unknown_tool,
};
use crate::context::Ctx;
use crate::registry::{Catalogue, Registry};

impl Catalogue {
    /// A page of one of the registry's lists.
    fn page<T: Clone>(
        &self,
        cursor: Option<&str>,
        pick: impl FnOnce(&Registry) -> Vec<T>,
    ) -> Result<(Vec<T>, Option<String>), ErrorObject> {
        let items = pick(&self.read());
        paginate(&items, cursor, self.page_size)
    }
}

impl Handler for Catalogue {
    /// The families with something registered (and completions when there is a provider).
    fn capabilities(&self) -> HandlerCapabilities {
        let reg = self.read();
        HandlerCapabilities {
            tools: !reg.tools.is_empty(),
            resources: !reg.resources.is_empty() || !reg.templates.is_empty(),
            prompts: !reg.prompts.is_empty(),
            completions: self.completion.is_some(),
            list_changed: true,
            subscribe: true,
        }
    }

    fn list_tools<'a>(
        &'a self,
        _ctx: &'a Ctx,
        cursor: Option<String>,
    ) -> Answer<'a, ListToolsResult> {
        now(self
            .page(cursor.as_deref(), |reg| {
                reg.tools.values().map(|t| t.tool.clone()).collect()
            })
            .map(|(tools, next_cursor)| {
                ListToolsResult::default()
                    .with_tools(tools)
                    .with_next_cursor(next_cursor)
            }))
    }

    fn tool<'a>(&'a self, _ctx: &'a Ctx, name: &'a str) -> Answer<'a, Option<Tool>> {
        now(Ok(self.peek_tool(name)))
    }

    fn peek_tool(&self, name: &str) -> Option<Tool> {
        self.read().tools.get(name).map(|e| e.tool.clone())
    }

    fn target<'a>(&'a self, _ctx: &'a Ctx, name: &'a str) -> Answer<'a, Target> {
        now(match self.read().tools.get(name) {
            Some(e) => Ok(Target::Registered(e.clone())),
            None => Err(unknown_tool(name)),
        })
    }

    fn call_tool<'a>(
        &'a self,
        target: &Target,
        ctx: Ctx,
        params: CallToolParams,
    ) -> Answer<'a, CallToolResult> {
        match target {
            Target::Registered(e) => {
                Either::Right((e.handler)(ctx, params.arguments.unwrap_or_default()))
            }
            _ => now(Err(unknown_tool(&params.name))),
        }
    }

    fn list_prompts<'a>(
        &'a self,
        _ctx: &'a Ctx,
        cursor: Option<String>,
    ) -> Answer<'a, ListPromptsResult> {
        now(self
            .page(cursor.as_deref(), |reg| {
                reg.prompts.values().map(|p| p.prompt.clone()).collect()
            })
            .map(|(prompts, next_cursor)| ListPromptsResult {
                prompts,
                next_cursor,
                ..Default::default()
            }))
    }

    fn get_prompt(&self, ctx: Ctx, params: GetPromptParams) -> Answer<'_, GetPromptResult> {
        let Some(entry) = self.read().prompts.get(&params.name).cloned() else {
            return now(Err(unknown_prompt(&params.name)));
        };
        let args = params.arguments.unwrap_or_default();
        if let Err(e) = missing_prompt_arguments(&entry.prompt, &args) {
            return now(Err(e));
        }
        Either::Right((entry.handler)(ctx, args))
    }

    fn list_resources<'a>(
        &'a self,
        _ctx: &'a Ctx,
        cursor: Option<String>,
    ) -> Answer<'a, ListResourcesResult> {
        now(self
            .page(cursor.as_deref(), |reg| {
                reg.resources.values().map(|r| r.resource.clone()).collect()
            })
            .map(|(resources, next_cursor)| ListResourcesResult {
                resources,
                next_cursor,
                ..Default::default()
            }))
    }

    fn list_resource_templates<'a>(
        &'a self,
        _ctx: &'a Ctx,
        cursor: Option<String>,
    ) -> Answer<'a, ListResourceTemplatesResult> {
        now(self
            .page(cursor.as_deref(), |reg| {
                reg.templates.iter().map(|t| t.template.clone()).collect()
            })
            .map(
                |(resource_templates, next_cursor)| ListResourceTemplatesResult {
                    resource_templates,
                    next_cursor,
                    ..Default::default()
                },
            ))
    }

    fn read_resource(&self, ctx: Ctx, params: ResourceUriParams) -> Answer<'_, ReadResourceResult> {
        let uri = params.uri;
        let (direct, template) = {
            let reg = self.read();
            let direct = reg.resources.get(&uri).map(|r| r.handler.clone());
            let template = match direct {
                Some(_) => None,
                None => reg
                    .templates
                    .iter()
                    .find_map(|t| t.parsed.matches(&uri).map(|vars| (t.handler.clone(), vars))),
            };
            (direct, template)
        };
        match (direct, template) {
            (Some(h), _) => Either::Right(h(ctx, uri)),
            (None, Some((h, vars))) => Either::Right(h(ctx, uri, vars)),
            (None, None) => now(Err(resource_not_found(ctx.protocol_version(), &uri))),
        }
    }

    fn complete(&self, ctx: Ctx, params: CompleteParams) -> Answer<'_, CompleteResult> {
        match &self.completion {
            Some(h) => Either::Right(h(ctx, params)),
            None => now(Ok(CompleteResult::default())),
        }
    }

    fn serves_uri(&self, uri: &str) -> Option<bool> {
        let reg = self.read();
        if reg.resources.is_empty() && reg.templates.is_empty() {
            return None;
        }
        Some(
            reg.resources.contains_key(uri)
                || reg
                    .templates
                    .iter()
                    .any(|t| t.parsed.matches(uri).is_some()),
        )
    }
}
