//! One connection (multiplexed, reconnecting) to a standalone Redis or to a Cluster.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, FromRedisValue, Pipeline, RedisResult};

/// Where the store is: one server, or the seed nodes of a Cluster, and the CA (PEM) that
/// signed their TLS certificates when it is not a public one.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) nodes: Nodes,
    pub(crate) ca_pem: Option<Vec<u8>>,
}

#[derive(Debug, Clone)]
pub(crate) enum Nodes {
    Single(String),
    Cluster(Vec<String>),
}

impl Target {
    /// Reads a store URL: `redis://[user:password@]host:port[/db]`, `rediss://` for TLS, or
    /// `redis+cluster://[user:password@]host:port,host:port` (`rediss+cluster://` with TLS)
    /// for a Cluster, given by some of its nodes.
    pub(crate) fn parse(url: &str, ca_pem: Option<Vec<u8>>) -> Result<Target, String> {
        let nodes = Nodes::parse(url)?;
        Ok(Target { nodes, ca_pem })
    }

    fn certs(&self) -> Option<redis::TlsCertificates> {
        self.ca_pem.as_ref().map(|ca| redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(ca.clone()),
        })
    }
}

impl Nodes {
    fn parse(url: &str) -> Result<Nodes, String> {
        let cluster = |scheme: &str, rest: &str| -> Result<Nodes, String> {
            let (auth, hosts) = match rest.rsplit_once('@') {
                Some((a, h)) => (format!("{a}@"), h),
                None => (String::new(), rest),
            };
            let hosts = hosts.trim_end_matches('/');
            let nodes: Vec<String> = hosts
                .split(',')
                .filter(|h| !h.is_empty())
                .map(|h| format!("{scheme}://{auth}{h}"))
                .collect();
            if nodes.is_empty() {
                return Err("a cluster URL names at least one node".to_owned());
            }
            Ok(Nodes::Cluster(nodes))
        };
        if let Some(rest) = url.strip_prefix("redis+cluster://") {
            return cluster("redis", rest);
        }
        if let Some(rest) = url.strip_prefix("rediss+cluster://") {
            return cluster("rediss", rest);
        }
        if url.starts_with("redis://") || url.starts_with("rediss://") {
            return Ok(Nodes::Single(url.to_owned()));
        }
        Err(format!(
            "not a Redis URL: {url:?} (redis://, rediss://, redis+cluster:// or rediss+cluster://)"
        ))
    }
}

/// Round trips made by every connection of this process.
pub(crate) static ROUND_TRIPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Timed round trips (all but the bus reader's blocking reads) and their time in µs.
pub(crate) static TIMED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
pub(crate) static BUSY_MICROS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn counted() {
    ROUND_TRIPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Counts `started`'s round trip as timed.
fn timed(started: std::time::Instant) {
    use std::sync::atomic::Ordering::Relaxed;
    TIMED.fetch_add(1, Relaxed);
    let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    BUSY_MICROS.fetch_add(micros, Relaxed);
}

/// A connection that reconnects by itself.
#[derive(Clone)]
pub(crate) enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl Conn {
    /// Connects. `response_timeout`: `None` for a connection that blocks (the bus reader).
    pub(crate) async fn open(
        target: &Target,
        connect_timeout: Duration,
        response_timeout: Option<Duration>,
    ) -> RedisResult<Conn> {
        match &target.nodes {
            Nodes::Single(url) => {
                let client = match target.certs() {
                    Some(certs) => redis::Client::build_with_tls(url.as_str(), certs)?,
                    None => redis::Client::open(url.as_str())?,
                };
                let mut config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(connect_timeout))
                    .set_min_delay(Duration::from_millis(50))
                    .set_max_delay(Duration::from_secs(5))
                    .set_number_of_retries(2);
                config = config.set_response_timeout(response_timeout);
                let manager = ConnectionManager::new_with_config(client, config).await?;
                Ok(Conn::Single(manager))
            }
            Nodes::Cluster(nodes) => {
                let mut builder =
                    ClusterClient::builder(nodes.clone()).connection_timeout(connect_timeout);
                if let Some(certs) = target.certs() {
                    builder = builder.certs(certs);
                }
                if let Some(t) = response_timeout {
                    builder = builder.response_timeout(t);
                } else {
                    builder = builder.response_timeout(Duration::from_secs(3600));
                }
                let client = builder.build()?;
                Ok(Conn::Cluster(client.get_async_connection().await?))
            }
        }
    }

    pub(crate) async fn cmd<T: FromRedisValue>(&self, cmd: &Cmd) -> RedisResult<T> {
        let started = std::time::Instant::now();
        let answer = self.blocking_cmd(cmd).await;
        timed(started);
        answer
    }

    /// [`Conn::cmd`] for a command that waits on the server (`XREAD BLOCK`): counted, not
    /// timed.
    pub(crate) async fn blocking_cmd<T: FromRedisValue>(&self, cmd: &Cmd) -> RedisResult<T> {
        counted();
        match self {
            Conn::Single(c) => cmd.query_async(&mut c.clone()).await,
            Conn::Cluster(c) => cmd.query_async(&mut c.clone()).await,
        }
    }

    pub(crate) async fn pipe<T: FromRedisValue>(&self, pipe: &Pipeline) -> RedisResult<T> {
        counted();
        let started = std::time::Instant::now();
        let answer = match self {
            Conn::Single(c) => pipe.query_async(&mut c.clone()).await,
            Conn::Cluster(c) => pipe.query_async(&mut c.clone()).await,
        };
        timed(started);
        answer
    }
}
