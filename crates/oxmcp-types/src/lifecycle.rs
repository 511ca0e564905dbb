//! The legacy handshake (`initialize`) and capabilities.

use serde::{Deserialize, Serialize};

use crate::common::{Implementation, JsonObject};

/// A `{ "listChanged": bool }` capability.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct ListChangedCapability {
    /// Whether list-changed notifications are sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The resources capability.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct ResourcesCapability {
    /// `resources/subscribe` is supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// List-changed notifications are sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// What a client supports.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct ClientCapabilities {
    /// `roots/list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<ListChangedCapability>,
    /// `sampling/createMessage` (sub-capabilities as an object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<JsonObject>,
    /// `elicitation/create` (`form`, `url` sub-objects; empty means form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<JsonObject>,
    /// Experimental capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<JsonObject>,
    /// Extensions supported (SEP-2133; a 2026-07-28 field, sent in every era): identifier
    /// (`io.modelcontextprotocol/tasks`, ...) to its settings, `{}` for none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<std::collections::BTreeMap<String, JsonObject>>,
    /// Unmodelled fields (the 2025-11-25 `tasks`, ...).
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// What a server supports.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct ServerCapabilities {
    /// Tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ListChangedCapability>,
    /// Resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// Prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<ListChangedCapability>,
    /// `logging/setLevel` and log notifications.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<JsonObject>,
    /// `completion/complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<JsonObject>,
    /// Experimental capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<JsonObject>,
    /// Extensions supported (SEP-2133; a 2026-07-28 field, sent in every era): identifier
    /// (`io.modelcontextprotocol/tasks`, ...) to its settings, `{}` for none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<std::collections::BTreeMap<String, JsonObject>>,
    /// Unmodelled fields (the 2025-11-25 `tasks`, ...).
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Params of `initialize`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct InitializeParams {
    /// The version the client wants (any string; negotiation handles unknown ones).
    pub protocol_version: String,
    /// Client capabilities.
    pub capabilities: ClientCapabilities,
    /// Client name and version.
    pub client_info: Implementation,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Result of `initialize`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct InitializeResult {
    /// The negotiated version.
    pub protocol_version: String,
    /// Server capabilities.
    pub capabilities: ServerCapabilities,
    /// Server name and version.
    pub server_info: Implementation,
    /// Usage hints for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Whether `extensions` (of a [`ClientCapabilities`] or [`ServerCapabilities`]) declares `id`.
pub fn declares_extension(
    extensions: Option<&std::collections::BTreeMap<String, JsonObject>>,
    id: &str,
) -> bool {
    extensions.is_some_and(|e| e.contains_key(id))
}
