//! Task records in Redis: `ns:task:{id}` (the record, expiring with the task) and
//! `ns:tasks:{owner}` (a sorted set of ids by creation, for listing; members whose record
//! has expired are dropped when listed).

use oxmcp_store::{StoreResult, StoredTask};

use super::{RedisStore, unavailable};

/// The owner index's name for tasks of nobody in particular.
const NOBODY: &str = "-";

impl RedisStore {
    fn task_key(&self, id: &str) -> String {
        format!("{}:task:{id}", self.inner.config.namespace)
    }

    fn owner_key(&self, owner: Option<&str>) -> String {
        // The owner is hex-encoded: any subject is a safe key part.
        let owner = owner.map_or_else(
            || NOBODY.to_owned(),
            |o| o.bytes().map(|b| format!("{b:02x}")).collect(),
        );
        format!("{}:tasks:{owner}", self.inner.config.namespace)
    }

    pub(crate) async fn task_put(&self, task: &StoredTask) -> StoreResult<()> {
        let ttl = task.expires_ms.saturating_sub(oxmcp_store::now_ms()).max(1);
        let index = self.owner_key(task.owner.as_deref());
        let mut p = redis::pipe();
        p.cmd("SET")
            .arg(self.task_key(&task.id))
            .arg(&task.json)
            .arg("PX")
            .arg(ttl)
            .ignore();
        p.zadd(&index, &task.id, task.created_ms).ignore();
        // The index lives as long as its longest-lived task.
        p.cmd("PEXPIRE").arg(&index).arg(ttl).arg("GT").ignore();
        p.cmd("PEXPIRE").arg(&index).arg(ttl).arg("NX").ignore();
        self.inner.conn.pipe::<()>(&p).await.map_err(unavailable)
    }

    pub(crate) async fn task_get(&self, id: &str) -> StoreResult<Option<String>> {
        self.inner
            .conn
            .cmd(redis::cmd("GET").arg(self.task_key(id)))
            .await
            .map_err(unavailable)
    }

    pub(crate) async fn task_list(
        &self,
        owner: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<String>> {
        let index = self.owner_key(owner);
        if limit == 0 {
            return Ok(Vec::new());
        }
        let last = i64::try_from(limit - 1).unwrap_or(i64::MAX);
        let ids: Vec<String> = self
            .inner
            .conn
            .cmd(redis::cmd("ZRANGE").arg(&index).arg(0).arg(last))
            .await
            .map_err(unavailable)?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut p = redis::pipe();
        for id in &ids {
            // One GET per key: a Cluster pipeline routes each to its slot.
            p.get(self.task_key(id));
        }
        let records: Vec<Option<String>> = self.inner.conn.pipe(&p).await.map_err(unavailable)?;
        let gone: Vec<&String> = ids
            .iter()
            .zip(&records)
            .filter(|(_, r)| r.is_none())
            .map(|(id, _)| id)
            .collect();
        if !gone.is_empty() {
            let mut cmd = redis::cmd("ZREM");
            cmd.arg(&index).arg(gone);
            self.inner.conn.cmd::<()>(&cmd).await.map_err(unavailable)?;
        }
        // Expired members were dropped: this page may come out shorter than `limit`.
        Ok(records.into_iter().flatten().collect())
    }

    pub(crate) async fn task_delete(&self, id: &str) -> StoreResult<()> {
        // The index entry goes when the task is next listed.
        self.inner
            .conn
            .cmd::<()>(redis::cmd("DEL").arg(self.task_key(id)))
            .await
            .map_err(unavailable)
    }
}
