//! A long-lived connection's hold on its bearer token (a WebSocket connection, a gRPC
//! `Connect` stream or unary `Call`, a legacy SSE stream, a Streamable HTTP GET or
//! `subscriptions/listen` stream): verified when the connection opened, it is kept
//! with the connection, which ends at the token's `exp` and when the token, verified again
//! every [`HttpConfig::token_recheck_interval`], is refused (revoked, say). A fresh token of
//! the same principal takes its place without dropping the session: an `oxmcp/authorize`
//! request ([`crate::reauth`]) over WebSocket and gRPC, any POST to `/message` on legacy SSE.
//! A presented token is verified in a task of its own, one at a time per connection, so that
//! a slow check (an introspection request) does not hold up the connection's other traffic.
//! (A Streamable HTTP stream cannot take one: the client opens a new stream with its new
//! token, resuming the old one with `Last-Event-ID`.)
//!
//! A check that cannot be made (the authorization server is unreachable) keeps the
//! connection, and is made again at the next interval; the `exp` still holds.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::{HeaderValue, StatusCode, header};
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::auth::{HttpAuth, Identity};
use crate::reauth::{METHOD, TOKEN_REFUSED, contains};
use crate::server::clients::Principal;
use crate::server::config::HttpConfig;

/// The token a connection runs on, and when it was last verified.
struct Held {
    token: String,
    identity: Arc<Identity>,
    /// The token's `exp`, if it has one.
    expires: Option<Instant>,
    checked: Instant,
    /// Counts the tokens taken, so that a check of an old token does not end the connection.
    generation: u64,
}

/// One connection's token. See the module docs.
pub struct Lease {
    auth: Arc<HttpAuth>,
    recheck: Duration,
    /// The connection's principal: a fresh token must have the same.
    principal: Option<String>,
    held: Mutex<Held>,
    renewed: Notify,
    ended: CancellationToken,
    why: Mutex<String>,
}

/// A [`Lease`] and its watch, which stops when this is dropped (with the connection), as
/// does the check of a presented token.
pub struct Watched {
    lease: Arc<Lease>,
    watch: tokio::task::AbortHandle,
    /// The check of a token presented with `oxmcp/authorize`, while it runs.
    checking: Mutex<Option<tokio::task::AbortHandle>>,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("principal", &self.principal)
            .field("ended", &self.ended.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Watched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Watched").field(&self.lease).finish()
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        self.watch.abort();
        if let Some(check) = self.checking.lock().take() {
            check.abort();
        }
    }
}

impl std::ops::Deref for Watched {
    type Target = Lease;
    fn deref(&self) -> &Lease {
        &self.lease
    }
}

/// Why a token was not taken (or kept).
enum Rejected {
    /// Not valid, or not enough: the connection cannot run on it.
    Invalid(&'static str, String),
    /// It could not be checked now.
    Unavailable,
}

impl Lease {
    /// The lease of a connection whose opening request `parts` passed
    /// [`crate::auth::authenticate`], watched from now on; `None` when the endpoint is not
    /// protected.
    pub fn open(config: &HttpConfig, parts: &axum::http::request::Parts) -> Option<Watched> {
        let auth = config.auth.clone()?;
        let token = crate::auth::bearer_token(&parts.headers).ok()??.to_owned();
        let identity = parts.extensions.get::<Arc<Identity>>()?.clone();
        let lease = Arc::new(Lease {
            auth,
            recheck: config
                .token_recheck_interval
                .max(Duration::from_millis(100)),
            principal: parts.extensions.get::<Principal>().map(|p| p.0.clone()),
            held: Mutex::new(Held {
                expires: expiry(&identity),
                token,
                identity,
                checked: Instant::now(),
                generation: 0,
            }),
            renewed: Notify::new(),
            ended: CancellationToken::new(),
            why: Mutex::new(String::new()),
        });
        let watch = tokio::spawn(lease.clone().watch()).abort_handle();
        Some(Watched {
            lease,
            watch,
            checking: Mutex::new(None),
        })
    }

    /// The identity of the token the connection runs on now.
    pub fn identity(&self) -> Arc<Identity> {
        self.held.lock().identity.clone()
    }

    /// Completes when the connection must end: why (for a close frame or a status).
    pub async fn ended(&self) -> String {
        self.ended.cancelled().await;
        self.why.lock().clone()
    }

    fn end(&self, why: &str) {
        tracing::debug!("a connection's token is no longer good: {why}");
        why.clone_into(&mut self.why.lock());
        self.ended.cancel();
    }

