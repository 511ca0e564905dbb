//! `elicitation/create` (server asks the user through the client).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::{JsonObject, ResultType};

/// Params of `elicitation/create`: form mode (`requestedSchema`) or URL mode (`url`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct ElicitParams {
    /// `"form"` (default when absent) or `"url"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// What to tell the user.
    pub message: String,
    /// Form mode: flat object schema of the fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_schema: Option<JsonObject>,
    /// URL mode: where to send the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// URL mode: id of this elicitation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ElicitParams {
    /// A form-mode elicitation: ask the user `message`, with the fields of `schema` (a flat
    /// object schema; anything else is sent without a schema).
    pub fn form(message: impl Into<String>, schema: Value) -> Self {
        Self {
            mode: Some("form".to_owned()),
            message: message.into(),
            requested_schema: match schema {
                Value::Object(m) => Some(m),
                _ => None,
            },
            ..Self::default()
        }
    }

    /// A URL-mode elicitation: send the user to `url` (out of band), identified by `id`.
    pub fn url(id: impl Into<String>, url: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            mode: Some("url".to_owned()),
            message: message.into(),
            url: Some(url.into()),
            elicitation_id: Some(id.into()),
            ..Self::default()
        }
    }
}

/// Params of `notifications/elicitation/complete` (2025-11-25): the out-of-band interaction
/// of a URL-mode elicitation is done.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct ElicitationCompleteParams {
    /// The `elicitationId` of the URL-mode elicitation.
    pub elicitation_id: String,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The data of a -32042 error (URL elicitation required, 2025-11-25): the URL-mode
/// elicitations to complete before the request is retried.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct UrlElicitationRequired {
    /// Each a URL-mode elicitation with its `elicitationId`.
    pub elicitations: Vec<ElicitParams>,
}

/// The user's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Submitted.
    Accept,
    /// Explicitly declined.
    Decline,
    /// Dismissed.
    Cancel,
}

/// Result of `elicitation/create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct ElicitResult {
    /// 2026-07-28 result kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// What the user did.
    pub action: ElicitAction,
    /// Form values when accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<JsonObject>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ElicitResult {
    /// The user accepted, with these form values.
    pub fn accept(content: JsonObject) -> Self {
        Self::answer(ElicitAction::Accept, Some(content))
    }

    /// The user declined.
    pub fn decline() -> Self {
        Self::answer(ElicitAction::Decline, None)
    }

    /// The user dismissed the request without choosing.
    pub fn cancel() -> Self {
        Self::answer(ElicitAction::Cancel, None)
    }

    fn answer(action: ElicitAction, content: Option<JsonObject>) -> Self {
        Self {
            result_type: None,
            action,
            content,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// Fills in `default` values from a form schema for fields the user left out.
pub fn apply_schema_defaults(schema: &JsonObject, content: &mut JsonObject) {
    let Some(Value::Object(props)) = schema.get("properties") else {
        return;
    };
    for (name, prop) in props {
        if content.contains_key(name) {
            continue;
        }
        if let Some(default) = prop.get("default") {
            content.insert(name.clone(), default.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_fill_only_missing_fields() {
        let schema = json!({"type":"object","properties":{
            "name":{"type":"string","default":"anon"},
            "age":{"type":"integer","default":30},
            "email":{"type":"string"}}});
        let mut content = json!({"name":"bob"}).as_object().cloned().unwrap();
        apply_schema_defaults(schema.as_object().unwrap(), &mut content);
        assert_eq!(Value::Object(content), json!({"name":"bob","age":30}));
    }
}
