//! [`PostgresStore`]: the [`oxmcp_store::Store`] of a scaled-out MCP server, in PostgreSQL
//! (12 or newer). Imports oxmcp-store.
//!
//! Everything lives in one schema named by [`oxmcp_store::StoreConfig::namespace`] (`mcp` by
//! default), created and migrated by [`PostgresStore::connect`]: versioned migrations in one
//! transaction under an advisory lock, so that instances starting together apply each once.
//!
//! | table | holds | expiry |
//! |---|---|---|
//! | `sessions` | a session's record (the client's `initialize`, version, owner, log level, subscriptions) and its request-id blocks | session TTL, renewed on use |
//! | `pending` | request id to the client -> instance waiting for the answer | with its session |
//! | `streams`, `events` | each SSE stream's writer and ids (with its session), and its last events (stream TTL after the last) | with its session |
//! | `nodes` | heartbeats | an hour after the last |
//! | `secrets` | secrets shared by every instance (the `requestState` key) | never |
//! | `tasks` | task records (the server's JSON) | the task's TTL |
//! | `state_scopes`, `state` | handlers' state: per scope its numbering and totals, per key its value and version | a session's with the session; a user's its TTL after its last write |
//! | `bus` | bus events, numbered | `parcel_ttl` |
//!
//! The bus is the `bus` table: an instance writes an event and a `NOTIFY` carrying its number
//! only (a notification holds at most 8,000 bytes; an event may hold a client's answer of
//! megabytes); readers `LISTEN`, and read the rows after the last they saw, on every
//! notification and every second. Two events may commit out of the order of their numbers:
//! a reader delivers what it sees and waits a moment for a missing number before it passes
//! it, and delivers every event once. A reader whose connection broke reads on from its last
//! number once back, so nothing the table still holds is missed. Expired rows are deleted
//! by the instances themselves, in short batches every few seconds. Access tokens are never
//! stored.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use oxmcp_store::StoreConfig;
//! use oxmcp_store_postgres::PostgresStore;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let store = PostgresStore::connect("postgres://mcp@127.0.0.1/mcp", "mcp-1", StoreConfig::default()).await?;
//! let store: Arc<dyn oxmcp_store::Store> = Arc::new(store);
//! # let _ = store;
//! # Ok(()) }
//! ```

mod bus;
mod connect;
mod schema;
mod sessions;
mod state;
mod store;
mod streams;
mod sweep;
mod tasks;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use oxmcp_store::{BusEvent, StoreConfig, StoreError, StoreResult};
use tokio::sync::broadcast;

pub use connect::redacted;

/// Why [`PostgresStore::connect`] failed.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The URL, the namespace or the CA is not usable.
    #[error("{0}")]
    Config(String),
    /// The database did not answer (refused, timed out, TLS or authentication failed).
    #[error("cannot reach PostgreSQL at {url}: {error}")]
    Unreachable {
        /// The URL, without its password.
        url: String,
        /// What went wrong.
        error: String,
    },
    /// The database answered but refused the schema (no right to create it, a newer one).
    #[error("PostgreSQL at {url}: the schema cannot be prepared: {error}")]
    Schema {
        /// The URL, without its password.
        url: String,
        /// What went wrong.
        error: String,
    },
}

/// A [`oxmcp_store::Store`] in PostgreSQL. Cheap to clone.
#[derive(Clone)]
pub struct PostgresStore {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pool: deadpool_postgres::Pool,
    config: StoreConfig,
    instance: String,
    bus: broadcast::Sender<BusEvent>,
    /// Times the bus reader lost the database ([`oxmcp_store::Store::bus_breaks`]).
    bus_breaks: AtomicU64,
    /// Statements sent and answered.
    round_trips: AtomicU64,
    /// Operations timed by `timed`, and their time in microseconds.
    operations: AtomicU64,
    busy_micros: AtomicU64,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("instance", &self.inner.instance)
            .field("namespace", &self.inner.config.namespace)
            .finish_non_exhaustive()
    }
}

/// Connections of the pool.
const POOL_SIZE: usize = 16;

/// What a driver error says: the database's own message when it sent one.
pub(crate) fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => match std::error::Error::source(e) {
            Some(cause) => format!("{e}: {cause}"),
            None => e.to_string(),
        },
    }
}

/// A driver error as the store's: the database is unavailable.
pub(crate) fn unavailable(e: tokio_postgres::Error) -> StoreError {
    StoreError::Unavailable(describe(&e))
}

impl PostgresStore {
    /// Connects to the database at `url` as instance `instance`, prepares its schema
    /// ([`oxmcp_store::StoreConfig::namespace`]) and starts reading the bus and deleting
    /// what expired.
    ///
    /// URLs: `postgres://[user[:password]@]host[:port]/dbname[?sslmode=...]` (or
    /// `postgresql://`). With `sslmode=require` (or `verify-ca`, `verify-full`) the
    /// connection uses TLS and the server's certificate is verified against the web's root
    /// certificates, or the CA in `sslrootcert=FILE`.
    ///
    /// # Errors
    /// A malformed URL or namespace, a database that does not answer within the operation
    /// timeout, or a schema that cannot be prepared.
    pub async fn connect(
        url: &str,
        instance: impl Into<String>,
        config: StoreConfig,
    ) -> Result<PostgresStore, ConnectError> {
        Self::connect_with_ca(url, instance, config, None).await
    }

