//! Types shared by every method family: implementation info, annotations, `_meta`, roles,
//! progress tokens, result kinds and cache hints.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A JSON object (`{...}`), used for `_meta`, schemas and free-form maps.
pub type JsonObject = serde_json::Map<String, Value>;

/// An opaque pagination cursor.
pub type Cursor = String;

/// Well-known `_meta` keys.
pub mod meta_keys {
    /// Progress token of a request (`_meta.progressToken`).
    pub const PROGRESS_TOKEN: &str = "progressToken";
    /// 2026-07-28: the protocol version of a self-describing request.
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// 2026-07-28: client info of a self-describing request.
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// 2026-07-28: client capabilities of a self-describing request.
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// 2026-07-28: per-request log level.
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// 2026-07-28: server info attached to results.
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// 2026-07-28: subscription id on notifications delivered via `subscriptions/listen`.
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
}

/// Name and version of a client or server implementation.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Human-readable title (2025-06-18+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Icons a client may show (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<crate::common::Icon>>,
    /// Fields this crate does not model (description, websiteUrl, ...), kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// An icon a client may show for a tool, prompt, resource, template or implementation
/// (2025-11-25).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct Icon {
    /// Where the image is: an `https:` URL or a `data:` URI. Clients should load icons only
    /// from their server's or another trusted domain, and treat SVG as active content.
    pub src: String,
    /// The image's MIME type, when the source does not say it (`image/png`, `image/svg+xml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The sizes it fits, as `WxH` (`"48x48"`) or `"any"`; any size when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// `"light"` or `"dark"`: the background it is drawn for; any when absent. Kept as text,
    /// so a value from a later revision does not make a whole list unreadable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Icon {
    /// An icon at `src`.
    pub fn new(src: impl Into<String>) -> Self {
        Self {
            src: src.into(),
            ..Self::default()
        }
    }
}

impl Implementation {
    /// An implementation with a name and a version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            ..Self::default()
        }
    }
}

/// Who a message or annotation is meant for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The assistant (model).
    Assistant,
}

/// Optional annotations on content and resources.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct Annotations {
    /// Intended audience.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance from 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// ISO 8601 time of last modification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A progress token: a string or an integer chosen by the requester.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ProgressToken {
    /// Integer token.
    Number(i64),
    /// String token.
    String(String),
}

/// `resultType` of a 2026-07-28 result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultType {
    /// The request is complete.
    Complete,
    /// The server needs client input first (MRTR).
    InputRequired,
}

/// Who may cache a cacheable result (2026-07-28).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// Any client may share the cached value.
    Public,
    /// Only the requesting principal.
    Private,
}

/// An empty result (`{}`), with optional `_meta`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct EmptyResult {
    /// 2026-07-28 result kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Params of a request that takes nothing but `_meta`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct EmptyParams {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Params of a paginated list request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct PaginatedParams {
    /// Where to continue from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<Cursor>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Reads `_meta.progressToken` from a params object.
pub fn progress_token(meta: Option<&JsonObject>) -> Option<ProgressToken> {
    meta.and_then(|m| m.get(meta_keys::PROGRESS_TOKEN))
        .and_then(|v| serde_json::from_value(v.clone()).ok())
}
