//! DNS-rebinding protection: `Host` and `Origin` checked against an allow-list.

use axum::http::HeaderMap;

use crate::server::config::HttpConfig;

const LOOPBACK: &[&str] = &["localhost", "127.0.0.1", "[::1]", "::1"];

/// Strips a `:port` suffix (keeping IPv6 brackets).
fn host_only(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.find(']').map_or(authority, |i| &authority[..i + 2]);
    }
    authority.rsplit_once(':').map_or(authority, |(h, p)| {
        if p.chars().all(|c| c.is_ascii_digit()) {
            h
        } else {
            authority
        }
    })
}

fn host_allowed(config: &HttpConfig, host: &str) -> bool {
    let host = host_only(host).to_ascii_lowercase();
    if config.allowed_hosts.is_empty() {
        LOOPBACK.contains(&host.as_str())
    } else {
        config
            .allowed_hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(&host))
    }
}

/// Why the DNS-rebinding protection refused a request (the HTTP answer is a `Refusal`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Disallowed {
    /// `Host` missing or not allowed.
    Host(String),
    /// `Origin` not allowed.
    Origin(String),
}

/// Checks `Host` and `Origin`.
pub(crate) fn check(config: &HttpConfig, headers: &HeaderMap) -> Result<(), Disallowed> {
    if !config.dns_rebinding_protection {
        return Ok(());
    }
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if !host_allowed(config, host) {
        return Err(Disallowed::Host(host.to_owned()));
    }
    if let Some(origin) = headers.get(axum::http::header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let allowed = config
            .allowed_origins
            .iter()
            .any(|o| o.eq_ignore_ascii_case(origin))
            || origin.split_once("://").is_some_and(|(scheme, rest)| {
                matches!(scheme, "http" | "https")
                    && host_allowed(config, rest.trim_end_matches('/'))
            });
        if !allowed {
            return Err(Disallowed::Origin(origin.to_owned()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(host: &str, origin: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("host", HeaderValue::from_str(host).unwrap());
        if let Some(o) = origin {
            h.insert("origin", HeaderValue::from_str(o).unwrap());
        }
        h
    }

    #[test]
    fn loopback_only_by_default() {
        let c = HttpConfig::default();
        assert!(check(&c, &headers("127.0.0.1:8080", None)).is_ok());
        assert!(check(&c, &headers("localhost", Some("http://localhost:3000"))).is_ok());
        assert!(check(&c, &headers("[::1]:80", None)).is_ok());
        assert!(check(&c, &headers("evil.example.com", None)).is_err());
        assert!(
            check(
                &c,
                &headers("127.0.0.1:8080", Some("http://evil.example.com"))
            )
            .is_err()
        );
        assert!(check(&c, &headers("localhost.evil.com", None)).is_err());
        let off = HttpConfig::default().dns_rebinding_protection(false);
        assert!(check(&off, &headers("evil.example.com", None)).is_ok());
        let custom = HttpConfig::default().allowed_hosts(vec!["mcp.example.com".into()]);
        assert!(
            check(
                &custom,
                &headers("mcp.example.com:443", Some("https://mcp.example.com"))
            )
            .is_ok()
        );
        assert!(check(&custom, &headers("localhost", None)).is_err());
    }
}
