//! Sending a request: the era's form of it, and retries of safe methods.

use oxmcp_engine::{CallError, RequestOptions};
use oxmcp_types::methods::Request as RequestMethod;

use super::Client;

impl Client {
    pub(super) fn require(&self, present: bool, what: &str) -> Result<(), CallError> {
        if present {
            Ok(())
        } else {
            Err(CallError::Protocol(format!(
                "the server does not support {what}"
            )))
        }
    }

    pub(super) async fn call<R: RequestMethod>(
        &self,
        params: &R::Params,
    ) -> Result<R::Result, CallError> {
        self.request_with::<R>(params, &self.options).await
    }

    /// Sends a typed request; in the 2026-07-28 era its `_meta` describes us.
    pub(super) async fn request_with<R: RequestMethod>(
        &self,
        params: &R::Params,
        options: &RequestOptions,
    ) -> Result<R::Result, CallError> {
        let retry = crate::retry::safe_method(R::METHOD);
        self.retrying(retry, options, |o| self.request_once::<R>(params, o))
            .await
    }

    /// Runs `attempt` until it succeeds, fails in a way that is not retried, or the policy's
    /// attempts are used up; waits the backoff (or the server's Retry-After) in between.
    pub(super) async fn retrying<T, F, Fut>(
        &self,
        retry: bool,
        options: &RequestOptions,
        mut attempt: F,
    ) -> Result<T, CallError>
    where
        F: FnMut(RequestOptions) -> Fut,
        Fut: Future<Output = Result<T, CallError>>,
    {
        let policy = &self.retry;
        let mut retries = 0u32;
        loop {
            let mut opts = options.clone();
            #[cfg(feature = "otel")]
            crate::otel::inject(&mut opts);
            if let Some(t) = policy.attempt_timeout {
                opts.timeout = t;
            }
            match attempt(opts).await {
                Err(e) if retry && retries + 1 < policy.max_attempts => {
                    let Some(after) = policy.retryable(&e) else {
                        return Err(e);
                    };
                    let wait = after.unwrap_or_else(|| policy.backoff(retries));
                    tracing::debug!(attempt = retries + 1, ?wait, "retrying after: {e}");
                    tokio::time::sleep(wait).await;
                    retries += 1;
                }
                other => return other,
            }
        }
    }
}
