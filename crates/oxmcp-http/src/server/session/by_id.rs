//! A table by request id that most sessions never fill: boxed, and there only while it holds
//! something, so an idle session holds a pointer instead of an empty table.

use std::collections::HashMap;

use oxmcp_jsonrpc::RequestId;

/// Values by request id, allocated on the first insert and freed when the last one goes.
#[expect(
    clippy::box_collection,
    reason = "a pointer in every session; the table's 48 bytes only while it holds something"
)]
pub(super) struct ById<V>(Option<Box<HashMap<RequestId, V>>>);

impl<V> Default for ById<V> {
    fn default() -> Self {
        Self(None)
    }
}

impl<V> ById<V> {
    pub(super) fn insert(&mut self, id: RequestId, value: V) {
        self.0.get_or_insert_default().insert(id, value);
    }

    pub(super) fn remove(&mut self, id: &RequestId) -> Option<V> {
        let map = self.0.as_mut()?;
        let value = map.remove(id);
        if map.is_empty() {
            self.0 = None;
        }
        value
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_none()
    }
}
