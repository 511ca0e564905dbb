//! The bus: `{ns}.bus_publish` stores an event, numbered, and notifies `{ns}_bus` with its
//! number. One reader per store, on a connection of its own, `LISTEN`s and reads the rows
//! after the last it saw on every notification and every second; after a lost connection it
//! reconnects and reads on from there, so nothing the table still holds (`parcel_ttl`) is
//! missed.
//!
//! Numbers are given in the order of the inserts, but two transactions may commit in the
//! other order: a reader that sees 12 before 11 delivers 12 and waits up to [`GAP_WAIT`] for
//! 11 (a rolled-back insert leaves a number that never comes) before it reads past it. It
//! delivers every event once, and counts a gap it gave up on as a break of the bus
//! ([`oxmcp_store::Store::bus_breaks`]).

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use futures::StreamExt;
use oxmcp_store::{BusEvent, StoreResult};
use tokio::sync::mpsc;
use tokio_postgres::AsyncMessage;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::Inner;

/// Rows read at once.
const BATCH: i64 = 512;

/// Bytes of events read at once (past it, the rest waits for the next read; one event is
/// always read, however large).
const BATCH_BYTES: i64 = 8 * 1024 * 1024;

/// How long a gap in the numbers is waited for before the reader passes it.
pub(crate) const GAP_WAIT: Duration = Duration::from_secs(2);

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
    last: i64,
) {
    let mut conn = Some(first);
    let mut backoff = Duration::from_millis(100);
    let mut seen = Seen::new(last);
    let select = format!(
        "SELECT seq, payload FROM (
           SELECT seq, payload, sum(octet_length(payload)) OVER (ORDER BY seq) AS total
           FROM {ns}.bus WHERE seq > $1 ORDER BY seq LIMIT $2
         ) t WHERE total - octet_length(payload) < $3 ORDER BY seq"
    );
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
        if seen.give_up_on_gap() {
            broke(&inner);
        }
        let from = seen.done;
        let read = tokio::time::timeout(
            READ_TIMEOUT,
            l.client.query(&select, &[&from, &BATCH, &BATCH_BYTES]),
        )
        .await;
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
        // New events: there may be more (a read stops at a count and a size).
        if deliver(rows, &mut seen, &sender) {
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

/// Sends the events of `rows` not delivered before; whether there was one.
fn deliver(
    rows: Vec<tokio_postgres::Row>,
    seen: &mut Seen,
    sender: &tokio::sync::broadcast::Sender<BusEvent>,
) -> bool {
    let mut fresh = false;
    for row in rows {
        let seq: i64 = row.get(0);
        if !seen.take(seq) {
            continue;
        }
        fresh = true;
        let payload: &str = row.get(1);
        match serde_json::from_str::<BusEvent>(payload) {
            // No receiver is fine: nothing listens yet.
            Ok(event) => drop(sender.send(event)),
            Err(e) => tracing::warn!("unreadable bus event {seq}: {e}"),
        }
    }
    fresh
}

/// Which events the reader delivered: every number up to `done`, and those in `ahead`
/// (read past a gap).
struct Seen {
    done: i64,
    ahead: BTreeSet<i64>,
    /// Since when the reader waits for `done + 1`.
    gap_since: Option<Instant>,
}

impl Seen {
    fn new(done: i64) -> Self {
        Self {
            done,
            ahead: BTreeSet::new(),
            gap_since: None,
        }
    }

    /// Takes event `seq`: whether it is new (to deliver).
    fn take(&mut self, seq: i64) -> bool {
        if seq <= self.done || !self.ahead.insert(seq) {
            return false;
        }
        while self.ahead.remove(&(self.done + 1)) {
            self.done += 1;
        }
        self.gap_since = match (self.ahead.is_empty(), self.gap_since) {
            (true, _) => None,
            (false, Some(t)) => Some(t),
            (false, None) => Some(Instant::now()),
        };
        true
    }

    /// Passes a gap waited for longer than [`GAP_WAIT`]: whether one was passed.
    fn give_up_on_gap(&mut self) -> bool {
        let Some(since) = self.gap_since else {
            return false;
        };
        if since.elapsed() < GAP_WAIT {
            return false;
        }
        if let Some(&first) = self.ahead.iter().next() {
            tracing::warn!(
                "bus events {} to {} never came: passed",
                self.done + 1,
                first - 1
            );
            self.done = first - 1;
            while self.ahead.remove(&(self.done + 1)) {
                self.done += 1;
            }
        }
        self.gap_since = (!self.ahead.is_empty()).then(Instant::now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::Seen;

    #[test]
    fn events_are_taken_once_in_spite_of_gaps() {
        let mut s = Seen::new(10);
        assert!(s.take(11));
        assert!(s.take(13));
        assert_eq!(s.done, 11);
        assert!(!s.take(13), "once");
        assert!(!s.take(11), "once");
        assert!(s.take(12), "the late one is still delivered");
        assert_eq!(s.done, 13);
        assert!(s.ahead.is_empty());
        assert!(!s.give_up_on_gap());
        assert!(s.take(15));
        s.gap_since = Some(std::time::Instant::now() - super::GAP_WAIT);
        assert!(s.give_up_on_gap());
        assert_eq!(s.done, 15);
        assert!(!s.take(14), "a number passed is not delivered late");
    }
}
