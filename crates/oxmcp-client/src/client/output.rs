//! Client-side checking of tool results: `structuredContent` against the tool's
//! `outputSchema` (as listed by `tools/list`), as the specification asks clients to.

use std::collections::HashMap;
use std::sync::Arc;

use oxmcp_engine::CallError;
use oxmcp_types::{CallToolResult, Tool};

/// Most schema violations named in one error.
const MAX_REPORTED: usize = 5;

/// The output schemas of the tools listed so far, compiled when first needed, and whether
/// each tool takes tasks.
#[derive(Default)]
pub(super) struct OutputSchemas {
    schemas: parking_lot::Mutex<HashMap<String, Entry>>,
    task_support: parking_lot::Mutex<HashMap<String, oxmcp_types::TaskSupport>>,
}

enum Entry {
    Raw(serde_json::Value),
    Compiled(Arc<jsonschema::Validator>),
    /// The schema does not compile: results are not checked (with a warning, once).
    Unusable,
}

impl OutputSchemas {
    /// Learns the output schemas of a fresh tool list (tools without one are forgotten).
    pub(super) fn learn(&self, tools: &[Tool]) {
        {
            let mut support = self.task_support.lock();
            for t in tools {
                support.insert(t.name.clone(), t.task_support());
            }
        }
        let mut schemas = self.schemas.lock();
        for t in tools {
            match &t.output_schema {
                Some(s) => {
                    schemas.insert(
                        t.name.clone(),
                        Entry::Raw(serde_json::Value::Object(s.clone())),
                    );
                }
                None => {
                    schemas.remove(&t.name);
                }
            }
        }
    }

    /// Whether `tool` takes tasks, as last listed (`None`: not listed).
    pub(super) fn task_support(&self, tool: &str) -> Option<oxmcp_types::TaskSupport> {
        self.task_support.lock().get(tool).copied()
    }

    fn validator(&self, tool: &str) -> Option<Arc<jsonschema::Validator>> {
        let mut schemas = self.schemas.lock();
        let entry = schemas.get_mut(tool)?;
        if let Entry::Raw(raw) = entry {
            *entry = match jsonschema::validator_for(raw) {
                Ok(v) => Entry::Compiled(Arc::new(v)),
                Err(e) => {
                    tracing::warn!(
                        tool,
                        "the tool's outputSchema does not compile ({e}); its results are not checked"
                    );
                    Entry::Unusable
                }
            };
        }
        match entry {
            Entry::Compiled(v) => Some(v.clone()),
            _ => None,
        }
    }

    /// Checks a successful result of `tool`: with an output schema it must carry
    /// `structuredContent` that matches it. Error results (`isError`) are not checked.
    pub(super) fn check(&self, tool: &str, result: &CallToolResult) -> Result<(), CallError> {
        if result.is_error == Some(true) {
            return Ok(());
        }
        let Some(validator) = self.validator(tool) else {
            return Ok(());
        };
        let Some(structured) = &result.structured_content else {
            return Err(CallError::Protocol(format!(
                "tool {tool:?} declares an outputSchema but returned no structuredContent"
            )));
        };
        let errors: Vec<String> = validator
            .iter_errors(structured)
            .take(MAX_REPORTED)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(CallError::Protocol(format!(
                "the structuredContent of tool {tool:?} does not match its outputSchema: {}",
                errors.join("; ")
            )))
        }
    }
}
