//! What the expansions of the `oxmcp-macros` attribute macros call (re-exported as the
//! hidden `__private` module). Every registration goes through the public
//! [`ServerBuilder`] methods; protocol structs are built here, from `Default` and field
//! assignments, so generated code holds no struct literal of them.
// Default then fields, not struct literals: the protocol structs may become #[non_exhaustive].
#![allow(clippy::field_reassign_with_default)]

use std::fmt::Display;
use std::future::Future;

use oxmcp_types::{
    CompleteParams, CompleteResult, GetPromptResult, Icon, Prompt, PromptArgument, PromptMessage,
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Role, Tool, ToolAnnotations,
};

pub use crate::builder::{BuildError, ServerBuilder};
pub use crate::context::Ctx;
pub use crate::handler::IntoCallToolResult;
pub use crate::register::{Args, CompletionTarget, Register, RegisterShared};
pub use crate::server::Server;
pub use oxmcp_jsonrpc::ErrorObject;
pub use oxmcp_types as types;
pub use schemars;
pub use serde;
pub use serde_json;
pub use std::collections::BTreeMap;
pub use std::convert::Infallible;
pub use std::sync::Arc;

fn icons(srcs: &[&str]) -> Option<Vec<Icon>> {
    (!srcs.is_empty()).then(|| srcs.iter().map(|s| Icon::new(*s)).collect())
}

fn owned(s: Option<&str>) -> Option<String> {
    s.map(str::to_owned)
}

/// A builder named `name`, version `version`, with optional instructions.
pub fn new_builder(name: &str, version: &str, instructions: Option<&str>) -> ServerBuilder {
    let builder = ServerBuilder::new(name, version);
    match instructions {
        Some(text) => builder.instructions(text),
        None => builder,
    }
}

/// A request error from a handler's `Err`: a JSON-RPC error object as it is, anything else
/// as an internal error with its text.
pub fn rpc_error<E: Display + 'static>(e: E) -> ErrorObject {
    match (&e as &dyn std::any::Any).downcast_ref::<ErrorObject>() {
        Some(rpc) => rpc.clone(),
        None => ErrorObject::internal(e.to_string()),
    }
}

/// A `#[tool]`'s definition.
#[derive(Debug, Default)]
pub struct ToolMeta<'a> {
    /// Name.
    pub name: &'a str,
    /// Description.
    pub description: &'a str,
    /// Display title (in the tool and its annotations).
    pub title: Option<&'a str>,
    /// `readOnlyHint`.
    pub read_only: Option<bool>,
    /// `destructiveHint`.
    pub destructive: Option<bool>,
    /// `idempotentHint`.
    pub idempotent: Option<bool>,
    /// `openWorldHint`.
    pub open_world: Option<bool>,
    /// Icon sources.
    pub icons: &'a [&'a str],
}

impl ToolMeta<'_> {
    /// The tool definition (the input schema is the builder's to set).
    pub fn into_tool(self) -> Tool {
        let mut tool = Tool::default();
        tool.name = self.name.to_owned();
        tool.description = Some(self.description.to_owned());
        tool.title = owned(self.title);
        tool.icons = icons(self.icons);
        let hints = [
            self.read_only,
            self.destructive,
            self.idempotent,
            self.open_world,
        ];
        if self.title.is_some() || hints.iter().any(Option::is_some) {
            let mut a = ToolAnnotations::default();
            a.title = owned(self.title);
            a.read_only_hint = self.read_only;
            a.destructive_hint = self.destructive;
            a.idempotent_hint = self.idempotent;
            a.open_world_hint = self.open_world;
            tool.annotations = Some(a);
        }
        tool
    }
}

/// Registers a typed tool ([`ServerBuilder::typed_tool`]).
pub fn tool<A, F, Fut, R, E>(builder: ServerBuilder, meta: ToolMeta<'_>, f: F) -> ServerBuilder
where
    A: serde::de::DeserializeOwned + schemars::JsonSchema + Send + 'static,
    F: Fn(Ctx, A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, E>> + Send + 'static,
    R: IntoCallToolResult,
    E: Display + 'static,
{
    builder.typed_tool(meta.into_tool(), f)
}

/// A `#[prompt]`'s definition.
#[derive(Debug, Default)]
pub struct PromptMeta<'a> {
    /// Name.
    pub name: &'a str,
    /// Description.
    pub description: &'a str,
    /// Display title.
    pub title: Option<&'a str>,
    /// Icon sources.
    pub icons: &'a [&'a str],
    /// Arguments: name, description, required.
    pub arguments: &'a [(&'a str, Option<&'a str>, bool)],
}

impl PromptMeta<'_> {
    /// The prompt definition.
    pub fn into_prompt(self) -> Prompt {
        let mut prompt = Prompt::default();
        prompt.name = self.name.to_owned();
        prompt.description = Some(self.description.to_owned());
        prompt.title = owned(self.title);
        prompt.icons = icons(self.icons);
        let args: Vec<PromptArgument> = self
            .arguments
            .iter()
            .map(|(name, description, required)| {
                let mut a = PromptArgument::default();
                a.name = (*name).to_owned();
                a.description = owned(*description);
                a.required = Some(*required);
                a
            })
            .collect();
        prompt.arguments = (!args.is_empty()).then_some(args);
        prompt
    }
}

