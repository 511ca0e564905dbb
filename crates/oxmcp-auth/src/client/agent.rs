//! The user's side of the authorization code flow: something shows the authorization URL to
//! the user and brings back where the authorization server redirected to.

use futures::future::BoxFuture;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use super::guard::{HostPolicy, check_authorization_url, http_client};
use crate::AuthError;

/// Takes the user through authorization.
pub trait UserAgent: std::fmt::Debug + Send + Sync + 'static {
    /// The redirect URI the authorization server sends the user back to.
    fn redirect_uri(&self) -> String;

    /// Whether a user can be taken through authorization now; checked before discovery, so
    /// that nothing (a client registration, say) is done for an authorization that cannot
    /// happen. The error says what the user should do instead.
    ///
    /// # Errors
    /// Why not.
    fn available(&self) -> Result<(), AuthError> {
        Ok(())
    }

    /// Shows `url` (already checked: http(s) only) to the user, and returns the URL the
    /// authorization server redirected back to, with its query (`code`, `state`...).
    fn authorize<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<String, AuthError>>;

    /// What the OAuth client calls: [`authorize`](Self::authorize), told the client's
    /// [`HostPolicy`] (the hosts its own requests may reach). An agent that fetches `url`
    /// itself, as [`Headless`] does, holds that request to the policy; the default, for an
    /// agent that hands the URL to a person's browser, does not need it.
    fn authorize_within<'a>(
        &'a self,
        url: &'a str,
        policy: HostPolicy,
    ) -> BoxFuture<'a, Result<String, AuthError>> {
        let _ = policy;
        self.authorize(url)
    }
}

/// Follows the authorization URL itself, for authorization servers that approve without a
/// person (tests, the conformance suite, pre-consented machine clients): GETs it and reads
/// the redirect's `Location`. The GET is one of the OAuth client's own requests, made like
/// the others (see [`HostPolicy`]): never through a proxy, never to a host the client's
/// policy refuses (checked on the URL and again on each address a name resolves to), no
/// redirects followed. Called through the OAuth client it has the client's policy (loopback
/// allowed for a server on loopback, private hosts when allowed); called directly
/// ([`UserAgent::authorize`]), public hosts only.
#[derive(Debug, Clone)]
pub struct Headless {
    redirect_uri: String,
    /// The client for public hosts only.
    public: reqwest::Client,
}

/// The policy of a [`Headless`] agent called without one: public hosts only.
const PUBLIC_ONLY: HostPolicy = HostPolicy {
    loopback: false,
    private: false,
};

impl Headless {
    /// A headless agent that registers `redirect_uri` (nothing needs to listen there).
    ///
    /// # Errors
    /// The HTTP client cannot be built.
    pub fn new(redirect_uri: impl Into<String>) -> Result<Self, AuthError> {
        Ok(Self {
            redirect_uri: redirect_uri.into(),
            public: http_client(PUBLIC_ONLY)?,
        })
    }

    /// GETs `url` under `policy`: the redirect's `Location`.
    async fn follow(&self, url: &str, policy: HostPolicy) -> Result<String, AuthError> {
        let checked = check_authorization_url(url)?;
        policy.check(&checked, "authorization endpoint")?;
        let http = if policy == PUBLIC_ONLY {
            self.public.clone()
        } else {
            http_client(policy)?
        };
        let resp = http.get(checked).send().await.map_err(AuthError::Http)?;
        let location = resp
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| {
                AuthError::Server(format!(
                    "the authorization endpoint answered {} without a redirect",
                    resp.status()
                ))
            })?;
        Ok(location.to_owned())
    }
}

impl UserAgent for Headless {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<String, AuthError>> {
        Box::pin(self.follow(url, PUBLIC_ONLY))
    }

    fn authorize_within<'a>(
        &'a self,
        url: &'a str,
        policy: HostPolicy,
    ) -> BoxFuture<'a, Result<String, AuthError>> {
        Box::pin(self.follow(url, policy))
    }
}

/// The browser flow of a command-line tool: a listener on 127.0.0.1 receives the redirect
/// (RFC 8252 §7.3), and the URL is opened in the user's browser (never through a shell) or
/// printed for the user to open.
#[derive(Debug)]
pub struct Loopback {
    listener: parking_lot::Mutex<Option<TcpListener>>,
    port: u16,
    open_browser: bool,
}

impl Loopback {
    /// Listens on 127.0.0.1 (`port` 0: any free port).
    ///
    /// # Errors
    /// The port cannot be bound.
    pub async fn bind(port: u16, open_browser: bool) -> Result<Self, AuthError> {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| AuthError::Config(format!("cannot listen on 127.0.0.1:{port}: {e}")))?;
        let port = listener
            .local_addr()
            .map_err(|e| AuthError::Config(e.to_string()))?
            .port();
        Ok(Self {
            listener: parking_lot::Mutex::new(Some(listener)),
            port,
            open_browser,
        })
    }
}

/// The longest the user has to finish authorizing in the browser.
const BROWSER_WAIT: std::time::Duration = std::time::Duration::from_secs(300);

impl UserAgent for Loopback {
    fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port)
    }

    fn authorize<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<String, AuthError>> {
        Box::pin(async move {
            let checked = check_authorization_url(url)?;
            let listener = self.listener.lock().take().ok_or_else(|| {
                AuthError::Config("the loopback listener was used already".into())
            })?;
            let opened = self.open_browser && open_browser(checked.as_str());
            if opened {
                eprintln!(
                    "Opened the authorization page in your browser. If it did not open, visit:"
                );
            } else {
                eprintln!("To authorize, open this URL in a browser:");
            }
            eprintln!("  {checked}");
            let result = tokio::time::timeout(BROWSER_WAIT, receive(&listener, self.port)).await;
            // Ready for another round (step-up) on the same port.
            *self.listener.lock() = Some(listener);
            result.map_err(|_| {
                AuthError::Server("no answer from the browser within 5 minutes".into())
            })?
        })
    }
}

/// Opens `url` in the user's browser: the program `$BROWSER` names if it is set (its first
/// `:`-separated entry, a program name or path, given the URL as its one argument), else
/// the platform's opener (`open` on macOS, `explorer` on Windows, `xdg-open` elsewhere).
/// Never through a shell. True when the program started (not that a browser showed the
/// page).
pub fn open_browser(url: &str) -> bool {
    let default = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    let chosen = std::env::var("BROWSER").ok();
    let program = chosen
        .as_deref()
        .and_then(|b| b.split(':').next())
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .unwrap_or(default);
    std::process::Command::new(program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .is_ok()
}

/// Waits for the browser's GET of `/callback` and answers it with a short page.
async fn receive(listener: &TcpListener, port: u16) -> Result<String, AuthError> {
    loop {
        let (mut conn, _) = listener
            .accept()
            .await
            .map_err(|e| AuthError::Config(format!("loopback listener: {e}")))?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 2048];
        // The request line and headers, bounded.
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
            match conn.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let text = String::from_utf8_lossy(&buf);
        let target = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("GET "))
            .and_then(|l| l.split(' ').next())
            .filter(|t| t.starts_with("/callback"));
        let Some(target) = target else {
            let _ = conn
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
            continue;
        };
        let page = "<!doctype html><title>mcp</title><p>Authorization received. You can close this window.</p>";
        let answer = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
            page.len()
        );
        let _ = conn.write_all(answer.as_bytes()).await;
        return Ok(format!("http://127.0.0.1:{port}{target}"));
    }
}
