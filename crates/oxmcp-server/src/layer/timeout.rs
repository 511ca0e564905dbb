//! [`TimeoutLayer`]: a deadline per tool (and one for everything else), after which the
//! handler is dropped and the caller gets an error.

use std::collections::HashMap;
use std::time::Duration;

use futures::future::BoxFuture;
use oxmcp_engine::HandlerResult;
use oxmcp_jsonrpc::{ErrorCode, ErrorObject};

use super::{Layer, McpRequest, Next, Target};

/// Gives each request a deadline: the one set for its tool, else the default (if any). A
/// request past it is answered with JSON-RPC error -32001 (`data.timeoutMs` says the
/// deadline) and its handler's future is dropped, which stops it at its next await.
#[derive(Debug, Clone, Default)]
pub struct TimeoutLayer {
    default: Option<Duration>,
    tools: HashMap<String, Duration>,
}

/// The code of a request that ran past its deadline.
pub const TIMED_OUT: ErrorCode = ErrorCode(-32001);

impl TimeoutLayer {
    /// Every request within `default` (`None`: only the tools named with [`Self::tool`]).
    pub fn new(default: Option<Duration>) -> Self {
        Self {
            default,
            tools: HashMap::new(),
        }
    }

    /// Calls of the tool `name` within `limit`.
    #[must_use]
    pub fn tool(mut self, name: impl Into<String>, limit: Duration) -> Self {
        self.tools.insert(name.into(), limit);
        self
    }
}

impl Layer for TimeoutLayer {
    fn call(&self, req: McpRequest, next: Next) -> BoxFuture<'static, HandlerResult> {
        let (limit, what) = match req.target() {
            Some(Target::Tool(name)) if self.tools.contains_key(name) => (
                self.tools.get(name).copied(),
                format!("tool {:?}", crate::echo::echo(name)),
            ),
            _ => (self.default, crate::echo::echo(req.method())),
        };
        let Some(limit) = limit else {
            return next.run(req);
        };
        let answer = next.run(req);
        Box::pin(async move {
            match tokio::time::timeout(limit, answer).await {
                Ok(answer) => answer,
                Err(_) => Err(ErrorObject::new(
                    TIMED_OUT,
                    format!("Request timed out: {what} ran past its {limit:?} deadline"),
                )
                .with_data(serde_json::json!({ "timeoutMs": limit.as_millis() }))),
            }
        })
    }
}
