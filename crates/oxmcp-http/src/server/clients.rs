//! Per-client limits on new sessions: how many a client holds and how fast it may open them.
//!
//! A client is the verified principal of a request when an authentication layer put one in
//! the request's extensions ([`Principal`]), otherwise its remote address (IPv6 addresses by
//! their /64 prefix, which one host usually owns whole). Loopback clients without a principal
//! are the server's own machine and are not limited unless [`HttpConfig::limit_loopback`]
//! says so: a local server's clients all share one address, so an address limit there would
//! be a global throttle. Nothing here is global: one client at its limit never slows another.
//!
//! WebSocket connections and gRPC `Connect` streams count as sessions (a gRPC `Call` counts
//! while it runs, without the new-session rate), each endpoint with its own table: [`Held`].

use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;
use axum::http::Extensions;

use crate::server::config::HttpConfig;

/// The verified identity of a request's sender, put in the request's extensions by an
/// authentication layer. Per-client limits count sessions under it, and a session remembers
/// the principal that opened it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal(pub String);

impl Principal {
    /// The principal of a verified identity: its subject qualified by its issuer
    /// ([`oxmcp_engine::Identity::principal`]), the one key sessions, tasks and limits use.
    pub fn of(identity: &oxmcp_engine::Identity) -> Self {
        Self(identity.principal())
    }
}

/// Who a request counts against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Client {
    /// A verified principal.
    Principal(String),
    /// A remote address (or IPv6 /64 prefix).
    Address(String),
    /// Not limited per client (loopback, or no address known).
    Unlimited,
}

impl Client {
    /// The client of a request, from its extensions.
    pub fn of(config: &HttpConfig, ext: &Extensions) -> Client {
        if let Some(Principal(p)) = ext.get::<Principal>() {
            return Client::Principal(p.clone());
        }
        let Some(ConnectInfo(addr)) = ext.get::<ConnectInfo<SocketAddr>>() else {
            return Client::Unlimited;
        };
        let ip = match addr.ip() {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
            v4 => v4,
        };
        if ip.is_loopback() && !config.limit_loopback {
            return Client::Unlimited;
        }
        Client::Address(match ip {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        })
    }

    /// The verified principal, if there is one.
    pub(crate) fn principal(&self) -> Option<&str> {
        match self {
            Client::Principal(p) => Some(p),
            _ => None,
        }
    }

    /// The key its counters are kept under, if it is limited.
    pub(crate) fn key(&self) -> Option<String> {
        match self {
            Client::Principal(p) => Some(format!("p:{p}")),
            Client::Address(a) => Some(format!("a:{a}")),
            Client::Unlimited => None,
        }
    }

    fn max_sessions(&self, config: &HttpConfig) -> usize {
        match self {
            Client::Principal(_) => config.max_sessions_per_principal,
            _ => config.max_sessions_per_address,
        }
    }
}

/// Why a new session was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum Refused {
    /// The client holds its most sessions.
    TooMany,
    /// The client opens sessions too fast; come back after this long.
    TooFast(Duration),
}

struct Counters {
    sessions: usize,
    /// Token bucket of new sessions: tokens and last refill.
    tokens: f64,
    refilled: Instant,
}

/// Session counts and new-session buckets per client key.
#[derive(Default)]
pub struct ClientTable {
    table: Mutex<HashMap<String, Counters>>,
}

impl std::fmt::Debug for ClientTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTable")
            .field("clients", &self.lock().len())
            .finish()
    }
}

/// Most clients tracked at once; idle ones are dropped first (their state is "nothing held,
/// bucket full", so forgetting them changes nothing).
const MAX_TRACKED: usize = 100_000;

