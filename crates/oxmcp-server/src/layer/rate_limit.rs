//! [`RateLimitLayer`]: tool calls per tool and per principal, refused past their budget with a
//! transient busy error (-32000) that says when to retry.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::time::Duration;

use futures::future::BoxFuture;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, DefaultKeyedRateLimiter, RateLimiter};
use oxmcp_engine::HandlerResult;
use oxmcp_jsonrpc::{ErrorCode, ErrorObject};

use super::{Layer, McpRequest, Next, Target};

/// Principals tracked at once before the idle ones are forgotten.
const MAX_TRACKED: usize = 10_000;

/// A budget: `calls` per `per`, refilled evenly (a burst of `calls` is allowed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    calls: NonZeroU32,
    per: Duration,
}

impl Quota {
    /// `calls` per `per`; `None` when either is zero.
    pub fn new(calls: u32, per: Duration) -> Option<Quota> {
        let calls = NonZeroU32::new(calls)?;
        (!per.is_zero()).then_some(Quota { calls, per })
    }

    /// `calls` per second (`None` for 0).
    pub fn per_second(calls: u32) -> Option<Quota> {
        Quota::new(calls, Duration::from_secs(1))
    }

    /// `calls` per minute (`None` for 0).
    pub fn per_minute(calls: u32) -> Option<Quota> {
        Quota::new(calls, Duration::from_secs(60))
    }

    fn governor(self) -> governor::Quota {
        let each = self.per / self.calls.get();
        governor::Quota::with_period(each.max(Duration::from_nanos(1)))
            .unwrap_or_else(|| governor::Quota::per_second(self.calls))
            .allow_burst(self.calls)
    }
}

/// Refuses `tools/call` requests past their budget: per tool (shared by every caller) and
/// per principal (each verified sender apart; the unverified share one budget). A refused
/// call is a JSON-RPC error -32000 whose `data` has `transient: true`, `retryAfterMs`, the
/// `limit` and `periodMs`, and `scope` (`tool` or `principal`); the handler never runs.
/// Other methods pass untouched.
pub struct RateLimitLayer {
    /// Made once: making a clock calibrates it, which costs more than a call.
    clock: DefaultClock,
    tools: HashMap<String, (Quota, DefaultDirectRateLimiter)>,
    principals: Option<(Quota, DefaultKeyedRateLimiter<String>)>,
}

impl std::fmt::Debug for RateLimitLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimitLayer")
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .field("principals", &self.principals.as_ref().map(|p| p.0))
            .finish()
    }
}

impl Default for RateLimitLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl RateLimitLayer {
    /// No budgets yet.
    pub fn new() -> Self {
        Self {
            clock: DefaultClock::default(),
            tools: HashMap::new(),
            principals: None,
        }
    }

    /// Calls of the tool `name`, from everyone together, within `quota`.
    #[must_use]
    pub fn tool(mut self, name: impl Into<String>, quota: Quota) -> Self {
        let limiter = RateLimiter::direct(quota.governor());
        self.tools.insert(name.into(), (quota, limiter));
        self
    }

    /// Tool calls of each principal within `quota`.
    #[must_use]
    pub fn per_principal(mut self, quota: Quota) -> Self {
        self.principals = Some((quota, RateLimiter::keyed(quota.governor())));
        self
    }

    /// `None` when the call may go on, else its refusal.
    fn check(&self, req: &McpRequest) -> Option<ErrorObject> {
        let Some(Target::Tool(name)) = req.target() else {
            return None;
        };
        if let Some((quota, limiter)) = self.tools.get(name)
            && let Err(not_until) = limiter.check()
        {
            let wait = not_until.wait_time_from(self.clock.now());
            let what = format!("tool {:?}", crate::echo::echo(name));
            return Some(refusal(&what, "tool", *quota, wait));
        }
        if let Some((quota, limiter)) = &self.principals {
            if limiter.len() > MAX_TRACKED {
                limiter.retain_recent();
            }
            let key = req.principal().unwrap_or("").to_owned();
            if let Err(not_until) = limiter.check_key(&key) {
                let wait = not_until.wait_time_from(self.clock.now());
                return Some(refusal("this principal", "principal", *quota, wait));
            }
        }
        None
    }
}

/// The busy error of a refused call.
fn refusal(what: &str, scope: &str, quota: Quota, wait: Duration) -> ErrorObject {
    let wait_ms = wait.as_millis().max(1);
    ErrorObject::new(
        ErrorCode::SERVER_BUSY,
        format!(
            "Rate limit exceeded for {what}: {} calls per {:?}; retry in {wait_ms} ms",
            quota.calls, quota.per
        ),
    )
    .with_data(serde_json::json!({
        "transient": true,
        "retryAfterMs": wait_ms,
        "limit": quota.calls.get(),
        "periodMs": quota.per.as_millis(),
        "scope": scope,
    }))
}

impl Layer for RateLimitLayer {
    fn call(&self, req: McpRequest, next: Next) -> BoxFuture<'static, HandlerResult> {
        match self.check(&req) {
            Some(e) => Box::pin(async move { Err(e) }),
            None => next.run(req),
        }
    }
}
