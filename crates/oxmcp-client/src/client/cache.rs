//! Cacheable list pages (2026-07-28 results with `ttlMs`), dropped when the list changes.

use std::sync::Arc;
use std::time::Duration;

use oxmcp_engine::CallError;
use oxmcp_types::PaginatedParams;
use oxmcp_types::methods::Request as RequestMethod;
use serde_json::Value;

use super::Client;

pub(super) type ListCache = Arc<parking_lot::Mutex<ListPages>>;

/// Cached list pages (2026-07-28 cacheable results), by method and cursor, until `ttlMs`.
#[derive(Debug, Default)]
pub(super) struct ListPages {
    pub(super) pages:
        std::collections::HashMap<(&'static str, Option<String>), (tokio::time::Instant, Value)>,
}

impl ListPages {
    pub(super) fn get(&self, method: &'static str, cursor: &Option<String>) -> Option<Value> {
        let (until, v) = self.pages.get(&(method, cursor.clone()))?;
        (tokio::time::Instant::now() < *until).then(|| v.clone())
    }

    pub(super) fn forget(&mut self, methods: &[&str]) {
        self.pages.retain(|(m, _), _| !methods.contains(m));
    }
}

impl Client {
    /// One page of a paginated list method the server must have declared.
    pub(super) async fn page<R: RequestMethod<Params = PaginatedParams>>(
        &self,
        supported: bool,
        what: &str,
        cursor: Option<String>,
    ) -> Result<R::Result, CallError> {
        self.require(supported, what)?;
        if let Some(v) = self.list_cache.lock().get(R::METHOD, &cursor) {
            return Ok(serde_json::from_value(v)?);
        }
        let result = self
            .call::<R>(&PaginatedParams::default().with_cursor(cursor.clone()))
            .await?;
        // Cacheable results (2026-07-28) may be reused for ttlMs.
        let value = serde_json::to_value(&result)?;
        if let Some(ms) = value
            .get("ttlMs")
            .and_then(Value::as_u64)
            .filter(|ms| *ms > 0)
        {
            let until = tokio::time::Instant::now() + Duration::from_millis(ms);
            let mut cache = self.list_cache.lock();
            cache.pages.insert((R::METHOD, cursor), (until, value));
        }
        Ok(result)
    }
}
