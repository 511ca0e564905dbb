//! Where the client transport may send a request: only to the origin (scheme, host, port) of
//! the MCP URL it was given.
//!
//! - **Redirects.** A 307 or 308 to the same origin is followed (at most
//!   [`MAX_REDIRECTS`] hops); those keep the method, the body and every header. Any other
//!   redirect is not followed: one to another origin (which would carry custom headers,
//!   `Mcp-Session-Id` and the body there), and a 301, 302 or 303, which would turn a POST into
//!   a GET without its body. The 3xx response then reaches the transport, which fails that
//!   request with the status in `data` ([`redirect_message`]).

use reqwest::StatusCode;
use reqwest::Url;
use reqwest::header::HeaderMap;

/// Most same-origin redirects followed for one request.
pub(crate) const MAX_REDIRECTS: usize = 10;

/// Whether two URLs have the same origin (scheme, host and port, default ports filled in).
/// URLs without a tuple origin (`data:`, `file:`, …) match nothing.
pub(crate) fn same_origin(a: &Url, b: &Url) -> bool {
    let (a, b) = (a.origin(), b.origin());
    a.is_tuple() && a == b
}

/// The client's redirect policy: see the module documentation.
pub(crate) fn redirect_policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
        );
        // `previous` starts with the URL first requested.
        let previous = attempt.previous();
        let on_origin = previous
            .first()
            .is_some_and(|first| same_origin(first, attempt.url()));
        if keeps_body && on_origin && previous.len() <= MAX_REDIRECTS {
            attempt.follow()
        } else {
            tracing::warn!(
                status = %attempt.status(),
                to = %attempt.url(),
                "not following a redirect (only 307/308 within the origin are followed)"
            );
            attempt.stop()
        }
    })
}

/// The message for a redirect the policy did not follow, or `None` if `status` is not one.
pub(crate) fn redirect_message(status: StatusCode, headers: &HeaderMap) -> Option<String> {
    if !status.is_redirection() {
        return None;
    }
    let location = headers
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("(no Location)");
    let location: String = location.chars().take(500).collect();
    Some(format!(
        "HTTP {status}: the redirect to {location} was not followed (MCP requests follow only \
         307/308 redirects within the origin, at most {MAX_REDIRECTS})"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn origins() {
        let base = url("http://127.0.0.1:8080/mcp");
        assert!(same_origin(&base, &url("http://127.0.0.1:8080/other?x")));
        assert!(same_origin(
            &url("http://a.example/"),
            &url("HTTP://A.EXAMPLE:80/m")
        ));
        assert!(same_origin(
            &url("https://a.example/"),
            &url("https://a.example:443/")
        ));
        assert!(!same_origin(&base, &url("http://127.0.0.1:8081/mcp")));
        assert!(!same_origin(&base, &url("https://127.0.0.1:8080/mcp")));
        assert!(!same_origin(&base, &url("http://localhost:8080/mcp")));
        assert!(!same_origin(
            &base,
            &url("http://127.0.0.1:8080@evil.example/")
        ));
        let data = url("data:text/plain,x");
        assert!(!same_origin(&data, &data));
    }

    #[test]
    fn redirect_messages_name_the_target() {
        let mut h = HeaderMap::new();
        h.insert("location", "http://evil.example/x".parse().unwrap());
        let m = redirect_message(StatusCode::TEMPORARY_REDIRECT, &h).unwrap();
        assert!(
            m.contains("307") && m.contains("http://evil.example/x"),
            "{m}"
        );
        assert!(redirect_message(StatusCode::BAD_REQUEST, &h).is_none());
    }
}
