//! Reading the bus: one task per store, on a connection of its own (it blocks), from the
//! last entry it saw, so a reconnect loses nothing the bus still holds.

use std::sync::{Arc, Weak};
use std::time::Duration;

use oxmcp_store::BusEvent;
use redis::streams::StreamReadReply;

use crate::Inner;
use crate::conn::{Conn, Target};

/// How long one read blocks.
const BLOCK_MS: u64 = 2_000;

pub(crate) fn key(namespace: &str) -> String {
    format!("{namespace}:bus")
}

/// Starts the reader from the bus's current end.
pub(crate) async fn start(inner: &Arc<Inner>, target: Target) {
    let bus = key(&inner.config.namespace);
    // Entries from here on: the id of the newest one now ("0-0" when the bus is empty).
    let newest: redis::streams::StreamRangeReply = inner
        .conn
        .cmd(
            redis::cmd("XREVRANGE")
                .arg(&bus)
                .arg("+")
                .arg("-")
                .arg("COUNT")
                .arg(1),
        )
        .await
        .unwrap_or_default();
    let from = newest
        .ids
        .first()
        .map_or_else(|| "0-0".to_owned(), |e| e.id.clone());
    tokio::spawn(read(Arc::downgrade(inner), target, bus, from));
}

async fn read(inner: Weak<Inner>, target: Target, bus: String, mut last: String) {
    let mut conn: Option<Conn> = None;
    let mut backoff = Duration::from_millis(100);
    loop {
        let Some(strong) = inner.upgrade() else {
            return;
        };
        let timeout = strong.config.op_timeout;
        let sender = strong.bus.clone();
        drop(strong);
        let c = match &conn {
            Some(c) => c.clone(),
            None => match Conn::open(&target, timeout, None).await {
                Ok(c) => {
                    conn = Some(c.clone());
                    c
                }
                Err(e) => {
                    tracing::warn!("bus reader cannot connect (retrying in {backoff:?}): {e}");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                    continue;
                }
            },
        };
        let mut cmd = redis::cmd("XREAD");
        cmd.arg("COUNT")
            .arg(512)
            .arg("BLOCK")
            .arg(BLOCK_MS)
            .arg("STREAMS")
            .arg(&bus)
            .arg(&last);
        match c.cmd::<Option<StreamReadReply>>(&cmd).await {
            Ok(reply) => {
                backoff = Duration::from_millis(100);
                for entry in reply.into_iter().flat_map(|r| r.keys).flat_map(|k| k.ids) {
                    last = entry.id.clone();
                    let Some(json) = entry.get::<String>("e") else {
                        continue;
                    };
                    match serde_json::from_str::<BusEvent>(&json) {
                        // No receiver is fine: nothing listens yet.
                        Ok(event) => drop(sender.send(event)),
                        Err(e) => tracing::warn!("unreadable bus entry {}: {e}", entry.id),
                    }
                }
            }
            Err(e) => {
                tracing::warn!("bus read failed (retrying in {backoff:?}): {e}");
                conn = None;
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
}
