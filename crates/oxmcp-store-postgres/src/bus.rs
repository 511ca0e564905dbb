//! The bus: `{ns}.bus_publish` numbers an event under a lock, stores it and notifies
//! `{ns}_bus` with its number. One reader per store, on a connection of its own, `LISTEN`s
//! and reads the rows after the last it saw on every notification and every second; after a
//! lost connection it reconnects and reads on from there, so nothing the table still holds
//! (`parcel_ttl`) is missed.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::StreamExt;
use oxmcp_store::{BusEvent, StoreResult};
use tokio::sync::mpsc;
use tokio_postgres::AsyncMessage;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::Inner;

/// Rows read at once.
const BATCH: i64 = 512;

/// How long one read of the bus may take before the connection is given up as lost.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the reader waits for a notification before it reads anyway.
const POLL: Duration = Duration::from_secs(1);

impl Inner {
    pub(crate) async fn publish(&self, event: &BusEvent) -> StoreResult<()> {
        let json = event.encode_within(self.config.max_bus_event)?;
        self.query("SELECT {ns}.bus_publish($1)", &[&json]).await?;
        Ok(())
    }
}

/// The reader's connection: the client, and a channel that rings on each notification (it
/// closes when the connection ends).
struct Listening {
    client: tokio_postgres::Client,
    rings: mpsc::Receiver<()>,
}

async fn listen(
    config: &tokio_postgres::Config,
    tls: &MakeRustlsConnect,
    ns: &str,
) -> Result<Listening, String> {
    let (client, mut connection) = config
        .connect(tls.clone())
        .await
        .map_err(|e| e.to_string())?;
    let (tx, rings) = mpsc::channel(1);
    tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(m) = messages.next().await {
            match m {
                Ok(AsyncMessage::Notification(_)) => {
                    // Full: a ring is pending already, and one read takes every new row.
                    let _ = tx.try_send(());
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!("bus connection lost: {e}");
                    return;
                }
            }
        }
    });
    client
        .batch_execute(&format!("LISTEN {ns}_bus"))
        .await
        .map_err(|e| crate::describe(&e))?;
    Ok(Listening { client, rings })
}

/// Connects the reader, from the bus's current end.
pub(crate) async fn start(
    inner: &Arc<Inner>,
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
) -> Result<(), String> {
    let ns = inner.config.namespace.clone();
    let first = listen(&config, &tls, &ns).await?;
    let row = first
        .client
        .query_one(&format!("SELECT coalesce(max(seq), 0) FROM {ns}.bus"), &[])
        .await
        .map_err(|e| crate::describe(&e))?;
    let last: i64 = row.get(0);
    tokio::spawn(read(Arc::downgrade(inner), config, tls, ns, first, last));
    Ok(())
}

/// Counts a lost connection of the bus reader.
fn broke(inner: &Weak<Inner>) {
    if let Some(inner) = inner.upgrade() {
        inner.bus_breaks.fetch_add(1, Ordering::AcqRel);
    }
}

async fn read(
    inner: Weak<Inner>,
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
    ns: String,
    first: Listening,
    mut last: i64,
) {
    let mut conn = Some(first);
    let mut backoff = Duration::from_millis(100);
    let select = format!("SELECT seq, payload FROM {ns}.bus WHERE seq > $1 ORDER BY seq LIMIT $2");
    loop {
        let Some(strong) = inner.upgrade() else {
            return;
        };
        let sender = strong.bus.clone();
        drop(strong);
        let Some(l) = conn.as_mut() else {
            match listen(&config, &tls, &ns).await {
                Ok(l) => {
                    backoff = Duration::from_millis(100);
                    conn = Some(l);
                }
                Err(e) => {
                    tracing::warn!("bus reader cannot connect (retrying in {backoff:?}): {e}");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
            }
            continue;
        };
        let read =
            tokio::time::timeout(READ_TIMEOUT, l.client.query(&select, &[&last, &BATCH])).await;
        let rows = match read {
            Ok(Ok(rows)) => rows,
            Ok(Err(e)) => {
                broke(&inner);
                tracing::warn!("bus read failed (reconnecting): {}", crate::describe(&e));
                conn = None;
                continue;
            }
            Err(_) => {
                broke(&inner);
                tracing::warn!("bus read timed out after {READ_TIMEOUT:?} (reconnecting)");
                conn = None;
                continue;
            }
        };
        let full = rows.len() as i64 == BATCH;
        for row in rows {
            last = row.get(0);
            let payload: &str = row.get(1);
            match serde_json::from_str::<BusEvent>(payload) {
                // No receiver is fine: nothing listens yet.
                Ok(event) => drop(sender.send(event)),
                Err(e) => tracing::warn!("unreadable bus event {last}: {e}"),
            }
        }
        if full {
            continue;
        }
        match tokio::time::timeout(POLL, l.rings.recv()).await {
            Ok(Some(())) | Err(_) => {}
            Ok(None) => {
                broke(&inner);
                conn = None;
            }
        }
    }
}
