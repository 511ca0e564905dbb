//! [`AuditLayer`]: one log line per request, with who asked for what and how it ended.

use std::time::Instant;

use futures::future::BoxFuture;
use oxmcp_engine::HandlerResult;

use super::{Layer, McpRequest, Next, Outcome};

/// Logs each request when it has been answered, as a `tracing` event at INFO on the target
/// `oxmcp::audit`: method, tool/prompt/resource, principal, session, request id, outcome
/// (`ok`, `tool_error` or the JSON-RPC error code) and duration. Never the arguments or
/// the result. Install a subscriber that keeps `oxmcp::audit=info` to see them (for
/// `oxmcp serve`: `MCP_LOG=oxmcp::audit=info`, with `--log-format json` for one object per
/// line).
#[derive(Debug, Clone, Default)]
pub struct AuditLayer {
    _private: (),
}

impl AuditLayer {
    /// The audit layer.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Layer for AuditLayer {
    fn call(&self, req: McpRequest, next: Next) -> BoxFuture<'static, HandlerResult> {
        let method = req.method().to_owned();
        let target = req.target().map(|t| t.name().to_owned());
        let principal = req.principal().map(str::to_owned);
        let session = req.session().map(str::to_owned);
        let id = req.id().to_string();
        let started = Instant::now();
        let answer = next.run(req);
        Box::pin(async move {
            let answer = answer.await;
            let outcome = match Outcome::of_answer_to(&method, &answer) {
                Outcome::Ok => "ok".to_owned(),
                Outcome::ToolError => "tool_error".to_owned(),
                Outcome::Error(code) => code.to_string(),
            };
            tracing::info!(
                target: "oxmcp::audit",
                method = %method,
                target_name = target.as_deref().unwrap_or(""),
                principal = principal.as_deref().unwrap_or(""),
                session = session.as_deref().unwrap_or(""),
                request_id = %id,
                outcome = %outcome,
                duration_ms = started.elapsed().as_secs_f64() * 1000.0,
                "mcp request"
            );
            answer
        })
    }
}
