//! Resources: list, read, templates, subscriptions.

use serde::{Deserialize, Serialize};

use crate::common::{Annotations, CacheScope, Cursor, JsonObject, ResultType};

/// A resource the server can read.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct Resource {
    /// Its URI.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons a client may show (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<crate::common::Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A parameterised resource (RFC 6570 URI template).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct ResourceTemplate {
    /// The URI template.
    pub uri_template: String,
    /// Programmatic name.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type of matching resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons a client may show (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<crate::common::Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The contents of a resource: text or base64 blob.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct ResourceContents {
    /// The resource URI.
    pub uri: String,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Text contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Base64 contents.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::verbatim::base64_opt"
    )]
    pub blob: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ResourceContents {
    /// Text contents.
    pub fn text(uri: impl Into<String>, mime: Option<&str>, text: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            mime_type: mime.map(str::to_owned),
            text: Some(text.into()),
            ..Self::default()
        }
    }
}

macro_rules! list_result {
    ($(#[$doc:meta])* $name:ident, $field:ident, $item:ty) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            /// 2026-07-28 result kind.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub result_type: Option<ResultType>,
            /// The items on this page.
            pub $field: Vec<$item>,
            /// Cursor of the next page.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub next_cursor: Option<Cursor>,
            /// Cache lifetime in ms (2026-07-28).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub ttl_ms: Option<u64>,
            /// Cache scope (2026-07-28).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub cache_scope: Option<CacheScope>,
            /// Metadata.
            #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
            pub meta: Option<JsonObject>,
            /// Unmodelled fields.
            #[serde(flatten)]
            pub extra: JsonObject,
        }
    };
}
pub(crate) use list_result;

list_result!(
    /// Result of `resources/list`.
    ListResourcesResult, resources, Resource
);
list_result!(
    /// Result of `resources/templates/list`.
    ListResourceTemplatesResult, resource_templates, ResourceTemplate
);

/// Params naming one resource: `resources/read`, `resources/subscribe`,
/// `resources/unsubscribe`, `notifications/resources/updated`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct ResourceUriParams {
    /// The resource URI.
    pub uri: String,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ResourceUriParams {
    /// Params for `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            ..Self::default()
        }
    }
}

/// Result of `resources/read`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct ReadResourceResult {
    /// 2026-07-28 result kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Contents (a template may yield several).
    pub contents: Vec<ResourceContents>,
    /// Cache lifetime in ms (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Cache scope (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}
