//! Handlers' state: `state_scopes` (per scope: the last version given, its keys and bytes,
//! its expiry) and `state` (per key: value and version). A write or delete is one call of a
//! function that holds the scope's row, so two instances cannot both pass a limit or a
//! version check. A session's scope is `s:{id}`, deleted and renewed with the session; a
//! user's is `p:{hex}`.

use oxmcp_store::state::{
    self, Expect, Removed, StateError, StateLimits, StateScope, Stored, Written,
};

use crate::{Inner, big, hex, millis};

fn failed(e: oxmcp_store::StoreError) -> StateError {
    StateError::Store(e.to_string())
}

fn name(scope: &StateScope) -> String {
    match scope {
        StateScope::Session(id) => format!("s:{id}"),
        StateScope::Principal(p) => format!("p:{}", hex(p)),
    }
}

impl Inner {
    pub(crate) async fn state_get(
        &self,
        scope: &StateScope,
        key: &str,
    ) -> Result<Option<Stored>, StateError> {
        let rows = self
            .query(
                "SELECT st.value, st.version FROM {ns}.state st
                 JOIN {ns}.state_scopes sc USING (scope)
                 WHERE st.scope = $1 AND st.key = $2 AND sc.expires_at > now()",
                &[&name(scope), &key],
            )
            .await
            .map_err(failed)?;
        Ok(rows.first().map(|r| Stored {
            value: r.get(0),
            version: u64::try_from(r.get::<_, i64>(1)).unwrap_or(0),
        }))
    }

    pub(crate) async fn state_put(
        &self,
        scope: &StateScope,
        key: &str,
        value: &str,
        expect: Expect,
        limits: &StateLimits,
    ) -> Result<Written, StateError> {
        let (kind, v) = expect.codes();
        let v = big(v);
        let ttl = match scope {
            StateScope::Session(_) => millis(self.config.session_ttl),
            StateScope::Principal(_) => millis(limits.principal_ttl),
        };
        let max_keys = i32::try_from(limits.max_keys).unwrap_or(i32::MAX);
        let max_bytes = big(limits.max_scope_bytes as u64);
        let rows = self
            .query(
                "SELECT code, detail FROM {ns}.state_put($1, $2, $3, $4, $5, $6, $7, $8)",
                &[
                    &name(scope),
                    &key,
                    &value,
                    &kind,
                    &v,
                    &max_keys,
                    &max_bytes,
                    &ttl,
                ],
            )
            .await
            .map_err(failed)?;
        let row = rows
            .first()
            .ok_or_else(|| StateError::Store("state_put answered nothing".into()))?;
        let (code, detail): (i64, Option<i64>) = (row.get(0), row.get(1));
        state::written_from(code, detail, limits)
    }

    pub(crate) async fn state_remove(
        &self,
        scope: &StateScope,
        key: &str,
        expect: Expect,
    ) -> Result<Removed, StateError> {
        let (kind, v) = expect.codes();
        let v = big(v);
        let rows = self
            .query(
                "SELECT code, detail FROM {ns}.state_remove($1, $2, $3, $4)",
                &[&name(scope), &key, &kind, &v],
            )
            .await
            .map_err(failed)?;
        let row = rows
            .first()
            .ok_or_else(|| StateError::Store("state_remove answered nothing".into()))?;
        let (code, detail): (i64, Option<i64>) = (row.get(0), row.get(1));
        Ok(state::removed_from(code, detail))
    }

    pub(crate) async fn state_keys(&self, scope: &StateScope) -> Result<Vec<String>, StateError> {
        let rows = self
            .query(
                "SELECT st.key FROM {ns}.state st JOIN {ns}.state_scopes sc USING (scope)
                 WHERE st.scope = $1 AND sc.expires_at > now() ORDER BY st.key COLLATE \"C\"",
                &[&name(scope)],
            )
            .await
            .map_err(failed)?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    pub(crate) async fn state_clear(&self, scope: &StateScope) -> Result<(), StateError> {
        self.execute(
            "DELETE FROM {ns}.state_scopes WHERE scope = $1",
            &[&name(scope)],
        )
        .await
        .map_err(failed)?;
        Ok(())
    }
}
