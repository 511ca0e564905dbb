//! [`RedisStore`]: the [`oxmcp_store::Store`] of a scaled-out MCP server, in Redis 7
//! (standalone or Cluster). Imports oxmcp-store.
//!
//! Keys (`ns` is [`oxmcp_store::StoreConfig::namespace`]; a session's keys share the hash tag
//! `{sid}`, so a Cluster keeps them in one slot and a pipeline over them is one round trip):
//!
//! | key | type | holds | expiry |
//! |---|---|---|---|
//! | `ns:{sid}:sess` | hash | version, owner, the client's `initialize`, log level, created | session TTL, renewed on use |
//! | `ns:{sid}:subs` | set | subscribed resource URIs | session TTL |
//! | `ns:{sid}:pend` | hash | request id to the client -> instance waiting for the answer | session TTL |
//! | `ns:{sid}:seq` | string | request-id blocks handed out | session TTL |
//! | `ns:{sid}:streams` | hash | stream -> writer and request ids | session TTL |
//! | `ns:{sid}:ev:{stream}` | stream | entries `0-{seq}`: `d` (message), `l` (last) | stream TTL after its last event |
//! | `ns:node:{instance}` | string | heartbeat | three heartbeats |
//! | `ns:task:{id}` | string | a task's record (the server's JSON) | the task's TTL |
//! | `ns:tasks:{owner}` | sorted set | task ids by creation (owner hex-encoded, `-` for none) | its longest task's TTL |
//! | `ns:bus` | stream | bus events (`e`: JSON, at most `bus_inline` bytes; or `p`: a parcel's key), about the last 10,000 | none (capped) |
//! | `ns:parcel:{random}` | string | a bus event larger than `bus_inline` (at most `max_bus_event`) | `parcel_ttl` |
//!
//! Streams are the source of truth; nothing uses pub/sub, so nothing is lost when a
//! subscriber reconnects: the bus reader continues from the last entry it saw. Access tokens
//! are never stored: a session keeps its owner's subject only.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use oxmcp_store::StoreConfig;
//! use oxmcp_store_redis::RedisStore;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // Every instance connects to the same Redis under its own name.
//! let store = RedisStore::connect("redis://127.0.0.1:6379/0", "mcp-1", StoreConfig::default()).await?;
//! let store: Arc<dyn oxmcp_store::Store> = Arc::new(store);
//! // Then: oxmcp_http::StreamableHttp::new(server, config).with_store(store)
//! # let _ = store;
//! # Ok(()) }
//! ```

mod bus;
mod conn;
mod sessions;
mod state;
mod streams;
mod tasks;

use std::sync::Arc;

use futures::future::BoxFuture;
use oxmcp_store::{
    AppendEvent, BusEvent, EventLog, SessionRecord, StateChange, Store, StoreConfig, StoreError,
    StoreResult, StoredEvent, StreamInfo,
};
use tokio::sync::broadcast;

use conn::{Conn, Target};

/// Why [`RedisStore::connect`] failed.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The URL is not a Redis URL.
    #[error("{0}")]
    Url(String),
    /// Redis did not answer (refused, timed out, TLS or authentication failed).
    #[error("cannot reach Redis at {url}: {error}")]
    Unreachable {
        /// The URL, without its password.
        url: String,
        /// What went wrong.
        error: String,
    },
}

/// A [`Store`] in Redis. Cheap to clone.
#[derive(Clone)]
pub struct RedisStore {
    inner: Arc<Inner>,
}

struct Inner {
    conn: Conn,
    config: StoreConfig,
    instance: String,
    bus: broadcast::Sender<BusEvent>,
    /// Times the bus reader lost Redis ([`Store::bus_breaks`]).
    bus_breaks: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("instance", &self.inner.instance)
            .field("namespace", &self.inner.config.namespace)
            .finish_non_exhaustive()
    }
}

/// `url` with any password replaced by `***`.
pub fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let userinfo = &url[s + 3..at];
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{}{user}:***{}", &url[..s + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
}

pub(crate) fn unavailable(e: redis::RedisError) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

