//! Compiled schemas of tools a handler lists, cached by their text (bounded), so that an
//! unchanged schema is compiled once however often its tool is called.

use std::collections::HashMap;
use std::sync::Arc;

use oxmcp_jsonrpc::ErrorObject;
use oxmcp_types::JsonObject;
use parking_lot::Mutex;

use crate::schema::CompiledSchema;

/// Schemas kept at most; past that, the oldest half is forgotten.
const CAPACITY: usize = 1024;

/// The cache: schema text to its compiled form, with the order they came in.
#[derive(Default)]
pub(crate) struct Validators {
    inner: Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    compiled: HashMap<String, (u64, Arc<CompiledSchema>)>,
    next: u64,
}

impl Validators {
    /// The compiled form of `schema`, compiled now if it is not cached.
    ///
    /// # Errors
    /// -32603 naming the tool when the schema does not compile.
    pub(crate) fn get(
        &self,
        tool: &str,
        schema: &JsonObject,
    ) -> Result<Arc<CompiledSchema>, ErrorObject> {
        let key = serde_json::Value::Object(schema.clone()).to_string();
        if let Some((_, c)) = self.inner.lock().compiled.get(&key) {
            return Ok(c.clone());
        }
        // Compiled outside the lock: other calls go on meanwhile.
        let compiled = CompiledSchema::compile(schema).map_err(|e| {
            ErrorObject::internal(format!("tool {tool}: its schema is unusable: {e}"))
        })?;
        let compiled = Arc::new(compiled);
        let mut cache = self.inner.lock();
        if cache.compiled.len() >= CAPACITY {
            let mut ages: Vec<u64> = cache.compiled.values().map(|(n, _)| *n).collect();
            ages.sort_unstable();
            let cut = ages[ages.len() / 2];
            cache.compiled.retain(|_, (n, _)| *n >= cut);
        }
        cache.next += 1;
        let n = cache.next;
        cache.compiled.insert(key, (n, compiled.clone()));
        Ok(compiled)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.inner.lock().compiled.len()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn schema(n: usize) -> JsonObject {
        serde_json::from_value(serde_json::json!({
            "type": "object",
            "properties": { format!("p{n}"): { "type": "string" } }
        }))
        .unwrap()
    }

    #[test]
    fn the_same_text_is_compiled_once_and_the_cache_stays_bounded() {
        let v = Validators::default();
        let a = v.get("t", &schema(0)).unwrap();
        let b = v.get("t", &schema(0)).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        for n in 0..(CAPACITY * 2) {
            v.get("t", &schema(n)).unwrap();
        }
        assert!(v.len() <= CAPACITY);
        let bad: JsonObject = serde_json::from_value(serde_json::json!({"type": 12})).unwrap();
        assert!(v.get("t", &bad).is_err());
    }
}
