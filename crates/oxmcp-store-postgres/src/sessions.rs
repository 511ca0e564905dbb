//! Sessions (one row each, the record as JSON), their request-id blocks and pending requests
//! to the client, heartbeats and shared secrets.

use oxmcp_store::{SessionRecord, StateChange, StoreError, StoreResult};

use crate::{Inner, millis, unavailable};

fn decode(json: &str) -> StoreResult<SessionRecord> {
    serde_json::from_str(json).map_err(|e| StoreError::Protocol(format!("session record: {e}")))
}

impl Inner {
    fn session_ttl(&self) -> i64 {
        millis(self.config.session_ttl)
    }

    pub(crate) async fn create_session(&self, id: &str, r: &SessionRecord) -> StoreResult<()> {
        r.check_size(self.config.max_record)?;
        let json = serde_json::to_string(r).map_err(|e| StoreError::Protocol(e.to_string()))?;
        self.execute(
            "INSERT INTO {ns}.sessions (id, record, blocks, expires_at)
             VALUES ($1, $2, 0, now() + $3::bigint * interval '1 millisecond')
             ON CONFLICT (id) DO UPDATE SET record = EXCLUDED.record,
               expires_at = EXCLUDED.expires_at",
            &[&id, &json, &self.session_ttl()],
        )
        .await?;
        Ok(())
    }

    pub(crate) async fn load_session(&self, id: &str) -> StoreResult<Option<SessionRecord>> {
        let rows = self
            .query(
                "SELECT record FROM {ns}.sessions WHERE id = $1 AND expires_at > now()",
                &[&id],
            )
            .await?;
        rows.first()
            .map(|r| decode(r.get::<_, &str>(0)))
            .transpose()
    }

    /// Renews the session's expiry, and its handler state's.
    pub(crate) async fn touch_session(&self, id: &str) -> StoreResult<bool> {
        let rows = self
            .query(
                "WITH t AS (
                   UPDATE {ns}.sessions SET expires_at = now() + $2::bigint * interval '1 millisecond'
                   WHERE id = $1 AND expires_at > now() RETURNING id
                 ), s AS (
                   UPDATE {ns}.state_scopes SET expires_at = now() + $2::bigint * interval '1 millisecond'
                   WHERE scope = 's:' || $1 AND EXISTS (SELECT 1 FROM t)
                 )
                 SELECT count(*) FROM t",
                &[&id, &self.session_ttl()],
            )
            .await?;
        Ok(rows.first().is_some_and(|r| r.get::<_, i64>(0) > 0))
    }

    /// Applies a change to the record, in a transaction that holds the row.
    pub(crate) async fn update_session(&self, id: &str, change: &StateChange) -> StoreResult<()> {
        change.check_size(self.config.max_record)?;
        let max = self.config.max_subscriptions;
        self.timed(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(unavailable)?;
            self.counted();
            let rows = tx
                .query(
                    &self.sql(
                        "SELECT record FROM {ns}.sessions
                         WHERE id = $1 AND expires_at > now() FOR UPDATE",
                    ),
                    &[&id],
                )
                .await
                .map_err(unavailable)?;
            let Some(row) = rows.first() else {
                return Ok(());
            };
            let mut record = decode(row.get::<_, &str>(0))?;
            change.apply_within(&mut record, max)?;
            let json =
                serde_json::to_string(&record).map_err(|e| StoreError::Protocol(e.to_string()))?;
            self.counted();
            tx.execute(
                &self.sql(
                    "UPDATE {ns}.sessions SET record = $2,
                       expires_at = now() + $3::bigint * interval '1 millisecond' WHERE id = $1",
                ),
                &[&id, &json, &self.session_ttl()],
            )
            .await
            .map_err(unavailable)?;
            self.counted();
            tx.commit().await.map_err(unavailable)
        })
        .await
    }

    /// Deletes the session (its pending requests and streams go with it) and its handler
    /// state.
    pub(crate) async fn delete_session(&self, id: &str) -> StoreResult<()> {
        self.execute(
            "WITH d AS (DELETE FROM {ns}.sessions WHERE id = $1)
             DELETE FROM {ns}.state_scopes WHERE scope = 's:' || $1",
            &[&id],
        )
        .await?;
        Ok(())
    }

    pub(crate) async fn next_block(&self, session: &str) -> StoreResult<u64> {
        let rows = self
            .query(
                "UPDATE {ns}.sessions SET blocks = blocks + 1
                 WHERE id = $1 AND expires_at > now() RETURNING blocks",
                &[&session],
            )
            .await?;
        Ok(rows
            .first()
            .map_or(1, |r| u64::try_from(r.get::<_, i64>(0)).unwrap_or(1)))
    }

    pub(crate) async fn put_pending(&self, session: &str, id: &str) -> StoreResult<()> {
        self.execute(
            "INSERT INTO {ns}.pending (session, id, instance)
             SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM {ns}.sessions WHERE id = $1)
             ON CONFLICT (session, id) DO UPDATE SET instance = EXCLUDED.instance",
            &[&session, &id, &self.instance],
        )
        .await?;
        Ok(())
    }

    pub(crate) async fn take_pending(
        &self,
        session: &str,
        id: &str,
    ) -> StoreResult<Option<String>> {
        let rows = self
            .query(
                "DELETE FROM {ns}.pending WHERE session = $1 AND id = $2 RETURNING instance",
                &[&session, &id],
            )
            .await?;
        Ok(rows.first().map(|r| r.get::<_, String>(0)))
    }

    pub(crate) async fn heartbeat(&self) -> StoreResult<()> {
        self.execute(
            "INSERT INTO {ns}.nodes (instance, beat_at) VALUES ($1, now())
             ON CONFLICT (instance) DO UPDATE SET beat_at = now()",
            &[&self.instance],
        )
        .await?;
        Ok(())
    }

    /// Alive: a heartbeat within the last three.
    pub(crate) async fn is_alive(&self, instance: &str) -> StoreResult<bool> {
        let window = millis(self.config.heartbeat * 3);
        let rows = self
            .query(
                "SELECT 1 FROM {ns}.nodes
                 WHERE instance = $1 AND beat_at > now() - $2::bigint * interval '1 millisecond'",
                &[&instance, &window],
            )
            .await?;
        Ok(!rows.is_empty())
    }

    /// The secret `name`: made by the first instance that asks.
    pub(crate) async fn shared_secret(&self, name: &str) -> StoreResult<[u8; 32]> {
        let fresh = oxmcp_store::random_secret()?;
        // On a conflict the row is "updated" to itself, so that RETURNING gives the secret
        // another instance made, even one committed after this statement began.
        let rows = self
            .query(
                "INSERT INTO {ns}.secrets (name, secret) VALUES ($1, $2)
                 ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name RETURNING secret",
                &[&name, &fresh.as_slice()],
            )
            .await?;
        let secret: &[u8] = rows
            .first()
            .map(|r| r.get(0))
            .ok_or_else(|| StoreError::Protocol("no shared secret".into()))?;
        secret
            .try_into()
            .map_err(|_| StoreError::Protocol(format!("a shared secret of {} bytes", secret.len())))
    }
}