impl ClientTable {
    fn lock(&self) -> parking_lot::MutexGuard<'_, HashMap<String, Counters>> {
        self.table.lock()
    }

    /// Admits one new session for `client` (counting it), or says why not.
    pub(crate) fn admit(&self, config: &HttpConfig, client: &Client) -> Result<(), Refused> {
        let Some(key) = client.key() else {
            return Ok(());
        };
        let rate = f64::from(config.client_session_rate.max(1));
        let burst = f64::from(config.client_session_burst.max(1));
        let now = Instant::now();
        let mut table = self.lock();
        if table.len() >= MAX_TRACKED && !table.contains_key(&key) {
            prune(&mut table, rate, burst, now);
        }
        let c = table.entry(key).or_insert(Counters {
            sessions: 0,
            tokens: burst,
            refilled: now,
        });
        c.tokens = (c.tokens + now.duration_since(c.refilled).as_secs_f64() * rate).min(burst);
        c.refilled = now;
        if c.sessions >= client.max_sessions(config) {
            return Err(Refused::TooMany);
        }
        if c.tokens < 1.0 {
            return Err(Refused::TooFast(Duration::from_secs_f64(
                (1.0 - c.tokens) / rate,
            )));
        }
        c.tokens -= 1.0;
        c.sessions += 1;
        Ok(())
    }

    /// Counts one more connection for `client` without taking from its new-session bucket
    /// (a gRPC `Call`: short, and as frequent as requests), or says why not.
    pub(crate) fn hold(&self, config: &HttpConfig, client: &Client) -> Result<(), Refused> {
        let Some(key) = client.key() else {
            return Ok(());
        };
        let burst = f64::from(config.client_session_burst.max(1));
        let now = Instant::now();
        let mut table = self.lock();
        if table.len() >= MAX_TRACKED && !table.contains_key(&key) {
            let rate = f64::from(config.client_session_rate.max(1));
            prune(&mut table, rate, burst, now);
        }
        let c = table.entry(key).or_insert(Counters {
            sessions: 0,
            tokens: burst,
            refilled: now,
        });
        if c.sessions >= client.max_sessions(config) {
            return Err(Refused::TooMany);
        }
        c.sessions += 1;
        Ok(())
    }

    /// A session of `key` ended.
    pub(crate) fn release(&self, key: &str) {
        let mut table = self.lock();
        if let Some(c) = table.get_mut(key) {
            c.sessions = c.sessions.saturating_sub(1);
        }
    }

    /// Sessions held by `key`.
    #[cfg(test)]
    pub(crate) fn held(&self, key: &str) -> usize {
        self.lock().get(key).map_or(0, |c| c.sessions)
    }

    /// Drops clients that hold nothing and whose bucket is full again.
    pub(crate) fn prune_idle(&self, config: &HttpConfig) {
        let rate = f64::from(config.client_session_rate.max(1));
        let burst = f64::from(config.client_session_burst.max(1));
        prune(&mut self.lock(), rate, burst, Instant::now());
    }
}

/// One connection counted against a client (a WebSocket connection, a gRPC stream or call):
/// released when dropped, however the connection ends (or never starts).
pub struct Held {
    table: Arc<ClientTable>,
    key: Option<String>,
}

impl Held {
    /// Admits a new connection of `client` as a new session (counted against its limit and
    /// its new-session rate), or only counts it when `session` is false (a gRPC `Call`).
    pub fn take(
        table: &Arc<ClientTable>,
        config: &HttpConfig,
        client: &Client,
        session: bool,
    ) -> Result<Held, Refused> {
        if session {
            table.admit(config, client)?;
        } else {
            table.hold(config, client)?;
        }
        Ok(Held {
            table: table.clone(),
            key: client.key(),
        })
    }
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held").field("key", &self.key).finish()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(key) = &self.key {
            self.table.release(key);
        }
    }
}

fn prune(table: &mut HashMap<String, Counters>, rate: f64, burst: f64, now: Instant) {
    table.retain(|_, c| {
        let tokens = c.tokens + now.duration_since(c.refilled).as_secs_f64() * rate;
        c.sessions > 0 || tokens < burst
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(addr: &str, principal: Option<&str>) -> Extensions {
        let mut e = Extensions::new();
        e.insert(ConnectInfo(addr.parse::<SocketAddr>().unwrap()));
        if let Some(p) = principal {
            e.insert(Principal(p.to_owned()));
        }
        e
    }

    #[test]
    fn who_counts() {
        let c = HttpConfig::default();
        assert_eq!(Client::of(&c, &ext("127.0.0.1:1", None)), Client::Unlimited);
        assert_eq!(Client::of(&c, &ext("[::1]:1", None)), Client::Unlimited);
        assert_eq!(
            Client::of(&c, &ext("[::ffff:127.0.0.1]:1", None)),
            Client::Unlimited
        );
        assert_eq!(
            Client::of(&c, &ext("127.0.0.1:1", Some("alice"))),
            Client::Principal("alice".into())
        );
        assert_eq!(
            Client::of(&c, &ext("192.0.2.7:1", None)),
            Client::Address("192.0.2.7".into())
        );
        assert_eq!(
            Client::of(&c, &ext("[2001:db8:1:2:3:4:5:6]:1", None)),
            Client::of(&c, &ext("[2001:db8:1:2:ffff::9]:1", None)),
            "one /64 is one client"
        );
        let strict = HttpConfig::default().limit_loopback(true);
        assert_eq!(
            Client::of(&strict, &ext("127.0.0.1:1", None)),
            Client::Address("127.0.0.1".into())
        );
        assert_eq!(Client::of(&c, &Extensions::new()), Client::Unlimited);
    }

    #[test]
    fn counts_and_buckets_are_per_client() {
        let c = HttpConfig::default()
            .max_sessions_per_address(3)
            .client_session_rate(1)
            .client_session_burst(2);
        let t = ClientTable::default();
        let a = Client::Address("192.0.2.1".into());
        let b = Client::Address("192.0.2.2".into());
        assert_eq!(t.admit(&c, &a), Ok(()));
        assert_eq!(t.admit(&c, &a), Ok(()));
        assert!(matches!(t.admit(&c, &a), Err(Refused::TooFast(_))));
        assert_eq!(t.admit(&c, &b), Ok(()), "another client is not slowed");
        assert_eq!(t.held("a:192.0.2.1"), 2);
        t.release("a:192.0.2.1");
        assert_eq!(t.held("a:192.0.2.1"), 1);
        assert_eq!(t.admit(&c, &Client::Unlimited), Ok(()));
    }
}
