//! Where the client transport may send a request: only to the origin (scheme, host, port) of
//! the MCP URL it was given.
//!
//! - **Redirects.** A 307 or 308 to the same origin is followed (at most
//!   [`MAX_REDIRECTS`] hops); those keep the method, the body and every header. Any other
//!   redirect is not followed: one to another origin (which would carry custom headers,
//!   `Mcp-Session-Id` and the body there), and a 301, 302 or 303, which would turn a POST into
//!   a GET without its body. The 3xx response then reaches the transport, which fails that
//!   request with the status in `data` ([`redirect_message`]).
//! - **The HTTP+SSE `endpoint` event** (2024-11-05) is resolved against the stream's URL as a
//!   browser resolves a link, and refused unless it lands on the same origin
//!   ([`resolve_endpoint`]).

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

/// Why an HTTP+SSE `endpoint` event was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EndpointError {
    /// The URL the stream was opened at does not parse (it was requested, so unlikely).
    #[error("the MCP URL {0:?} is not a valid URL")]
    Base(String),
    /// The event's data is not a URL reference.
    #[error("refusing the HTTP+SSE endpoint {0:?}: not a valid URL")]
    Invalid(String),
    /// The endpoint resolves to another origin.
    #[error(
        "refusing the HTTP+SSE endpoint {endpoint:?}: it resolves to {resolved}, on another \
         origin than {base}"
    )]
    OtherOrigin {
        /// The event's data.
        endpoint: String,
        /// Where it resolves to.
        resolved: String,
        /// The stream's URL.
        base: String,
    },
}

/// Resolves an `endpoint` event against the URL of its stream (WHATWG URL parsing, so
/// backslashes, scheme-relative references, userinfo and percent-encoded hosts mean what a
/// browser takes them to mean), and accepts it only on the same origin.
pub(crate) fn resolve_endpoint(base: &str, endpoint: &str) -> Result<Url, EndpointError> {
    let base_url = Url::parse(base).map_err(|_| EndpointError::Base(base.to_owned()))?;
    let resolved = base_url
        .join(endpoint)
        .map_err(|_| EndpointError::Invalid(endpoint.to_owned()))?;
    if same_origin(&base_url, &resolved) {
        Ok(resolved)
    } else {
        Err(EndpointError::OtherOrigin {
            endpoint: endpoint.to_owned(),
            resolved: resolved.to_string(),
            base: base.to_owned(),
        })
    }
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

    fn resolved(base: &str, endpoint: &str) -> Result<String, String> {
        resolve_endpoint(base, endpoint)
            .map(String::from)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn endpoints_stay_on_origin() {
        let base = "http://127.0.0.1:8080/sse";
        for (endpoint, expected) in [
            (
                "/message?sessionId=1",
                "http://127.0.0.1:8080/message?sessionId=1",
            ),
            ("message?x=1", "http://127.0.0.1:8080/message?x=1"),
            ("http://127.0.0.1:8080/m", "http://127.0.0.1:8080/m"),
            ("HTTP://127.0.0.1:8080/m", "http://127.0.0.1:8080/m"),
            // A URL in the query does not make the reference absolute.
            (
                "/m?next=http://evil.example/",
                "http://127.0.0.1:8080/m?next=http://evil.example/",
            ),
            // The same scheme without `//` is a relative path, as browsers read it.
            (
                "http:evil.example/m",
                "http://127.0.0.1:8080/evil.example/m",
            ),
            // Percent-encoded and hex hosts that are the same host.
            ("http://%31%32%37.0.0.1:8080/m", "http://127.0.0.1:8080/m"),
            ("http://0x7f.0.0.1:8080/m", "http://127.0.0.1:8080/m"),
            // Leading spaces, and tabs anywhere, are dropped by the URL parser.
            ("  /m", "http://127.0.0.1:8080/m"),
            ("/m\tx", "http://127.0.0.1:8080/mx"),
        ] {
            assert_eq!(
                resolved(base, endpoint).as_deref(),
                Ok(expected),
                "{endpoint:?}"
            );
        }
        for endpoint in [
            "http://evil.example.com/m",
            "http://127.0.0.1:9999/m",
            "https://127.0.0.1:8080/m",
            "http://localhost:8080/m",
            "//evil.example.com/m",
            " //evil.example.com/m",
            r"/\evil.example/m",
            r"\\evil.example\m",
            "/\t/evil.example/m",
            "http://127.0.0.1:8080@evil.example/",
            "http://127.0.0.1:8080%40evil.example/",
            "http://evil%2Eexample/m",
            "https:evil.example/m",
            "evil.example:80/m",
            "javascript:alert(1)",
            "data:text/plain,x",
        ] {
            let r = resolved(base, endpoint);
            assert!(r.is_err(), "{endpoint:?} resolved to {r:?}");
        }
        // A URL without a path: a relative endpoint stays under it.
        assert_eq!(
            resolved("http://127.0.0.1:8080", "127.0.0.1:9999/m").as_deref(),
            Ok("http://127.0.0.1:8080/127.0.0.1:9999/m")
        );
        let e = resolved(base, "http://127.0.0.1:9999/m").unwrap_err();
        assert!(e.contains("another origin"), "{e}");
    }
}
