//! Deleting what expired, by the instances themselves (no cron): every few seconds, in
//! batches of short transactions, one instance at a time (a try-lock per batch: the others
//! skip that round).

use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::{Inner, millis};

/// How often an instance sweeps.
const EVERY: Duration = Duration::from_secs(3);

/// Rows one statement deletes at most (each batch is its own short transaction).
const BATCH: i64 = 1_000;

/// Batches per table and round: a backlog goes over a few rounds, never in one long
/// transaction.
const BATCHES: usize = 50;

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

/// What expires, table by table: each statement deletes at most `$1` rows; `$2` is the
/// table's own parameter (a time in ms).
const SWEEPS: &[&str] = &[
    // Sessions, with their pending requests, streams and events.
    "DELETE FROM {ns}.sessions WHERE id IN (
       SELECT id FROM {ns}.sessions WHERE expires_at <= now() LIMIT $1)",
    // Events of streams idle past the stream TTL (the stream's row stays with its session).
    "DELETE FROM {ns}.events WHERE (session, stream, seq) IN (
       SELECT e.session, e.stream, e.seq FROM {ns}.events e
       JOIN {ns}.streams s USING (session, stream) WHERE s.expires_at <= now() LIMIT $1)",
    "DELETE FROM {ns}.state_scopes WHERE scope IN (
       SELECT scope FROM {ns}.state_scopes WHERE expires_at <= now() LIMIT $1)",
    "DELETE FROM {ns}.tasks WHERE id IN (
       SELECT id FROM {ns}.tasks WHERE expires_ms <= $2 LIMIT $1)",
    "DELETE FROM {ns}.bus WHERE seq IN (
       SELECT seq FROM {ns}.bus WHERE at < now() - $2::bigint * interval '1 millisecond' LIMIT $1)",
    "DELETE FROM {ns}.nodes WHERE instance IN (
       SELECT instance FROM {ns}.nodes
       WHERE beat_at < now() - $2::bigint * interval '1 millisecond' LIMIT $1)",
];

impl Inner {
    /// Deletes expired sessions (with their pending requests and streams), events of idle
    /// streams, handler state, tasks, bus events older than `parcel_ttl`, and old
    /// heartbeats.
    pub(crate) async fn sweep(&self) -> oxmcp_store::StoreResult<()> {
        let now_ms = crate::big(oxmcp_store::now_ms());
        let params = [
            0,
            0,
            0,
            now_ms,
            millis(self.config.parcel_ttl),
            NODES_KEPT_MS,
        ];
        for (sql, param) in SWEEPS.iter().zip(params) {
            for _ in 0..BATCHES {
                match self.sweep_batch(sql, param).await? {
                    None => return Ok(()),
                    Some(n) if n < BATCH as u64 => break,
                    Some(_) => {}
                }
            }
        }
        Ok(())
    }

    /// One batch in its own transaction: the rows deleted, or `None` when another instance
    /// is sweeping.
    async fn sweep_batch(&self, sql: &str, param: i64) -> oxmcp_store::StoreResult<Option<u64>> {
        self.timed(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(crate::unavailable)?;
            self.counted();
            let locked = tx
                .query_one(
                    &self.sql("SELECT pg_try_advisory_xact_lock(hashtext('{ns}.sweep'))"),
                    &[],
                )
                .await
                .map_err(crate::unavailable)?;
            if !locked.get::<_, bool>(0) {
                return Ok(None);
            }
            self.counted();
            let sql = self.sql(sql);
            let n = if sql.contains("$2") {
                tx.execute(&sql, &[&BATCH, &param]).await
            } else {
                tx.execute(&sql, &[&BATCH]).await
            }
            .map_err(crate::unavailable)?;
            tx.commit().await.map_err(crate::unavailable)?;
            Ok(Some(n))
        })
        .await
    }
}
