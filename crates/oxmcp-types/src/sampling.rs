//! `sampling/createMessage` (server asks the client's model).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::{JsonObject, ResultType, Role};
use crate::content::Content;

/// One content block or several.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    /// A single item.
    One(T),
    /// A list.
    Many(Vec<T>),
}

impl<T> From<T> for OneOrMany<T> {
    fn from(one: T) -> Self {
        Self::One(one)
    }
}

impl<T> From<Vec<T>> for OneOrMany<T> {
    fn from(many: Vec<T>) -> Self {
        Self::Many(many)
    }
}

/// A message in a sampling conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct SamplingMessage {
    /// Speaker.
    pub role: Role,
    /// Content.
    pub content: OneOrMany<Content>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SamplingMessage {
    /// A message of `role` with `content`.
    pub fn new(role: Role, content: impl Into<OneOrMany<Content>>) -> Self {
        Self {
            role,
            content: content.into(),
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// A user message of one text.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::new(Role::User, Content::text(text))
    }
}

/// Model selection preferences.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct ModelPreferences {
    /// Model name hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<JsonObject>>,
    /// Cost priority 0..1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_priority: Option<f64>,
    /// Speed priority 0..1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_priority: Option<f64>,
    /// Intelligence priority 0..1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intelligence_priority: Option<f64>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Params of `sampling/createMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageParams {
    /// The conversation.
    pub messages: Vec<SamplingMessage>,
    /// Model preferences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<ModelPreferences>,
    /// System prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Context inclusion (deprecated in 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_context: Option<String>,
    /// Temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Maximum tokens to sample.
    pub max_tokens: u64,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Provider metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// Tools the model may use (2025-11-25). Only for a client that declares
    /// `sampling.tools`; the model's calls come back as `tool_use` content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<crate::tools::Tool>>,
    /// How the model uses the tools (`auto` when absent). Same condition as `tools`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// How a sampled model uses the tools it is given (2025-11-25).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct ToolChoice {
    /// `auto` (the model decides; the default), `required` (at least one tool call) or
    /// `none` (no tool calls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ToolChoiceMode>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The modes of a [`ToolChoice`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoiceMode {
    /// The model decides whether to use tools.
    Auto,
    /// The model uses at least one tool before it completes.
    Required,
    /// The model uses no tool.
    None,
}

impl CreateMessageParams {
    /// Whether the request uses tools (`tools` or `toolChoice`), which needs the client's
    /// `sampling.tools` capability.
    pub fn uses_tools(&self) -> bool {
        self.tools.is_some() || self.tool_choice.is_some()
    }
}

/// Result of `sampling/createMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct CreateMessageResult {
    /// 2026-07-28 result kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Speaker (assistant).
    pub role: Role,
    /// Content.
    pub content: OneOrMany<Content>,
    /// Model that produced it.
    pub model: String,
    /// Why sampling stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CreateMessageResult {
    /// The assistant's answer `content`, produced by `model`.
    pub fn new(model: impl Into<String>, content: impl Into<OneOrMany<Content>>) -> Self {
        Self {
            result_type: None,
            role: Role::Assistant,
            content: content.into(),
            model: model.into(),
            stop_reason: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}
