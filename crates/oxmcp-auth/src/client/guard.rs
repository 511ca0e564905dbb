//! What the OAuth client may fetch and open (SSRF guards): https outside loopback, no
//! private, link-local or cloud-metadata addresses unless allowed (nor the IPv6 forms that
//! carry one: mapped, compatible, NAT64, 6to4, Teredo), addresses checked again after DNS
//! resolution (so a name cannot resolve to a blocked address), no proxy from the environment
//! (a proxy would resolve names itself), and no redirects.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use url::{Host, Url};

use crate::AuthError;

/// Which hosts the client may reach besides public ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostPolicy {
    /// Loopback addresses (127/8, ::1, `localhost`): allowed when the MCP server itself is
    /// on loopback (local development), or when the user says so.
    pub loopback: bool,
    /// Private, link-local, unique-local and other non-public addresses (cloud metadata at
    /// 169.254.169.254 among them): only when the user says so.
    pub private: bool,
}

impl HostPolicy {
    /// The policy for an MCP server at `server`: loopback is allowed when the server is on
    /// loopback; private addresses when `allow_private`.
    pub fn for_server(server: &Url, allow_private: bool) -> Self {
        Self {
            loopback: allow_private || is_loopback_host(server),
            private: allow_private,
        }
    }

    /// Whether an address may be reached.
    pub fn allows(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        if ip.is_loopback() {
            return self.loopback;
        }
        if is_public(ip) {
            return true;
        }
        self.private
    }

    /// Checks a URL the client is about to fetch (metadata, registration, token): http(s)
    /// only, http only to loopback, and a literal address the policy allows.
    ///
    /// # Errors
    /// [`AuthError::Refused`] naming the URL and why.
    pub fn check(&self, url: &Url, what: &str) -> Result<(), AuthError> {
        let refuse = |why: &str| Err(AuthError::Refused(format!("{what} {url}: {why}")));
        match url.scheme() {
            "https" => {}
            "http" if is_loopback_host(url) => {}
            "http" => return refuse("http is allowed only to loopback; use https"),
            _ => return refuse("only https (or http to loopback) URLs are fetched"),
        }
        if !url.username().is_empty() || url.password().is_some() {
            return refuse("a URL with credentials in it is not fetched");
        }
        let ip = match url.host() {
            Some(Host::Ipv4(a)) => IpAddr::V4(a),
            Some(Host::Ipv6(a)) => IpAddr::V6(a),
            Some(Host::Domain(d)) => {
                let d = d.trim_end_matches('.').to_ascii_lowercase();
                if d == "localhost" || d.ends_with(".localhost") {
                    if self.loopback {
                        return Ok(());
                    }
                    return refuse("loopback hosts are not fetched for a remote server");
                }
                if BLOCKED_NAMES.contains(&d.as_str()) {
                    return refuse("cloud metadata hosts are never fetched");
                }
                return Ok(()); // checked again once resolved (see `Resolver`)
            }
            None => return refuse("no host"),
        };
        if self.allows(ip) {
            Ok(())
        } else {
            refuse("a private, link-local or loopback address (allow it explicitly to use it)")
        }
    }
}

/// Cloud metadata services reached by name.
const BLOCKED_NAMES: &[&str] = &[
    "metadata.google.internal",
    "metadata.goog",
    "metadata.azure.internal",
    "instance-data",
    "instance-data.ec2.internal",
];

/// Whether the URL's host is loopback (`localhost`, 127/8, ::1).
pub fn is_loopback_host(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(a)) => a.is_loopback(),
        Some(Host::Ipv6(a)) => canonical(IpAddr::V6(a)).is_loopback(),
        Some(Host::Domain(d)) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost")
        }
        None => false,
    }
}

/// An IPv4-mapped or IPv4-compatible IPv6 address as the IPv4 address it carries.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

/// Whether an address is globally routable (not private, shared, link-local, documentation,
/// benchmarking, multicast, reserved or unspecified).
fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => is_public_v4(a),
        IpAddr::V6(a) => is_public_v6(a),
    }
}

fn is_public_v4(a: Ipv4Addr) -> bool {
    let [o0, o1, o2, _] = a.octets();
    !(a.is_private()
        || a.is_loopback()
        || a.is_link_local()
        || a.is_unspecified()
        || a.is_broadcast()
        || a.is_documentation()
        || a.is_multicast()
        || o0 == 0
        || (o0 == 100 && (64..128).contains(&o1)) // shared address space (CGNAT)
        || (o0 == 192 && o1 == 0 && o2 == 0) // IETF protocol assignments
        || (o0 == 198 && (o1 == 18 || o1 == 19)) // benchmarking
        || o0 >= 240)
}

fn is_public_v6(a: Ipv6Addr) -> bool {
    let [s0, s1, s2, ..] = a.segments();
    !(a.is_loopback()
        || a.is_unspecified()
        || a.is_multicast()
        || (s0 & 0xfe00) == 0xfc00 // unique local fc00::/7
        || (s0 & 0xffc0) == 0xfe80 // link-local fe80::/10
        || (s0 & 0xffc0) == 0xfec0 // site-local (deprecated)
        || s0 == 0x2001 && s1 == 0x0db8 // documentation
        || s0 == 0x64 && s1 == 0xff9b // NAT64 (64:ff9b::/96), may reach private IPv4
        || s0 == 0x64 && s1 == 0xff9b && s2 == 1 // local-use NAT64 64:ff9b:1::/48
        || a.to_ipv4().is_some_and(|v4| !is_public_v4(v4))
        || embedded_v4(a).iter().any(|v4| !is_public_v4(*v4)))
}