    async fn watch(self: Arc<Self>) {
        loop {
            let renewed = self.renewed.notified();
            tokio::pin!(renewed);
            renewed.as_mut().enable();
            let (expires, due, generation) = {
                let held = self.held.lock();
                (held.expires, held.checked + self.recheck, held.generation)
            };
            let expiry = async {
                match expires {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = expiry => {
                    if self.held.lock().generation == generation {
                        return self.end("the access token expired");
                    }
                }
                () = tokio::time::sleep_until(due) => {
                    if let Err(why) = self.check(generation).await {
                        return self.end(&why);
                    }
                }
                () = &mut renewed => {}
            }
        }
    }

    /// Verifies the token of `generation` again: `Err` with why the connection must end.
    async fn check(&self, generation: u64) -> Result<(), String> {
        let token = self.held.lock().token.clone();
        let verdict = verify(&self.auth, &token).await;
        let mut held = self.held.lock();
        if held.generation != generation {
            return Ok(()); // a fresh token came in meanwhile
        }
        held.checked = Instant::now();
        match verdict {
            Ok((identity, principal)) if principal == self.principal => {
                held.expires = expiry(&identity);
                held.identity = identity;
                Ok(())
            }
            Ok(_) => Err("the access token now names another principal".to_owned()),
            Err(Rejected::Invalid(_, why)) => Err(format!("the access token was refused: {why}")),
            Err(Rejected::Unavailable) => {
                tracing::warn!("a connection's token could not be checked again; kept for now");
                Ok(())
            }
        }
    }

    /// Takes `token`, already verified as `identity` of this connection's principal (a legacy
    /// POST's), if it is not the one held and expires no sooner (a token without `exp`
    /// counts as never expiring).
    pub(crate) fn adopt(&self, token: &str, identity: Arc<Identity>) {
        let mut held = self.held.lock();
        if held.token == token || self.ended.is_cancelled() {
            return;
        }
        let sooner = match (expiry(&identity), held.expires) {
            (Some(new), Some(old)) => new < old,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if !sooner {
            self.replace(&mut held, token, identity);
        }
    }

    fn replace(&self, held: &mut Held, token: &str, identity: Arc<Identity>) {
        token.clone_into(&mut held.token);
        held.expires = expiry(&identity);
        held.identity = identity;
        held.checked = Instant::now();
        held.generation += 1;
        self.renewed.notify_one();
    }

    /// Verifies `token` and takes it if it belongs to this connection's principal: its `exp`.
    async fn renew(&self, token: &str) -> Result<Option<u64>, Rejected> {
        let (identity, principal) = verify(&self.auth, token).await?;
        if principal != self.principal {
            return Err(Rejected::Invalid(
                "invalid_token",
                "the token belongs to another principal".to_owned(),
            ));
        }
        if self.ended.is_cancelled() {
            return Err(Rejected::Invalid(
                "invalid_token",
                "the connection's token already ended".to_owned(),
            ));
        }
        let exp = exp_claim(&identity);
        self.replace(&mut self.held.lock(), token, identity);
        Ok(exp)
    }

    /// The answer (JSON-RPC, its id to be set) to a presentation of `token`.
    async fn answer(&self, token: &str) -> serde_json::Value {
        match self.renew(token).await {
            Ok(exp) => serde_json::json!({"jsonrpc": "2.0", "result": {"expiresAt": exp}}),
            Err(Rejected::Invalid(code, why)) => {
                tracing::debug!("a fresh token was refused: {why}");
                let mut e = error(TOKEN_REFUSED, &format!("Unauthorized: {why}"));
                e["error"]["data"] = serde_json::json!({ "error": code });
                e
            }
            Err(Rejected::Unavailable) => {
                error(-32000, "the token could not be checked now; retry later")
            }
        }
    }
}

/// An `oxmcp/authorize` request.
#[derive(serde::Deserialize)]
struct Presentation {
    id: Option<serde_json::Value>,
    method: String,
    params: Option<serde_json::Value>,
}

impl Presentation {
    /// `frame` as an `oxmcp/authorize` request, if it is one.
    fn of(frame: &[u8]) -> Option<Self> {
        if !contains(frame, METHOD.as_bytes()) {
            return None;
        }
        let request: Self = serde_json::from_slice(frame).ok()?;
        (request.method == METHOD).then_some(request)
    }

    fn token(&self) -> Option<String> {
        let token = self.params.as_ref()?.get("token")?.as_str()?;
        Some(token.to_owned())
    }

    /// `answer` with this request's id, as JSON; `None` for a request without an id.
    fn answered(&self, mut answer: serde_json::Value) -> Option<String> {
        let id = self.id.clone()?;
        answer["id"] = id;
        Some(answer.to_string())
    }
}

impl Watched {
    /// If `frame` is an `oxmcp/authorize` request, handles it without waiting for the token's
    /// check: `Some(answer)` (JSON) to send back now, `Some(None)` when there is nothing to
    /// send now (the check runs in a task of its own, which hands its answer to `reply`, or
    /// the request has no id). Only one check runs at a time on a connection: a presentation
    /// during another one's check is answered -32000 at once. `None`: not such a request,
    /// for the engine.
    pub fn authorize_frame<R, F>(&self, frame: &[u8], reply: R) -> Option<Option<String>>
    where
        R: FnOnce(String) -> F + Send + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        let request = Presentation::of(frame)?;
        let Some(token) = request.token() else {
            let refused = error(-32602, "Invalid params: a `token` string is required");
            return Some(request.answered(refused));
        };
        let mut checking = self.checking.lock();
        if checking.as_ref().is_some_and(|c| !c.is_finished()) {
            let busy = error(
                -32000,
                "another token is being checked on this connection; present this one after \
                 its answer",
            );
            return Some(request.answered(busy));
        }
        let lease = self.lease.clone();
        let check = tokio::spawn(async move {
            let answer = lease.answer(&token).await;
            if let Some(line) = request.answered(answer) {
                reply(line).await;
            }
        });
        *checking = Some(check.abort_handle());
        Some(None)
    }
}

/// A JSON-RPC error answer, its id to be set.
fn error(code: i64, message: &str) -> serde_json::Value {
    serde_json::json!({"jsonrpc": "2.0", "error": {"code": code, "message": message}})
}

/// Verifies `token` as a request's would be ([`crate::auth::authenticate`]): its identity
/// and principal.
async fn verify(
    auth: &Arc<HttpAuth>,
    token: &str,
) -> Result<(Arc<Identity>, Option<String>), Rejected> {
    let invalid = |why: &str| Rejected::Invalid("invalid_token", why.to_owned());
    let value = HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| invalid("the token is not a usable header value"))?;
    let (mut parts, ()) = axum::http::Request::new(()).into_parts();
    parts.headers.insert(header::AUTHORIZATION, value);
    if let Err(refusal) = crate::auth::authenticate(Some(auth), &mut parts).await {
        return Err(match refusal.status() {
            StatusCode::SERVICE_UNAVAILABLE => Rejected::Unavailable,
            StatusCode::FORBIDDEN => Rejected::Invalid(
                "insufficient_scope",
                "the token lacks the scopes every request needs".to_owned(),
            ),
            _ => invalid("the token is not valid (expired, revoked or malformed)"),
        });
    }
    let identity = parts
        .extensions
        .get::<Arc<Identity>>()
        .cloned()
        .ok_or_else(|| invalid("the token has no identity"))?;
    let principal = parts.extensions.get::<Principal>().map(|p| p.0.clone());
    Ok((identity, principal))
}

/// The `exp` claim (seconds since the epoch), if there is one.
fn exp_claim(identity: &Identity) -> Option<u64> {
    let exp = identity.claims.get("exp")?;
    exp.as_u64().or_else(|| {
        exp.as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .map(|f| f as u64)
    })
}

/// When the token expires, as an instant (now if it already has).
fn expiry(identity: &Identity) -> Option<Instant> {
    let exp = exp_claim(identity)?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs();
    Instant::now().checked_add(Duration::from_secs(exp.saturating_sub(now)))
}

/// Completes when a connection's token ends (never for a connection without one): why.
pub async fn ended(lease: Option<&Watched>) -> String {
    match lease {
        Some(lease) => lease.ended().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn with_exp(exp: serde_json::Value) -> Identity {
        let mut identity = Identity::default();
        identity.claims.insert("exp".into(), exp);
        identity
    }

    fn unix_now() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
    }

    #[test]
    fn the_exp_claim_sets_the_end() {
        assert_eq!(
            exp_claim(&with_exp(serde_json::json!(1_700_000_000))),
            Some(1_700_000_000)
        );
        assert_eq!(
            exp_claim(&with_exp(serde_json::json!(1.7e9))),
            Some(1_700_000_000)
        );
        assert_eq!(exp_claim(&with_exp(serde_json::json!(-5))), None);
        assert_eq!(exp_claim(&with_exp(serde_json::json!("soon"))), None);
        assert_eq!(
            exp_claim(&Identity::default()),
            None,
            "no exp: no end but the checks"
        );
        // An exp in the past ends the connection at once; one far away does not overflow.
        let past = expiry(&with_exp(serde_json::json!(unix_now() - 10))).unwrap();
        assert!(past <= Instant::now());
        let later = expiry(&with_exp(serde_json::json!(unix_now() + 100))).unwrap();
        assert!(later > Instant::now() + Duration::from_secs(95));
        assert!(expiry(&with_exp(serde_json::json!(u64::MAX))).is_none_or(|at| at > later));
    }
}
