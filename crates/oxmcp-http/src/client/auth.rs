//! Where an authorization layer plugs into the client transport: it supplies the
//! `Authorization` header of every request, and answers the server's challenges (a 401, or a
//! 403 asking for more scope) with new credentials, after which the request is sent again.

use futures::future::BoxFuture;

/// The server refused a request for want of authorization.
#[derive(Debug, Clone)]
pub struct Challenge {
    /// 401 or 403.
    pub status: u16,
    /// The `WWW-Authenticate` header values, as sent.
    pub www_authenticate: Vec<String>,
    /// The `DPoP-Nonce` header (RFC 9449 §9), if sent.
    pub dpop_nonce: Option<String>,
}

impl Challenge {
    pub(super) fn of(resp: &reqwest::Response) -> Self {
        Self {
            status: resp.status().as_u16(),
            www_authenticate: resp
                .headers()
                .get_all(reqwest::header::WWW_AUTHENTICATE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .map(str::to_owned)
                .collect(),
            dpop_nonce: resp
                .headers()
                .get("dpop-nonce")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        }
    }
}

/// Supplies credentials to the client transport (an OAuth client, a token store...).
pub trait Authorizer: std::fmt::Debug + Send + Sync + 'static {
    /// The `Authorization` header value for the next request (`Bearer …`), if there is one.
    fn authorization(&self) -> Option<String>;

    /// A `DPoP` proof header for a `method` request to `url`, for sender-constrained tokens
    /// (RFC 9449); `None` (the default) for bearer tokens.
    fn proof(&self, _method: &str, _url: &str) -> Option<String> {
        None
    }

    /// The server refused a request with `challenge`. Returns `Ok(true)` once credentials
    /// that answer it are in place (the request is then sent again), `Ok(false)` when this is
    /// not a challenge it answers (the refusal stands), and an error when authorizing failed.
    fn challenged<'a>(&'a self, challenge: &'a Challenge) -> BoxFuture<'a, Result<bool, String>>;
}

/// The most times one request is sent again after a challenge (the authorizer bounds its own
/// attempts too).
pub(super) const MAX_CHALLENGES: u32 = 4;