/// Registers a prompt ([`ServerBuilder::prompt`]).
pub fn prompt<F, Fut>(builder: ServerBuilder, meta: PromptMeta<'_>, f: F) -> ServerBuilder
where
    F: Fn(Ctx, BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<GetPromptResult, ErrorObject>> + Send + 'static,
{
    builder.prompt(meta.into_prompt(), f)
}

/// What a `#[prompt]` function may return.
pub trait IntoPromptResult {
    /// Converts into a `prompts/get` result.
    fn into_prompt_result(self) -> GetPromptResult;
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_result(self) -> GetPromptResult {
        self
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_result(self) -> GetPromptResult {
        let mut r = GetPromptResult::default();
        r.messages = self;
        r
    }
}

impl IntoPromptResult for String {
    fn into_prompt_result(self) -> GetPromptResult {
        vec![PromptMessage::text(Role::User, self)].into_prompt_result()
    }
}

impl IntoPromptResult for &'static str {
    fn into_prompt_result(self) -> GetPromptResult {
        self.to_owned().into_prompt_result()
    }
}

/// A prompt function's outcome as the builder wants it.
pub fn prompt_out<R: IntoPromptResult, E: Display + 'static>(
    r: Result<R, E>,
) -> Result<GetPromptResult, ErrorObject> {
    r.map(IntoPromptResult::into_prompt_result)
        .map_err(rpc_error)
}

/// The value of a prompt argument or template variable (empty when absent).
pub fn arg(args: &BTreeMap<String, String>, name: &str) -> String {
    args.get(name).cloned().unwrap_or_default()
}

/// The value of an optional prompt argument.
pub fn opt_arg(args: &BTreeMap<String, String>, name: &str) -> Option<String> {
    args.get(name).cloned()
}

/// A `#[resource]`'s definition.
#[derive(Debug, Default)]
pub struct ResourceMeta<'a> {
    /// URI or URI template.
    pub uri: &'a str,
    /// Name.
    pub name: &'a str,
    /// Display title.
    pub title: Option<&'a str>,
    /// Description.
    pub description: Option<&'a str>,
    /// MIME type.
    pub mime: Option<&'a str>,
    /// Icon sources.
    pub icons: &'a [&'a str],
}

/// Registers a static resource ([`ServerBuilder::resource`]).
pub fn resource<F, Fut>(builder: ServerBuilder, meta: ResourceMeta<'_>, f: F) -> ServerBuilder
where
    F: Fn(Ctx, String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ReadResourceResult, ErrorObject>> + Send + 'static,
{
    let mut r = Resource::default();
    r.uri = meta.uri.to_owned();
    r.name = meta.name.to_owned();
    r.title = owned(meta.title);
    r.description = owned(meta.description);
    r.mime_type = owned(meta.mime);
    r.icons = icons(meta.icons);
    builder.resource(r, f)
}

/// Registers a resource template ([`ServerBuilder::resource_template`]).
pub fn resource_template<F, Fut>(
    builder: ServerBuilder,
    meta: ResourceMeta<'_>,
    f: F,
) -> ServerBuilder
where
    F: Fn(Ctx, String, BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ReadResourceResult, ErrorObject>> + Send + 'static,
{
    let mut t = ResourceTemplate::default();
    t.uri_template = meta.uri.to_owned();
    t.name = meta.name.to_owned();
    t.title = owned(meta.title);
    t.description = owned(meta.description);
    t.mime_type = owned(meta.mime);
    t.icons = icons(meta.icons);
    builder.resource_template(t, f)
}

/// What a `#[resource]` function may return.
pub trait IntoReadResource {
    /// Converts into a `resources/read` result for `uri`.
    fn into_read_resource(self, uri: String, mime: Option<&str>) -> ReadResourceResult;
}

impl IntoReadResource for ReadResourceResult {
    fn into_read_resource(self, _uri: String, _mime: Option<&str>) -> ReadResourceResult {
        self
    }
}

impl IntoReadResource for String {
    fn into_read_resource(self, uri: String, mime: Option<&str>) -> ReadResourceResult {
        let mut r = ReadResourceResult::default();
        r.contents = vec![ResourceContents::text(uri, mime, self)];
        r
    }
}

impl IntoReadResource for &'static str {
    fn into_read_resource(self, uri: String, mime: Option<&str>) -> ReadResourceResult {
        self.to_owned().into_read_resource(uri, mime)
    }
}

impl IntoReadResource for Vec<u8> {
    fn into_read_resource(self, uri: String, mime: Option<&str>) -> ReadResourceResult {
        let mut c = ResourceContents::default();
        c.uri = uri;
        c.mime_type = owned(mime);
        c.blob = Some(base64_simd::STANDARD.encode_to_string(self));
        let mut r = ReadResourceResult::default();
        r.contents = vec![c];
        r
    }
}

/// A resource function's outcome as the builder wants it.
pub fn resource_out<R: IntoReadResource, E: Display + 'static>(
    uri: String,
    mime: Option<&str>,
    r: Result<R, E>,
) -> Result<ReadResourceResult, ErrorObject> {
    r.map(|r| r.into_read_resource(uri, mime))
        .map_err(rpc_error)
}

/// Sets the `completion/complete` provider ([`ServerBuilder::completion`]).
pub fn completion<F, Fut>(builder: ServerBuilder, f: F) -> ServerBuilder
where
    F: Fn(Ctx, CompleteParams) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<CompleteResult, ErrorObject>> + Send + 'static,
{
    builder.completion(f)
}

/// A completion function's outcome as the builder wants it.
pub fn complete_out<E: Display + 'static>(
    r: Result<CompleteResult, E>,
) -> Result<CompleteResult, ErrorObject> {
    r.map_err(rpc_error)
}

/// A per-argument completer's outcome as the builder wants it.
pub fn values_out<E: Display + 'static>(
    r: Result<Vec<String>, E>,
) -> Result<Vec<String>, ErrorObject> {
    r.map_err(rpc_error)
}

/// Checks at compile time that a whole-arguments type can be a tool's input (an error there
/// points at the type).
pub fn assert_args<A: serde::de::DeserializeOwned + schemars::JsonSchema>() {}
