//! The bus: writing an event (small ones in the bus stream itself, larger ones as a parcel
//! beside it that expires on its own), and reading it: one task per store, on a connection of
//! its own (it blocks), from the last entry it saw, so a reconnect loses nothing the bus still
//! holds.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use oxmcp_store::{BusEvent, StoreResult};
use redis::streams::StreamReadReply;

use crate::Inner;
use crate::conn::{Conn, Target};

/// How long one read blocks.
const BLOCK_MS: u64 = 2_000;

/// Entries the bus keeps (approximately): a reader away for longer misses older ones. Each
/// is at most `bus_inline` bytes, so the bus holds at most this many times that.
const BUS_MAXLEN: usize = 10_000;

/// Puts an event on the bus: refused over `max_bus_event` bytes; over `bus_inline` bytes,
/// written beside the bus as a parcel that expires after `parcel_ttl`, and the bus entry
/// names it.
pub(crate) async fn publish(inner: &Inner, event: &BusEvent) -> StoreResult<()> {
    let config = &inner.config;
    let json = event.encode_within(config.max_bus_event)?;
    let mut cmd = redis::cmd("XADD");
    cmd.arg(key(&config.namespace))
        .arg("MAXLEN")
        .arg("~")
        .arg(BUS_MAXLEN)
        .arg("*");
    if json.len() <= config.bus_inline {
        cmd.arg("e").arg(json);
    } else {
        let name: String = oxmcp_store::random_secret()?[..12]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let parcel = format!("{}:parcel:{name}", config.namespace);
        let ttl = config.parcel_ttl.as_millis().max(1) as u64;
        let mut set = redis::cmd("SET");
        set.arg(&parcel).arg(json).arg("PX").arg(ttl);
        inner
            .conn
            .cmd::<()>(&set)
            .await
            .map_err(crate::unavailable)?;
        cmd.arg("p").arg(parcel);
    }
    inner.conn.cmd::<()>(&cmd).await.map_err(crate::unavailable)
}

/// The JSON of a bus entry: inline, or read from its parcel (`None`: neither, or the parcel
/// expired before it was read).
async fn entry_json(conn: &Conn, entry: &redis::streams::StreamId) -> Option<String> {
    if let Some(json) = entry.get::<String>("e") {
        return Some(json);
    }
    let parcel = entry.get::<String>("p")?;
    match conn
        .cmd::<Option<String>>(redis::cmd("GET").arg(&parcel))
        .await
    {
        Ok(Some(json)) => Some(json),
        Ok(None) => {
            tracing::warn!(
                "bus entry {}: its parcel expired before it was read",
                entry.id
            );
            None
        }
        Err(e) => {
            tracing::warn!("bus entry {}: its parcel was not read: {e}", entry.id);
            None
        }
    }
}

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

/// Counts a lost connection of the bus reader ([`oxmcp_store::Store::bus_breaks`]).
fn broke(inner: &Weak<Inner>) {
    if let Some(inner) = inner.upgrade() {
        inner.bus_breaks.fetch_add(1, Ordering::AcqRel);
    }
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
                    broke(&inner);
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
        match c.blocking_cmd::<Option<StreamReadReply>>(&cmd).await {
            Ok(reply) => {
                backoff = Duration::from_millis(100);
                for entry in reply.into_iter().flat_map(|r| r.keys).flat_map(|k| k.ids) {
                    last = entry.id.clone();
                    let Some(json) = entry_json(&c, &entry).await else {
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
                broke(&inner);
                tracing::warn!("bus read failed (retrying in {backoff:?}): {e}");
                conn = None;
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
}
