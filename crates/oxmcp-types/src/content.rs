//! Content blocks: text, image, audio, resource links, embedded resources, tool use/results.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::{Annotations, JsonObject};
use crate::resources::ResourceContents;

/// One content block, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
        Content::Text(TextContent::default().with_text(text.into()))
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

// Text blocks are decoded in one pass (they are nearly every block on the hot path); other
// kinds are collected into a map and handed to their derived impls.
impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Content;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a content block object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Content, A::Error> {
                use serde::de::Error;
                let mut kind: Option<std::borrow::Cow<'de, str>> = None;
                let mut text: Option<String> = None;
                let mut annotations: Option<Annotations> = None;
                let mut meta: Option<JsonObject> = None;
                let mut rest = JsonObject::new();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match &*key {
                        "type" => kind = Some(map.next_value()?),
                        "text" if text.is_none() => text = map.next_value()?,
                        "annotations" if annotations.is_none() => annotations = map.next_value()?,
                        "_meta" if meta.is_none() => meta = map.next_value()?,
                        _ => {
                            let v: Value = map.next_value()?;
                            rest.insert(key.into_owned(), v);
                        }
                    }
                }
                let kind = kind.ok_or_else(|| A::Error::missing_field("type"))?;
                if kind == "text" {
                    let text = text.ok_or_else(|| A::Error::missing_field("text"))?;
                    return Ok(Content::Text(TextContent {
                        text,
                        annotations,
                        meta,
                        extra: rest,
                    }));
                }
                if let Some(t) = text {
                    rest.insert("text".to_owned(), Value::String(t));
                }
                if let Some(a) = annotations {
                    rest.insert(
                        "annotations".to_owned(),
                        serde_json::to_value(a).map_err(A::Error::custom)?,
                    );
                }
                if let Some(m) = meta {
                    rest.insert("_meta".to_owned(), Value::Object(m));
                }
                let v = Value::Object(rest);
                let parsed = match &*kind {
                    "image" => serde_json::from_value(v).map(Content::Image),
                    "audio" => serde_json::from_value(v).map(Content::Audio),
                    "resource_link" => serde_json::from_value(v).map(Content::ResourceLink),
                    "resource" => serde_json::from_value(v).map(Content::Resource),
                    "tool_use" => serde_json::from_value(v).map(Content::ToolUse),
                    "tool_result" => serde_json::from_value(v).map(Content::ToolResult),
                    other => {
                        return Err(A::Error::unknown_variant(
                            other,
                            &[
                                "text",
                                "image",
                                "audio",
                                "resource_link",
                                "resource",
                                "tool_use",
                                "tool_result",
                            ],
                        ));
                    }
                };
                parsed.map_err(A::Error::custom)
            }
        }
        d.deserialize_map(V)
    }
}

/// `{"type":"text"}` content.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
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
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct MediaContent {
    /// Base64-encoded bytes.
    #[serde(serialize_with = "crate::verbatim::base64")]
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
