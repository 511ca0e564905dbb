//! The schema: versioned migrations, applied in order under an advisory lock, so that
//! several instances starting at once apply each exactly once. `{ns}` in the SQL is the
//! store's namespace, a schema of its own.

use tokio_postgres::Client;

/// The migrations, in order: `MIGRATIONS[i]` takes the schema to version `i + 1`. Never edit
/// one that shipped: add another.
const MIGRATIONS: &[&str] = &[r"
CREATE TABLE {ns}.sessions (
  id text PRIMARY KEY,
  record text NOT NULL,
  blocks bigint NOT NULL DEFAULT 0,
  expires_at timestamptz NOT NULL
);
CREATE INDEX sessions_expiry ON {ns}.sessions (expires_at);
CREATE TABLE {ns}.pending (
  session text NOT NULL REFERENCES {ns}.sessions (id) ON DELETE CASCADE,
  id text NOT NULL,
  instance text NOT NULL,
  PRIMARY KEY (session, id)
);
CREATE TABLE {ns}.streams (
  session text NOT NULL REFERENCES {ns}.sessions (id) ON DELETE CASCADE,
  stream text NOT NULL,
  info text,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (session, stream)
);
CREATE INDEX streams_expiry ON {ns}.streams (expires_at);
CREATE TABLE {ns}.events (
  session text NOT NULL,
  stream text NOT NULL,
  seq bigint NOT NULL,
  data text NOT NULL,
  last boolean NOT NULL,
  PRIMARY KEY (session, stream, seq),
  FOREIGN KEY (session, stream) REFERENCES {ns}.streams (session, stream) ON DELETE CASCADE
);
CREATE TABLE {ns}.nodes (instance text PRIMARY KEY, beat_at timestamptz NOT NULL);
CREATE TABLE {ns}.secrets (name text PRIMARY KEY, secret bytea NOT NULL);
CREATE TABLE {ns}.tasks (
  id text PRIMARY KEY,
  owner text,
  created_ms bigint NOT NULL,
  expires_ms bigint NOT NULL,
  json text NOT NULL
);
CREATE INDEX tasks_owner ON {ns}.tasks (owner, created_ms, id);
CREATE INDEX tasks_expiry ON {ns}.tasks (expires_ms);
CREATE TABLE {ns}.bus (
  seq bigserial PRIMARY KEY,
  payload text NOT NULL,
  at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX bus_age ON {ns}.bus (at);
CREATE TABLE {ns}.state_scopes (
  scope text PRIMARY KEY,
  seq bigint NOT NULL DEFAULT 0,
  keys integer NOT NULL DEFAULT 0,
  bytes bigint NOT NULL DEFAULT 0,
  expires_at timestamptz NOT NULL
);
CREATE INDEX state_scopes_expiry ON {ns}.state_scopes (expires_at);
CREATE TABLE {ns}.state (
  scope text NOT NULL REFERENCES {ns}.state_scopes (scope) ON DELETE CASCADE,
  key text NOT NULL,
  value text NOT NULL,
  version bigint NOT NULL,
  PRIMARY KEY (scope, key)
);

-- One bus event, stored and announced: the notification carries its number only. Numbers
-- are given in the order of the inserts, and transactions may commit in another order: a
-- reader waits a moment on a gap before it passes it (bus.rs).
CREATE FUNCTION {ns}.bus_publish(p_payload text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  INSERT INTO {ns}.bus (payload) VALUES (p_payload) RETURNING seq INTO n;
  PERFORM pg_notify('{ns}_bus', n::text);
  RETURN n;
END $$;

-- One event of a live session's stream, its log kept to p_max events.
CREATE FUNCTION {ns}.append_event(p_session text, p_stream text, p_seq bigint, p_data text,
    p_last boolean, p_info text, p_ttl_ms bigint, p_max bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM {ns}.sessions WHERE id = p_session AND expires_at > now()) THEN
    RETURN;
  END IF;
  INSERT INTO {ns}.streams (session, stream, info, expires_at)
    VALUES (p_session, p_stream, p_info, now() + p_ttl_ms * interval '1 millisecond')
    ON CONFLICT (session, stream) DO UPDATE
    SET info = coalesce(EXCLUDED.info, {ns}.streams.info), expires_at = EXCLUDED.expires_at;
  INSERT INTO {ns}.events (session, stream, seq, data, last)
    VALUES (p_session, p_stream, p_seq, p_data, p_last) ON CONFLICT DO NOTHING;
  DELETE FROM {ns}.events
    WHERE session = p_session AND stream = p_stream AND seq <= p_seq - p_max;
EXCEPTION WHEN foreign_key_violation THEN
  -- The session was deleted meanwhile: nothing to log.
  RETURN;
END $$;

-- A conditional write of handler state (p_kind 0: any, 1: absent, 2: version p_version),
-- within the scope's limits. Returns (version, NULL) when written; (-1, current version or
-- NULL) on a conflict; (-2, NULL) for one key too many; (-3, bytes it would take) when the
-- scope would be too large.
CREATE FUNCTION {ns}.state_put(p_scope text, p_key text, p_value text, p_kind integer,
    p_version bigint, p_max_keys integer, p_max_bytes bigint, p_ttl_ms bigint)
RETURNS TABLE (code bigint, detail bigint) LANGUAGE plpgsql AS $$
DECLARE
  s {ns}.state_scopes%ROWTYPE;
  cur_version bigint;
  cur_size bigint;
  had boolean;
  would bigint;
BEGIN
  LOOP
    INSERT INTO {ns}.state_scopes (scope, expires_at)
      VALUES (p_scope, now() + p_ttl_ms * interval '1 millisecond')
      ON CONFLICT (scope) DO NOTHING;
    SELECT * INTO s FROM {ns}.state_scopes WHERE scope = p_scope FOR UPDATE;
    -- Deleted (cleared, swept) while this waited for it: make it again.
    EXIT WHEN FOUND;
  END LOOP;
  IF s.expires_at <= now() THEN
    -- Expired but not swept yet: empty again, its numbering going on.
    DELETE FROM {ns}.state WHERE scope = p_scope;
    s.keys := 0;
    s.bytes := 0;
  END IF;
  SELECT version, octet_length(value) + octet_length(key) INTO cur_version, cur_size
    FROM {ns}.state WHERE scope = p_scope AND key = p_key;
  had := FOUND;
  IF (p_kind = 1 AND had) OR (p_kind = 2 AND (NOT had OR cur_version <> p_version)) THEN
    RETURN QUERY SELECT -1::bigint, cur_version;
    RETURN;
  END IF;
  IF NOT had AND s.keys >= p_max_keys THEN
    RETURN QUERY SELECT -2::bigint, NULL::bigint;
    RETURN;
  END IF;
  would := s.bytes - coalesce(cur_size, 0) + octet_length(p_key) + octet_length(p_value);
  IF would > p_max_bytes THEN
    RETURN QUERY SELECT -3::bigint, would;
    RETURN;
  END IF;
  INSERT INTO {ns}.state (scope, key, value, version) VALUES (p_scope, p_key, p_value, s.seq + 1)
    ON CONFLICT (scope, key) DO UPDATE SET value = EXCLUDED.value, version = EXCLUDED.version;
  UPDATE {ns}.state_scopes
    SET seq = s.seq + 1, keys = s.keys + CASE WHEN had THEN 0 ELSE 1 END, bytes = would,
        expires_at = now() + p_ttl_ms * interval '1 millisecond'
    WHERE scope = p_scope;
  RETURN QUERY SELECT s.seq + 1, NULL::bigint;
END $$;

-- A conditional delete of handler state. Returns (1, NULL) deleted, (0, NULL) absent, or
-- (-1, current version or NULL) on a conflict.
CREATE FUNCTION {ns}.state_remove(p_scope text, p_key text, p_kind integer, p_version bigint)
RETURNS TABLE (code bigint, detail bigint) LANGUAGE plpgsql AS $$
DECLARE
  s {ns}.state_scopes%ROWTYPE;
  cur_version bigint;
  cur_size bigint;
  had boolean := false;
BEGIN
  SELECT * INTO s FROM {ns}.state_scopes WHERE scope = p_scope FOR UPDATE;
  IF FOUND AND s.expires_at > now() THEN
    SELECT version, octet_length(value) + octet_length(key) INTO cur_version, cur_size
      FROM {ns}.state WHERE scope = p_scope AND key = p_key;
    had := FOUND;
  END IF;
  IF (p_kind = 1 AND had) OR (p_kind = 2 AND (NOT had OR cur_version <> p_version)) THEN
    RETURN QUERY SELECT -1::bigint, cur_version;
    RETURN;
  END IF;
  IF NOT had THEN
    RETURN QUERY SELECT 0::bigint, NULL::bigint;
    RETURN;
  END IF;
  DELETE FROM {ns}.state WHERE scope = p_scope AND key = p_key;
  UPDATE {ns}.state_scopes SET keys = s.keys - 1, bytes = s.bytes - cur_size
    WHERE scope = p_scope;
  RETURN QUERY SELECT 1::bigint, NULL::bigint;
END $$;
"];

/// The schema version this code needs.
pub(crate) const VERSION: i32 = MIGRATIONS.len() as i32;

/// Whether `ns` can name a schema as it is (no quoting needed): lower-case ASCII letters,
/// digits and `_`, not starting with a digit, at most 40 bytes.
pub(crate) fn valid_namespace(ns: &str) -> bool {
    !ns.is_empty()
        && ns.len() <= 40
        && !ns.starts_with(|c: char| c.is_ascii_digit())
        && ns
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Brings the schema `ns` to [`VERSION`], in one transaction under an advisory lock.
/// Returns the migrations applied here.
///
/// # Errors
/// The database refused (no right to create the schema, a newer schema than this code).
pub(crate) async fn migrate(client: &mut Client, ns: &str) -> Result<usize, String> {
    let tx = client
        .transaction()
        .await
        .map_err(|e| crate::describe(&e))?;
    tx.batch_execute(&format!(
        "SELECT pg_advisory_xact_lock(hashtext('{ns}.migrate'));
         CREATE SCHEMA IF NOT EXISTS {ns};
         CREATE TABLE IF NOT EXISTS {ns}.migrations (
           version integer PRIMARY KEY,
           applied_at timestamptz NOT NULL DEFAULT now()
         );"
    ))
    .await
    .map_err(|e| crate::describe(&e))?;
    let row = tx
        .query_one(
            &format!("SELECT coalesce(max(version), 0) FROM {ns}.migrations"),
            &[],
        )
        .await
        .map_err(|e| crate::describe(&e))?;
    let at: i32 = row.get(0);
    if at > VERSION {
        return Err(format!(
            "the schema {ns} is at version {at}, newer than this program's {VERSION}: upgrade it"
        ));
    }
    let mut applied = 0;
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(at as usize) {
        tx.batch_execute(&sql.replace("{ns}", ns))
            .await
            .map_err(|e| format!("migration {}: {}", i + 1, crate::describe(&e)))?;
        tx.execute(
            &format!("INSERT INTO {ns}.migrations (version) VALUES ($1)"),
            &[&(i as i32 + 1)],
        )
        .await
        .map_err(|e| crate::describe(&e))?;
        applied += 1;
    }
    tx.commit().await.map_err(|e| crate::describe(&e))?;
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::valid_namespace;

    #[test]
    fn namespaces() {
        for ok in ["mcp", "mcp_prod", "a1"] {
            assert!(valid_namespace(ok), "{ok}");
        }
        for bad in [
            "",
            "1mcp",
            "Mcp",
            "mcp-prod",
            "mcp;drop",
            "a b",
            &"x".repeat(41),
        ] {
            assert!(!valid_namespace(bad), "{bad}");
        }
    }
}