/// The IPv4 addresses a transition address carries: the one of a 6to4 address
/// (`2002:AABB:CCDD::/48`, RFC 3056), and the server's and (inverted) client's of a Teredo
/// address (`2001:0::/32`, RFC 4380 §4). A private or loopback one makes the address private.
fn embedded_v4(a: Ipv6Addr) -> Vec<Ipv4Addr> {
    let s = a.segments();
    let v4 = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    match (s[0], s[1]) {
        (0x2002, _) => vec![v4(s[1], s[2])],
        (0x2001, 0x0000) => vec![v4(s[2], s[3]), v4(!s[6], !s[7])],
        _ => Vec::new(),
    }
}

/// A DNS resolver for reqwest that drops addresses the policy does not allow, so a host name
/// cannot lead to a private address (the addresses checked are the ones connected to).
#[derive(Debug, Clone)]
pub(crate) struct Resolver(pub(crate) HostPolicy);

impl reqwest::dns::Resolve for Resolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.0;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = found
                .iter()
                .copied()
                .filter(|a| policy.allows(a.ip()))
                .collect();
            if allowed.is_empty() {
                let e: Box<dyn std::error::Error + Send + Sync> = format!(
                    "{host} resolves only to addresses that are not allowed (private, \
                     link-local or loopback)"
                )
                .into();
                return Err(e);
            }
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The HTTP client of OAuth requests: no redirects (a redirect is an error, so credentials
/// never follow one to another origin), no proxy, the guarded resolver, bounded time.
pub(crate) fn http_client(policy: HostPolicy) -> Result<reqwest::Client, AuthError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        // Never through a proxy (`HTTPS_PROXY`...): the proxy would resolve the target, so
        // the guarded resolver below would never see it.
        .no_proxy()
        .dns_resolver(Arc::new(Resolver(policy)))
        .timeout(std::time::Duration::from_secs(30))
        .connect_timeout(std::time::Duration::from_secs(10))
        .user_agent(concat!("mcp-rs/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(AuthError::Http)
}

/// Checks an authorization URL before it is opened in a browser: http(s) only, http only to
/// loopback (no `javascript:`, `data:`, `file:`...).
///
/// # Errors
/// [`AuthError::Refused`].
pub fn check_authorization_url(url: &str) -> Result<Url, AuthError> {
    let parsed = Url::parse(url)
        .map_err(|e| AuthError::Refused(format!("authorization URL {url:?}: {e}")))?;
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" if is_loopback_host(&parsed) => Ok(parsed),
        s => Err(AuthError::Refused(format!(
            "authorization URL with scheme {s:?} is not opened (https only, or http to loopback)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote() -> HostPolicy {
        HostPolicy::for_server(&Url::parse("https://mcp.example.com/mcp").unwrap(), false)
    }

    #[test]
    fn refuses_private_metadata_and_tricks() {
        let p = remote();
        for bad in [
            "http://169.254.169.254/latest/meta-data/",
            "https://169.254.169.254/latest/meta-data/",
            "https://0x7f000001/",
            "https://2130706433/",
            "https://0177.0.0.1/",
            "https://[::ffff:127.0.0.1]/",
            "https://[::ffff:10.0.0.1]/",
            "https://10.0.0.1/",
            "https://172.16.3.4/",
            "https://192.168.1.1/",
            "https://[fc00::1]/",
            "https://[fe80::1]/",
            "https://[2002:7f00:1::]/",
            "https://[2002:a00:1::1]/",
            "https://[2002:c0a8:101::]/",
            "https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",
            "https://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/",
            "https://[2001:0:a00:1:8000:63bf:f7f7:f7f7]/",
            "https://[64:ff9b:1::a00:1]/",
            "https://localhost/x",
            "https://a.localhost/x",
            "https://metadata.google.internal/",
            "http://example.com/x",
            "file:///etc/passwd",
            "https://user:pw@example.com/",
        ] {
            let u = Url::parse(bad).unwrap();
            assert!(p.check(&u, "metadata").is_err(), "{bad} must be refused");
        }
        assert!(
            p.check(&Url::parse("https://as.example.com/x").unwrap(), "m")
                .is_ok()
        );
        for good in [
            "https://8.8.8.8/x",
            "https://[2002:808:808::]/", // 6to4 of 8.8.8.8
            "https://[2001:0:4136:e378:8000:63bf:f7f7:f7f7]/", // Teredo, both public
            "https://[2606:4700::1111]/",
        ] {
            assert!(p.check(&Url::parse(good).unwrap(), "m").is_ok(), "{good}");
        }
    }

    #[test]
    fn loopback_server_may_use_loopback_but_not_private() {
        let p = HostPolicy::for_server(&Url::parse("http://localhost:3000/mcp").unwrap(), false);
        assert!(
            p.check(&Url::parse("http://127.0.0.1:9/x").unwrap(), "m")
                .is_ok()
        );
        assert!(
            p.check(&Url::parse("http://localhost:9/x").unwrap(), "m")
                .is_ok()
        );
        assert!(
            p.check(&Url::parse("https://10.0.0.1/x").unwrap(), "m")
                .is_err()
        );
        let open = HostPolicy::for_server(&Url::parse("https://a.example/").unwrap(), true);
        assert!(
            open.check(&Url::parse("https://10.0.0.1/x").unwrap(), "m")
                .is_ok()
        );
    }

    #[test]
    fn authorization_urls_are_web_urls() {
        for bad in [
            "javascript:alert(1)",
            "data:text/html,hi",
            "file:///etc/passwd",
            "vbscript:msgbox",
            "http://example.com/authorize",
            "not a url",
        ] {
            assert!(check_authorization_url(bad).is_err(), "{bad}");
        }
        assert!(check_authorization_url("https://as.example/authorize?x=1").is_ok());
        assert!(check_authorization_url("http://127.0.0.1:8080/authorize").is_ok());
    }
}
