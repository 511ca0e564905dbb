//! Who may use the inspector: a page of its own address, in the browser that was given the
//! token.
//!
//! - The app listens on 127.0.0.1 only.
//! - `Host` must be the app's own address (`127.0.0.1:PORT` or `localhost:PORT`), so a name
//!   rebound to 127.0.0.1 by another site's DNS (DNS rebinding) gets 403.
//! - `Origin`, where a browser sends it, must be the app's own origin; the WebSocket must
//!   carry it. A page of any other site gets 403, and so does any request a browser marks
//!   (`Sec-Fetch-Site`) as coming from another origin, another port of 127.0.0.1 included.
//! - Every request needs the session cookie, which only `GET /?token=TOKEN` with the
//!   one-time token printed at start sets (HttpOnly, SameSite=Strict). The token works once.
//! - The WebSocket also needs the page's key, which the token's answer gives the page in the
//!   address's fragment (never sent to a server): a browser sends the cookie to every port
//!   of 127.0.0.1 it visits, so another local server it visits could learn the cookie, never
//!   the key.
//!
//! The token and the cookie are compared in constant time and never logged.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use parking_lot::Mutex;

/// The secrets of one inspector.
pub(crate) struct Guard {
    port: u16,
    /// The token of the printed address, until it is used.
    token: Mutex<Option<String>>,
    /// The cookie's value.
    cookie: String,
    /// The page's key, which the WebSocket needs besides the cookie: it reaches the page once,
    /// in the fragment of the address the token's answer goes on to, and the browser keeps it
    /// in the tab (cookies, unlike it, go to every port of 127.0.0.1 the browser visits).
    page_key: String,
}

/// What a request asks for, as [`Guard::check_site`] checks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Request {
    /// The page, its scripts and styles.
    Page,
    /// The WebSocket.
    Socket,
    /// The printed address, with its token.
    TokenLink,
}

/// Why a request was refused (every refusal is a 403 with this text).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Refused(pub(crate) &'static str);

impl Guard {
    pub(crate) fn new(port: u16, token: String, cookie: String, page_key: String) -> Self {
        Self {
            port,
            token: Mutex::new(Some(token)),
            cookie,
            page_key,
        }
    }

    /// Where the token's answer sends the browser on to: the page, its key in the fragment.
    pub(crate) fn page_location(&self) -> String {
        format!("/#key={}", self.page_key)
    }

    /// Whether `key` is the page's key.
    pub(crate) fn is_page_key(&self, key: &str) -> bool {
        same(key.as_bytes(), self.page_key.as_bytes())
    }

    /// The cookie's name: one per port, since browsers share cookies across a host's ports.
    pub(crate) fn cookie_name(&self) -> String {
        format!("oxmcp_inspect_{}", self.port)
    }

    /// The `Set-Cookie` value that lets this browser in.
    pub(crate) fn set_cookie(&self) -> HeaderValue {
        let v = format!(
            "{}={}; HttpOnly; SameSite=Strict; Path=/",
            self.cookie_name(),
            self.cookie
        );
        HeaderValue::from_str(&v).unwrap_or_else(|_| HeaderValue::from_static(""))
    }

    /// Checks `Host`, `Origin` (required on the WebSocket) and `Sec-Fetch-Site` (not on the
    /// token's link, which the browser may be sent to from anywhere: the printed address
    /// opened through a local file, a terminal; the token itself is the check there).
    pub(crate) fn check_site(&self, headers: &HeaderMap, kind: Request) -> Result<(), Refused> {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .ok_or(Refused("no Host header"))?;
        if !self.is_own(host) {
            return Err(Refused("this address is not the inspector's"));
        }
        // A browser says where a request comes from: only the page itself (`same-origin`)
        // or the person (`none`: the address typed or opened) may use the app; another
        // port of 127.0.0.1 is `same-site`, and refused too.
        if kind != Request::TokenLink
            && let Some(site) = headers.get("sec-fetch-site").map(|h| h.to_str())
            && !matches!(site, Ok("same-origin" | "none"))
        {
            return Err(Refused("a request from another site"));
        }
        match headers.get(header::ORIGIN).map(|o| o.to_str()) {
            Some(Ok(origin)) => match origin.strip_prefix("http://") {
                Some(host) if self.is_own(host) => Ok(()),
                _ => Err(Refused("a request from another origin")),
            },
            Some(Err(_)) => Err(Refused("a request from another origin")),
            None if kind == Request::Socket => Err(Refused("a WebSocket without an Origin")),
            None => Ok(()),
        }
    }

