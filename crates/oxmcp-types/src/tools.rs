//! `tools/list`, `tools/call` and tool definitions.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::{CacheScope, Cursor, JsonObject, ResultType};
use crate::content::Content;
use crate::wire::fast_deserialize;

fast_deserialize!(CallToolParams {
    "name" => name, "arguments" => arguments, "_meta" => meta,
} required ["name"]);

fast_deserialize!(CallToolResult {
    "resultType" => result_type, "content" => content, "structuredContent" => structured_content,
    "isError" => is_error, "_meta" => meta,
} required []);

/// A tool the server offers.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct Tool {
    /// Unique name.
    pub name: String,
    /// Display title (2025-06-18+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments (an object schema).
    pub input_schema: JsonObject,
    /// JSON Schema of `structuredContent` (2025-06-18+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<JsonObject>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons a client may show (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<crate::common::Icon>>,
    /// How the tool runs (2025-11-25: `taskSupport`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<crate::tasks::ToolExecution>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The longest tool name SEP-986 (2025-11-25, "Tool Names") recommends.
pub const MAX_TOOL_NAME: usize = 128;

/// Why `name` is not a tool name as SEP-986 recommends (1 to 128 characters, each an ASCII
/// letter, digit, `_`, `-` or `.`; case-sensitive), or `None` when it is one.
pub fn tool_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("a tool name may not be empty".to_owned());
    }
    if name.len() > MAX_TOOL_NAME {
        return Some(format!(
            "a tool name has at most {MAX_TOOL_NAME} characters (this one {})",
            name.chars().count()
        ));
    }
    let bad = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))?;
    Some(format!(
        "a tool name uses only ASCII letters, digits, _, - and . (not {bad:?})"
    ))
}

impl Tool {
    /// Whether the tool runs as a task (`execution.taskSupport`; forbidden when absent).
    pub fn task_support(&self) -> crate::tasks::TaskSupport {
        self.execution
            .as_ref()
            .and_then(|e| e.task_support)
            .unwrap_or_default()
    }

    /// The `x-mcp-header` annotations of the top-level input properties, as
    /// `(header name, property name)` pairs: 2026-07-28 mirrors these arguments into
    /// `Mcp-Param-{Name}` HTTP headers.
    pub fn header_params(&self) -> Vec<(String, String)> {
        let Some(serde_json::Value::Object(props)) = self.input_schema.get("properties") else {
            return Vec::new();
        };
        props
            .iter()
            .filter_map(|(prop, schema)| {
                let header = schema.get("x-mcp-header")?.as_str()?;
                Some((header.to_owned(), prop.clone()))
            })
            .collect()
    }
}

/// Hints about a tool's behaviour. Untrusted unless the server is.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct ToolAnnotations {
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling twice with the same arguments has no extra effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool talks to an open world of entities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Result of `tools/list`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct ListToolsResult {
    /// 2026-07-28 result kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The tools on this page.
    pub tools: Vec<Tool>,
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

/// Params of `tools/call`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct CallToolParams {
    /// Tool name.
    pub name: String,
    /// Arguments object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonObject>,
    /// Metadata (progress token, 2026 client info, ...).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unmodelled fields (task, inputResponses, requestState, ...).
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CallToolParams {
    /// Params calling `name` with `arguments`.
    pub fn new(name: impl Into<String>, arguments: JsonObject) -> Self {
        Self {
            name: name.into(),
            arguments: Some(arguments),
            ..Self::default()
        }
    }
}

/// Result of `tools/call`. A tool failure is `is_error: true`, not a JSON-RPC error.
#[derive(Debug, Clone, PartialEq, Default, Serialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct CallToolResult {
    /// 2026-07-28 result kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Unstructured content.
    pub content: Vec<Content>,
    /// Structured content matching the tool's `outputSchema`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CallToolResult {
    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(text)],
            ..Self::default()
        }
    }

    /// A successful result with the given content.
    pub fn success(content: Vec<Content>) -> Self {
        Self {
            content,
            ..Self::default()
        }
    }

    /// A failed tool run (`isError: true`) with a text explanation.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(text)],
            is_error: Some(true),
            ..Self::default()
        }
    }

    /// Whether this result reports a tool failure.
    pub fn failed(&self) -> bool {
        self.is_error == Some(true)
    }
}

#[cfg(test)]
mod name_tests {
    use super::*;

    #[test]
    fn sep_986_names() {
        for ok in [
            "getUser",
            "DATA_EXPORT_v2",
            "admin.tools.list",
            "a",
            "x-y_z.0",
        ] {
            assert_eq!(tool_name_problem(ok), None, "{ok}");
        }
        assert_eq!(tool_name_problem(&"a".repeat(128)), None);
        for bad in ["", "get user", "a,b", "naïve", "tool/x", "a:b", "tab\t"] {
            assert!(tool_name_problem(bad).is_some(), "{bad:?}");
        }
        assert!(tool_name_problem(&"a".repeat(129)).unwrap().contains("128"));
    }
}
