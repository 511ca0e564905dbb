//! Deleting what expired, by the instances themselves (no cron): every few seconds, one
//! instance at a time (a try-lock: the others skip that round).

use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::{Inner, millis};

/// How often an instance sweeps.
const EVERY: Duration = Duration::from_secs(3);

/// Heartbeats kept after the last (so that a dead instance is known dead meanwhile).
const NODES_KEPT_MS: i64 = 3_600_000;

pub(crate) fn start(inner: &Arc<Inner>) {
    tokio::spawn(run(Arc::downgrade(inner)));
}

async fn run(inner: Weak<Inner>) {
    loop {
        tokio::time::sleep(EVERY).await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        if let Err(e) = inner.sweep().await {
            tracing::debug!("expired rows not deleted this round: {e}");
        }
    }
}

impl Inner {
    /// Deletes expired sessions (with their pending requests and streams), streams, handler
    /// state, tasks, bus events older than `parcel_ttl`, and old heartbeats.
    pub(crate) async fn sweep(&self) -> oxmcp_store::StoreResult<()> {
        let bus_kept = millis(self.config.parcel_ttl);
        self.timed(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(crate::unavailable)?;
            let locked = tx
                .query_one(
                    &self.sql("SELECT pg_try_advisory_xact_lock(hashtext('{ns}.sweep'))"),
                    &[],
                )
                .await
                .map_err(crate::unavailable)?;
            if !locked.get::<_, bool>(0) {
                return Ok(());
            }
            let now_ms = crate::big(oxmcp_store::now_ms());
            for (sql, param) in [
                ("DELETE FROM {ns}.sessions WHERE expires_at <= now()", None),
                ("DELETE FROM {ns}.streams WHERE expires_at <= now()", None),
                ("DELETE FROM {ns}.state_scopes WHERE expires_at <= now()", None),
                ("DELETE FROM {ns}.tasks WHERE expires_ms <= $1", Some(now_ms)),
                (
                    "DELETE FROM {ns}.bus WHERE at < now() - $1::bigint * interval '1 millisecond'",
                    Some(bus_kept),
                ),
                (
                    "DELETE FROM {ns}.nodes WHERE beat_at < now() - $1::bigint * interval '1 millisecond'",
                    Some(NODES_KEPT_MS),
                ),
            ] {
                self.counted();
                match param {
                    Some(p) => tx.execute(&self.sql(sql), &[&p]).await,
                    None => tx.execute(&self.sql(sql), &[]).await,
                }
                .map_err(crate::unavailable)?;
            }
            tx.commit().await.map_err(crate::unavailable)
        })
        .await
    }
}
