//! Content blocks: text, image, audio, resource links, embedded resources, tool use/results.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::{Annotations, JsonObject};
use crate::resources::ResourceContents;

/// One content block, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// Plain text.
    Text(TextContent),
    /// Base64 image.
    Image(MediaContent),
    /// Base64 audio (2025-03-26+).
    Audio(MediaContent),
    /// A link to a resource (2025-06-18+).
    ResourceLink(crate::resources::Resource),
    /// An embedded resource.
    Resource(EmbeddedResource),
    /// A tool use request inside sampling (2025-11-25+).
    ToolUse(ToolUseContent),
    /// A tool result inside sampling (2025-11-25+).
    ToolResult(ToolResultContent),
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text(TextContent {
            text: text.into(),
            ..TextContent::default()
        })
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

/// `{"type":"text"}` content.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Image or audio content: base64 data plus MIME type.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MediaContent {
    /// Base64-encoded bytes.
    pub data: String,
    /// MIME type.
    pub mime_type: String,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// An embedded resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// The resource contents.
    pub resource: ResourceContents,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A model's request to use a tool (sampling with tools).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolUseContent {
    /// Id of this tool use.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Tool input.
    pub input: Value,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The result of a tool use (sampling with tools).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultContent {
    /// The tool use this answers.
    pub tool_use_id: String,
    /// Result content.
    pub content: Vec<Content>,
    /// Structured result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}