    fn is_own(&self, host: &str) -> bool {
        let port = self.port.to_string();
        ["127.0.0.1", "localhost"]
            .iter()
            .any(|name| host.strip_prefix(name).and_then(|r| r.strip_prefix(':')) == Some(&port))
    }

    /// Whether the request carries this inspector's cookie.
    pub(crate) fn has_cookie(&self, headers: &HeaderMap) -> bool {
        let name = self.cookie_name();
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|h| h.to_str().ok())
            .flat_map(|h| h.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .any(|(k, v)| k == name && same(v.as_bytes(), self.cookie.as_bytes()))
    }

    /// Takes the one-time token: true the first time `token` is given, false after.
    pub(crate) fn redeem(&self, token: &str) -> bool {
        let mut held = self.token.lock();
        match held.as_deref() {
            Some(t) if same(t.as_bytes(), token.as_bytes()) => {
                *held = None;
                true
            }
            _ => false,
        }
    }
}

/// Compares two secrets in time that depends on their lengths only.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The 403 of a refusal.
pub(crate) fn forbidden(why: &str) -> (StatusCode, String) {
    (StatusCode::FORBIDDEN, format!("403 Forbidden: {why}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).expect("value"));
        }
        h
    }

    #[test]
    fn only_the_apps_own_host_and_origin_pass() {
        let g = Guard::new(4242, "t".into(), "c".into(), "k".into());
        assert!(
            g.check_site(&headers(&[("host", "127.0.0.1:4242")]), Request::Page)
                .is_ok()
        );
        assert!(
            g.check_site(&headers(&[("host", "localhost:4242")]), Request::Page)
                .is_ok()
        );
        for host in [
            "evil.example:4242",
            "127.0.0.1:4243",
            "127.0.0.1",
            "127.0.0.1:42420",
        ] {
            assert!(
                g.check_site(&headers(&[("host", host)]), Request::Page)
                    .is_err(),
                "{host}"
            );
        }
        let own = [
            ("host", "127.0.0.1:4242"),
            ("origin", "http://127.0.0.1:4242"),
        ];
        assert!(g.check_site(&headers(&own), Request::Socket).is_ok());
        let other = [
            ("host", "127.0.0.1:4242"),
            ("origin", "http://evil.example"),
        ];
        assert!(g.check_site(&headers(&other), Request::Page).is_err());
        let sibling = [("host", "127.0.0.1:4242"), ("sec-fetch-site", "same-site")];
        let from_a_file = [("host", "127.0.0.1:4242"), ("sec-fetch-site", "cross-site")];
        assert!(
            g.check_site(&headers(&from_a_file), Request::TokenLink)
                .is_ok()
        );
        assert!(g.check_site(&headers(&from_a_file), Request::Page).is_err());
        assert!(g.check_site(&headers(&sibling), Request::Page).is_err());
        let typed = [("host", "127.0.0.1:4242"), ("sec-fetch-site", "none")];
        assert!(g.check_site(&headers(&typed), Request::Page).is_ok());
        let null = [("host", "127.0.0.1:4242"), ("origin", "null")];
        assert!(g.check_site(&headers(&null), Request::Page).is_err());
        assert!(
            g.check_site(&headers(&[("host", "127.0.0.1:4242")]), Request::Socket)
                .is_err()
        );
    }

    #[test]
    fn the_token_works_once_and_the_cookie_always() {
        let g = Guard::new(1, "token".into(), "cookie".into(), "key".into());
        assert!(!g.redeem("tokem"));
        assert!(g.redeem("token"));
        assert!(!g.redeem("token"));
        assert!(g.has_cookie(&headers(&[("cookie", "a=b; oxmcp_inspect_1=cookie")])));
        assert!(!g.has_cookie(&headers(&[("cookie", "oxmcp_inspect_2=cookie")])));
        assert!(!g.has_cookie(&headers(&[("cookie", "oxmcp_inspect_1=cookiE")])));
        assert!(!g.has_cookie(&HeaderMap::new()));
        assert_eq!(g.page_location(), "/#key=key");
        assert!(g.is_page_key("key"));
        assert!(!g.is_page_key("kez"));
        assert!(!g.is_page_key(""));
    }
}