impl RedisStore {
    /// Connects to the Redis at `url` (see [`conn`'s URL forms](RedisStore)) as instance
    /// `instance`, checks that it answers, and starts reading the bus.
    ///
    /// URLs: `redis://[user:password@]host:port[/db]`, `rediss://...` for TLS, and
    /// `redis+cluster://[user:password@]host:port,host:port` (or `rediss+cluster://`) for a
    /// Cluster given by some of its nodes.
    ///
    /// # Errors
    /// A malformed URL, or a Redis that does not answer a PING within the operation timeout.
    pub async fn connect(
        url: &str,
        instance: impl Into<String>,
        config: StoreConfig,
    ) -> Result<RedisStore, ConnectError> {
        Self::connect_with_ca(url, instance, config, None).await
    }

    /// [`RedisStore::connect`] to a Redis whose TLS certificate (`rediss://`) is signed by
    /// the CA in `ca_pem` (PEM) rather than by a public one.
    ///
    /// # Errors
    /// As [`RedisStore::connect`].
    pub async fn connect_with_ca(
        url: &str,
        instance: impl Into<String>,
        config: StoreConfig,
        ca_pem: Option<Vec<u8>>,
    ) -> Result<RedisStore, ConnectError> {
        let target = Target::parse(url, ca_pem).map_err(ConnectError::Url)?;
        let unreachable = |e: String| ConnectError::Unreachable {
            url: redacted(url),
            error: e,
        };
        let timeout = config.op_timeout;
        let open = Conn::open(&target, timeout, Some(timeout));
        let conn = match tokio::time::timeout(timeout * 2, open).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return Err(unreachable(e.to_string())),
            Err(_) => return Err(unreachable(format!("no answer within {:?}", timeout * 2))),
        };
        let ping = tokio::time::timeout(timeout, conn.cmd::<String>(&redis::cmd("PING"))).await;
        match ping {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(unreachable(e.to_string())),
            Err(_) => return Err(unreachable(format!("no answer within {timeout:?}"))),
        }
        let (bus, _) = broadcast::channel(config.bus_buffer.max(16));
        let inner = Arc::new(Inner {
            conn,
            config,
            instance: instance.into(),
            bus,
            bus_breaks: std::sync::atomic::AtomicU64::new(0),
        });
        bus::start(&inner, target).await;
        Ok(RedisStore { inner })
    }

    pub(crate) fn key(&self, sid: &str, what: &str) -> String {
        format!("{}:{{{sid}}}:{what}", self.inner.config.namespace)
    }

    pub(crate) fn ttl(&self) -> u64 {
        self.inner.config.session_ttl.as_secs().max(1)
    }

    /// The session's own keys (not its event logs).
    pub(crate) fn session_keys(&self, sid: &str) -> [String; 6] {
        ["sess", "subs", "pend", "seq", "streams", "state"].map(|k| self.key(sid, k))
    }

    fn node_key(&self, instance: &str) -> String {
        format!("{}:node:{instance}", self.inner.config.namespace)
    }

    async fn beat(&self) -> StoreResult<()> {
        let window = (self.inner.config.heartbeat * 3).as_millis().max(1) as u64;
        let mut cmd = redis::cmd("SET");
        cmd.arg(self.node_key(&self.inner.instance))
            .arg(oxmcp_store::now_ms())
            .arg("PX")
            .arg(window);
        self.inner.conn.cmd::<()>(&cmd).await.map_err(unavailable)
    }

    async fn alive(&self, instance: &str) -> StoreResult<bool> {
        let n: i64 = self
            .inner
            .conn
            .cmd(redis::cmd("EXISTS").arg(self.node_key(instance)))
            .await
            .map_err(unavailable)?;
        Ok(n == 1)
    }

    async fn secret(&self, name: &str) -> StoreResult<[u8; 32]> {
        let key = format!("{}:secret:{name}", self.inner.config.namespace);
        let mine: String = oxmcp_store::random_secret()?
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let mut p = redis::pipe();
        p.cmd("SET")
            .arg(&key)
            .arg(&mine)
            .arg("NX")
            .ignore()
            .get(&key);
        let (hex,): (String,) = self.inner.conn.pipe(&p).await.map_err(unavailable)?;
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .filter_map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
            .collect();
        bytes
            .try_into()
            .map_err(|_| StoreError::Protocol(format!("{key} does not hold 32 hex bytes")))
    }

    /// Bytes Redis uses for a session's keys (`MEMORY USAGE` of each), for measurements.
    ///
    /// # Errors
    /// When Redis cannot be asked.
    pub async fn session_memory(&self, id: &str) -> StoreResult<u64> {
        let mut total = 0;
        for k in self.session_keys(id) {
            let n: Option<u64> = self
                .inner
                .conn
                .cmd(
                    redis::cmd("MEMORY")
                        .arg("USAGE")
                        .arg(&k)
                        .arg("SAMPLES")
                        .arg(0),
                )
                .await
                .map_err(unavailable)?;
            total += n.unwrap_or(0);
        }
        Ok(total)
    }
}

