//! Admission: the checks a request passes before anything is done for it (DNS-rebinding
//! protection, protocol version, shutdown, stream caps, the session it names).

use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use oxmcp_types::ProtocolVersion;

use crate::server::config::HttpConfig;
use crate::server::guard;
use crate::server::refusal::Refusal;
use crate::server::replies::VERSION_HEADER;
use crate::server::session::HttpSession;

/// 503 once shutdown has begun.
pub(crate) fn accepting(config: &HttpConfig) -> Result<(), Refusal> {
    if config.shutdown.is_cancelled() {
        return Err(Refusal::shutting_down());
    }
    Ok(())
}

/// 429 when the session already has its most SSE streams attached.
pub(crate) fn stream_slot(config: &HttpConfig, session: &HttpSession) -> Result<(), Refusal> {
    if session.attached_streams() >= config.max_streams_per_session {
        return Err(Refusal::retry_later(
            StatusCode::TOO_MANY_REQUESTS,
            None,
            Duration::from_secs(1),
            "Too many open streams on this session",
        ));
    }
    Ok(())
}

/// A session id header that could be ours: visible ASCII, at most 128 bytes.
pub(crate) fn plausible_session_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

/// 403 unless `Host` and `Origin` pass the DNS-rebinding check.
///
/// # Errors
/// [`Refusal::forbidden_host`] for a `Host` or `Origin` the endpoint does not allow.
pub fn host_checks(config: &HttpConfig, headers: &HeaderMap) -> Result<(), Refusal> {
    if let Err(refusal) = guard::check(config, headers) {
        tracing::warn!(?refusal, "refused by DNS-rebinding protection");
        return Err(Refusal::forbidden_host());
    }
    Ok(())
}

/// 400 unless every `MCP-Protocol-Version` value is a known version.
///
/// # Errors
/// [`Refusal::unsupported_version`] for the first value that is not a known version.
pub fn version_checks(headers: &HeaderMap) -> Result<(), Refusal> {
    // Every value counts: a request may not smuggle a second, unsupported version.
    for v in headers.get_all(&VERSION_HEADER) {
        let v = v.to_str().unwrap_or("");
        if ProtocolVersion::parse(v).is_none() {
            return Err(Refusal::unsupported_version(None, v));
        }
    }
    Ok(())
}

pub(crate) fn common_checks(config: &HttpConfig, headers: &HeaderMap) -> Result<(), Refusal> {
    host_checks(config, headers)?;
    version_checks(headers)
}
