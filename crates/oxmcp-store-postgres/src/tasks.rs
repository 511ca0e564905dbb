//! Task records: the server's JSON, indexed by owner (hex-encoded) and creation.

use oxmcp_store::{StoreResult, StoredTask};

use crate::{Inner, big, hex};

impl Inner {
    pub(crate) async fn put_task(&self, t: &StoredTask) -> StoreResult<()> {
        let owner = t.owner.as_deref().map(hex);
        self.execute(
            "INSERT INTO {ns}.tasks (id, owner, created_ms, expires_ms, json)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (id) DO UPDATE SET owner = EXCLUDED.owner,
               created_ms = EXCLUDED.created_ms, expires_ms = EXCLUDED.expires_ms,
               json = EXCLUDED.json",
            &[
                &t.id,
                &owner,
                &big(t.created_ms),
                &big(t.expires_ms),
                &t.json,
            ],
        )
        .await?;
        Ok(())
    }

    pub(crate) async fn get_task(&self, id: &str) -> StoreResult<Option<String>> {
        // A client's id with a NUL (which PostgreSQL's text cannot hold) names no task.
        if id.contains('\0') {
            return Ok(None);
        }
        let rows = self
            .query(
                "SELECT json FROM {ns}.tasks WHERE id = $1 AND expires_ms > $2",
                &[&id, &big(oxmcp_store::now_ms())],
            )
            .await?;
        Ok(rows.first().map(|r| r.get(0)))
    }

    pub(crate) async fn list_tasks(
        &self,
        owner: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<String>> {
        let owner = owner.map(hex);
        let rows = self
            .query(
                "SELECT json FROM {ns}.tasks
                 WHERE owner IS NOT DISTINCT FROM $1 AND expires_ms > $2
                 ORDER BY created_ms, id LIMIT $3",
                &[&owner, &big(oxmcp_store::now_ms()), &big(limit as u64)],
            )
            .await?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    pub(crate) async fn delete_task(&self, id: &str) -> StoreResult<()> {
        if id.contains('\0') {
            return Ok(());
        }
        self.execute("DELETE FROM {ns}.tasks WHERE id = $1", &[&id])
            .await?;
        Ok(())
    }
}