impl EventLog for RedisStore {
    fn open_stream<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        info: &'a StreamInfo,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(self.open(session, stream, info))
    }
    fn append<'a>(&'a self, event: AppendEvent<'a>) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(self.add(event))
    }
    fn replay<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        after: u64,
    ) -> BoxFuture<'a, StoreResult<Vec<StoredEvent>>> {
        Box::pin(self.range(session, stream, after))
    }
    fn stream_info<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<StreamInfo>>> {
        Box::pin(self.info(session, stream))
    }
    fn forget_stream<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(self.drop_stream(session, stream))
    }
}

impl Store for RedisStore {
    fn instance(&self) -> &str {
        &self.inner.instance
    }
    fn config(&self) -> &StoreConfig {
        &self.inner.config
    }
    fn create_session<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(self.create(id, record))
    }
    fn load_session<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<SessionRecord>>> {
        Box::pin(self.load(id))
    }
    fn touch_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(self.touch(id))
    }
    fn update_session<'a>(
        &'a self,
        id: &'a str,
        change: &'a StateChange,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(self.update(id, change))
    }
    fn delete_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(self.delete(id))
    }
    fn next_block<'a>(&'a self, session: &'a str) -> BoxFuture<'a, StoreResult<u64>> {
        Box::pin(self.block(session))
    }
    fn put_pending<'a>(&'a self, session: &'a str, id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(self.pending_put(session, id))
    }
    fn take_pending<'a>(
        &'a self,
        session: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<String>>> {
        Box::pin(self.pending_take(session, id))
    }
    fn heartbeat(&self) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(self.beat())
    }
    fn is_alive<'a>(&'a self, instance: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(self.alive(instance))
    }
    fn shared_secret<'a>(&'a self, name: &'a str) -> BoxFuture<'a, StoreResult<[u8; 32]>> {
        Box::pin(self.secret(name))
    }
    fn put_task<'a>(&'a self, task: &'a oxmcp_store::StoredTask) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(self.task_put(task))
    }

    fn get_task<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<Option<String>>> {
        Box::pin(self.task_get(id))
    }

    fn list_tasks<'a>(
        &'a self,
        owner: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, StoreResult<Vec<String>>> {
        Box::pin(self.task_list(owner, limit))
    }

    fn delete_task<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(self.task_delete(id))
    }

    fn publish<'a>(&'a self, event: &'a BusEvent) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(bus::publish(&self.inner, event))
    }
    fn bus_breaks(&self) -> u64 {
        self.inner
            .bus_breaks
            .load(std::sync::atomic::Ordering::Acquire)
    }
    fn bus(&self) -> broadcast::Receiver<BusEvent> {
        self.inner.bus.subscribe()
    }
    fn stats(&self) -> oxmcp_store::StoreStats {
        oxmcp_store::StoreStats {
            round_trips: conn::ROUND_TRIPS.load(std::sync::atomic::Ordering::Relaxed),
            operations: conn::TIMED.load(std::sync::atomic::Ordering::Relaxed),
            busy_micros: conn::BUSY_MICROS.load(std::sync::atomic::Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_not_shown() {
        assert_eq!(redacted("redis://u:secret@h:1/0"), "redis://u:***@h:1/0");
        assert_eq!(redacted("redis://:secret@h:1"), "redis://:***@h:1");
        assert_eq!(redacted("redis://h:1"), "redis://h:1");
    }

    #[test]
    fn urls() {
        let nodes = |u: &str| Target::parse(u, None).map(|t| t.nodes);
        assert!(matches!(nodes("redis://h:1/2"), Ok(conn::Nodes::Single(_))));
        match nodes("rediss+cluster://u:p@a:1,b:2") {
            Ok(conn::Nodes::Cluster(n)) => {
                assert_eq!(n, ["rediss://u:p@a:1", "rediss://u:p@b:2"]);
            }
            other => panic!("{other:?}"),
        }
        assert!(nodes("http://h").is_err());
    }
}
