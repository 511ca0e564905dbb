//! `completion/complete`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::common::{JsonObject, ResultType};

/// What is being completed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum CompletionReference {
    /// A prompt argument.
    #[serde(rename = "ref/prompt")]
    Prompt {
        /// Prompt name.
        name: String,
    },
    /// A resource template variable.
    #[serde(rename = "ref/resource")]
    Resource {
        /// The URI template.
        uri: String,
    },
}

/// The argument being completed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct CompletionArgument {
    /// Argument name.
    pub name: String,
    /// What the user typed so far.
    pub value: String,
}

/// Already-resolved arguments (2025-06-18+).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct CompletionContext {
    /// Argument values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
}

/// Params of `completion/complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct CompleteParams {
    /// The reference.
    #[serde(rename = "ref")]
    pub reference: CompletionReference,
    /// The argument.
    pub argument: CompletionArgument,
    /// Context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompletionContext>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CompleteParams {
    /// Completes `argument` of the prompt or resource template `reference`.
    pub fn new(reference: CompletionReference, argument: CompletionArgument) -> Self {
        Self {
            reference,
            argument,
            context: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// Completion values.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct Completion {
    /// Suggestions (at most 100).
    pub values: Vec<String>,
    /// Total number available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether more exist beyond `values`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

/// Result of `completion/complete`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct CompleteResult {
    /// 2026-07-28 result kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The completion.
    pub completion: Completion,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}