    /// [`PostgresStore::connect`] to a database whose TLS certificate is signed by the CA in
    /// `ca_pem` (PEM).
    ///
    /// # Errors
    /// As [`PostgresStore::connect`].
    pub async fn connect_with_ca(
        url: &str,
        instance: impl Into<String>,
        config: StoreConfig,
        ca_pem: Option<Vec<u8>>,
    ) -> Result<PostgresStore, ConnectError> {
        let ns = config.namespace.clone();
        if !schema::valid_namespace(&ns) {
            return Err(ConnectError::Config(format!(
                "namespace {ns:?} cannot name a PostgreSQL schema (lower-case letters, digits and _)"
            )));
        }
        let target = connect::target(url, ca_pem).map_err(ConnectError::Config)?;
        let shown = redacted(url);
        let unreachable = |error: String| ConnectError::Unreachable {
            url: shown.clone(),
            error,
        };
        let mut pg = target.config.clone();
        if pg.get_connect_timeout().is_none() {
            pg.connect_timeout(config.op_timeout.max(std::time::Duration::from_secs(1)));
        }
        let manager = deadpool_postgres::Manager::from_config(
            pg.clone(),
            target.tls.clone(),
            deadpool_postgres::ManagerConfig {
                recycling_method: deadpool_postgres::RecyclingMethod::Fast,
            },
        );
        let pool = deadpool_postgres::Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(config.op_timeout))
            .create_timeout(Some(
                config.op_timeout.max(std::time::Duration::from_secs(1)),
            ))
            .build()
            .map_err(|e| ConnectError::Config(e.to_string()))?;
        let mut client = pool.get().await.map_err(|e| unreachable(pool_error(&e)))?;
        schema::migrate(&mut client, &ns)
            .await
            .map_err(|error| ConnectError::Schema {
                url: shown.clone(),
                error,
            })?;
        drop(client);
        let (bus, _) = broadcast::channel(config.bus_buffer.max(16));
        let inner = Arc::new(Inner {
            pool,
            config,
            instance: instance.into(),
            bus,
            bus_breaks: AtomicU64::new(0),
            round_trips: AtomicU64::new(0),
            operations: AtomicU64::new(0),
            busy_micros: AtomicU64::new(0),
        });
        bus::start(&inner, pg, target.tls)
            .await
            .map_err(unreachable)?;
        sweep::start(&inner);
        Ok(PostgresStore { inner })
    }
}

/// What a pool error says, the driver's cause included.
fn pool_error(e: &deadpool_postgres::PoolError) -> String {
    match e {
        deadpool_postgres::PoolError::Backend(e) => match std::error::Error::source(e) {
            Some(cause) => format!("{e}: {cause}"),
            None => e.to_string(),
        },
        other => other.to_string(),
    }
}

impl Inner {
    /// `sql` with `{ns}` replaced by the schema.
    pub(crate) fn sql(&self, sql: &str) -> String {
        sql.replace("{ns}", &self.config.namespace)
    }

    /// A connection of the pool.
    pub(crate) async fn client(&self) -> StoreResult<deadpool_postgres::Object> {
        self.pool.get().await.map_err(|e| match e {
            deadpool_postgres::PoolError::Timeout(_) => StoreError::Timeout(self.config.op_timeout),
            e => StoreError::Unavailable(pool_error(&e)),
        })
    }

    /// Counts one statement sent.
    pub(crate) fn counted(&self) {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
    }

    /// `op`, failed with [`StoreError::Timeout`] past the operation timeout.
    pub(crate) async fn timed<T>(
        &self,
        op: impl std::future::Future<Output = StoreResult<T>>,
    ) -> StoreResult<T> {
        let started = std::time::Instant::now();
        let answer = match tokio::time::timeout(self.config.op_timeout, op).await {
            Ok(r) => r,
            Err(_) => Err(StoreError::Timeout(self.config.op_timeout)),
        };
        self.operations.fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.busy_micros.fetch_add(micros, Ordering::Relaxed);
        answer
    }

    /// Runs one statement (with `{ns}` replaced) and returns its rows.
    pub(crate) async fn query(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> StoreResult<Vec<tokio_postgres::Row>> {
        self.timed(async {
            let client = self.client().await?;
            let statement = client
                .prepare_cached(&self.sql(sql))
                .await
                .map_err(unavailable)?;
            self.counted();
            client.query(&statement, params).await.map_err(unavailable)
        })
        .await
    }

    /// Runs one statement (with `{ns}` replaced); the rows it changed.
    pub(crate) async fn execute(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> StoreResult<u64> {
        self.timed(async {
            let client = self.client().await?;
            let statement = client
                .prepare_cached(&self.sql(sql))
                .await
                .map_err(unavailable)?;
            self.counted();
            client
                .execute(&statement, params)
                .await
                .map_err(unavailable)
        })
        .await
    }
}

/// `d` in milliseconds, as PostgreSQL's `bigint`.
pub(crate) fn millis(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX).max(1)
}

/// An unsigned number as PostgreSQL's `bigint`.
pub(crate) fn big(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Hex of `s`'s bytes: any text as a safe key part.
pub(crate) fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}
