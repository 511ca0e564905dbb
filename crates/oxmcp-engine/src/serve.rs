//! What a transport hosts: anything that serves connections, not one particular server.

use futures::future::BoxFuture;
use oxmcp_jsonrpc::{Inbound, Outbound};
use tokio::sync::mpsc;

use crate::options::EngineConfig;

/// One connection a transport opened, ready to be served.
#[derive(Debug)]
pub struct Connection {
    /// What the transport received.
    pub incoming: mpsc::Receiver<Inbound>,
    /// Where the answers go.
    pub outgoing: mpsc::Sender<Outbound>,
    /// The engine settings for this connection ([`Serve::engine_config`], adjusted by the
    /// transport: HTTP sets a stall timeout, for instance).
    pub config: EngineConfig,
    /// Who the transport authenticated the other side as, if it did.
    pub principal: Option<String>,
    /// Where the service puts the connection's [`crate::Direct`] handle, if the transport
    /// wants to answer requests on its own task and the service offers it
    /// ([`crate::run_with`]). A service that filters or rewrites `incoming` before its
    /// engine reads it must not pass this on (set it to `None`): requests answered
    /// directly would bypass it.
    pub direct: Option<crate::DirectSlot>,
    /// The transport's name for this session, the same at every instance that serves it
    /// (Streamable HTTP's `Mcp-Session-Id`); `None` where the connection is the session
    /// (stdio, WebSocket, gRPC). A server names the session's handler state by it.
    pub session: Option<String>,
    /// Where the transport parks this session while it is idle, if it does ([`ParkSlot`](crate::ParkSlot)):
    /// a service that offers it keeps the session's state when the connection ends parked,
    /// and gets it back from the next connection with the same slot. `None`: never parked.
    pub parking: Option<crate::ParkSlot>,
}

/// Something a transport can host: it serves each connection the transport opens. An MCP
/// server, a gateway or any user service implements it, and every transport can then host
/// it.
pub trait Serve: Send + Sync + 'static {
    /// The engine settings its connections use by default.
    fn engine_config(&self) -> EngineConfig;

    /// Serves one connection until its input ends and its answers are sent.
    fn serve(&self, connection: Connection) -> BoxFuture<'static, ()>;

    /// Serves a connection that carries one self-contained request and ends after its answer
    /// (a 2026-07-28 request over Streamable HTTP: no session). Nothing outside the request
    /// can reach it, so a service may serve it more cheaply than a long-lived connection; a
    /// server, for one, keeps it out of the sessions it broadcasts to. By default, as
    /// [`Serve::serve`] does.
    fn serve_request(&self, connection: Connection) -> BoxFuture<'static, ()> {
        self.serve(connection)
    }
}

impl<T: Serve + ?Sized> Serve for std::sync::Arc<T> {
    fn engine_config(&self) -> EngineConfig {
        (**self).engine_config()
    }

    fn serve(&self, connection: Connection) -> BoxFuture<'static, ()> {
        (**self).serve(connection)
    }

    fn serve_request(&self, connection: Connection) -> BoxFuture<'static, ()> {
        (**self).serve_request(connection)
    }
}

/// Who a transport verified the other side to be (from a bearer token, say).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Identity {
    /// The subject (the token's `sub`), unique within its issuer.
    pub subject: String,
    /// The issuer that vouches for the subject (the token's `iss`), when there is one;
    /// `None` for local credentials such as static tokens.
    pub issuer: Option<String>,
    /// The scopes the token grants.
    pub scopes: Vec<String>,
    /// The client the token was issued to, if known.
    pub client_id: Option<String>,
    /// The token's claims (or the introspection answer).
    pub claims: serde_json::Map<String, serde_json::Value>,
}

impl Identity {
    /// Whether the token grants `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }

    /// The key sessions, tasks and per-client limits know this caller by: its subject
    /// qualified by its issuer, so that one subject name at two issuers is two callers.
    ///
    /// `ISSUER#SUBJECT` with `%` and `#` of the issuer percent-encoded, or, without an
    /// issuer, the subject with its `%` and `#` percent-encoded (a key without `#`). No two
    /// different (issuer, subject) pairs have the same key.
    pub fn principal(&self) -> String {
        fn escaped(s: &str) -> String {
            s.replace('%', "%25").replace('#', "%23")
        }
        match &self.issuer {
            Some(issuer) => format!("{}#{}", escaped(issuer), self.subject),
            None => escaped(&self.subject),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Identity;

    fn key(issuer: Option<&str>, subject: &str) -> String {
        Identity {
            subject: subject.to_owned(),
            issuer: issuer.map(str::to_owned),
            ..Identity::default()
        }
        .principal()
    }

    #[test]
    fn principals_are_subjects_qualified_by_their_issuer() {
        assert_eq!(key(None, "alice"), "alice");
        assert_eq!(
            key(Some("https://as.example"), "alice"),
            "https://as.example#alice"
        );
        let pairs = [
            (None, "alice"),
            (None, "a#b"),
            (None, "a%23b"),
            (None, ""),
            (None, "#"),
            (Some(""), ""),
            (Some(""), "alice"),
            (Some("a"), "b#c"),
            (Some("a#b"), "c"),
            (Some("a%23b"), "c"),
            (Some("https://as.example"), "alice"),
            (Some("https://other.example"), "alice"),
        ];
        let keys: std::collections::HashSet<String> =
            pairs.iter().map(|(i, s)| key(*i, s)).collect();
        assert_eq!(keys.len(), pairs.len(), "{keys:?}");
    }
}
