//! The OAuth client against a small authorization server written for the tests, reaching a
//! protected MCP server, all on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::IntoResponse;
use common::*;
use oxmcp_auth::client::{Flow, Headless, OAuthClient, OAuthConfig, TokenStore};
use oxmcp_auth::server::{JwtConfig, JwtVerifier};

fn code_flow(url: &str) -> OAuthConfig {
    let agent = Headless::new("http://127.0.0.1:9/callback").unwrap();
    OAuthConfig::new(url, Flow::AuthorizationCode(Arc::new(agent)))
}

#[tokio::test]
async fn authorization_code_then_step_up() {
    let (issuer, st) = start_as().await;
    let url = start_mcp(&issuer).await;
    let oauth = Arc::new(OAuthClient::new(code_flow(&url)).unwrap());
    let (client, handle) = connect(&url, oauth.clone()).await.unwrap();
    assert_eq!(call_text(&client, "whoami").await.unwrap(), "user-1 mcp");
    // The resource went into both requests, the verifier matched the challenge, the client
    // registered itself once.
    let auth = seen(&st, "/authorize");
    assert_eq!(auth.len(), 1);
    assert_eq!(auth[0]["resource"], url);
    assert_eq!(auth[0]["scope"], "mcp offline_access");
    assert_eq!(seen(&st, "/token")[0]["resource"], url);
    assert_eq!(seen(&st, "/register").len(), 1);
    // `admin` needs more scope: 403, then one more authorization with both scopes.
    assert_eq!(call_text(&client, "admin").await.unwrap(), "admin done");
    let auth = seen(&st, "/authorize");
    assert_eq!(auth.len(), 2);
    assert_eq!(auth[1]["scope"], "mcp admin offline_access");
    assert_eq!(
        seen(&st, "/register").len(),
        1,
        "the registration is reused"
    );
    handle.close().await;
}

#[tokio::test]
async fn an_expired_token_is_refreshed() {
    let (issuer, st) = start_as().await;
    st.lock().ttl = 1;
    // No clock-skew leeway here, so the one-second token really expires.
    let url = start_mcp_made(&issuer, |url| {
        let mut cfg = JwtConfig::new(&issuer, url);
        cfg.leeway = Duration::ZERO;
        Arc::new(JwtVerifier::new(cfg).unwrap())
    })
    .await;
    let oauth = Arc::new(OAuthClient::new(code_flow(&url)).unwrap());
    let (client, handle) = connect(&url, oauth.clone()).await.unwrap();
    assert_eq!(call_text(&client, "whoami").await.unwrap(), "user-1 mcp");
    let first = oauth.grant().unwrap();
    assert!(
        first.refresh_token.is_some(),
        "offline_access brought a refresh token"
    );
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(call_text(&client, "whoami").await.unwrap(), "user-1 mcp");
    let refreshes: Vec<_> = seen(&st, "/token")
        .into_iter()
        .filter(|f| f["grant_type"] == "refresh_token")
        .collect();
    assert_eq!(refreshes.len(), 1);
    assert_eq!(refreshes[0]["resource"], url);
    assert_eq!(seen(&st, "/authorize").len(), 1, "no new authorization");
    assert_ne!(oauth.grant().unwrap().access_token, first.access_token);
    // A refused refresh falls back to authorizing again.
    st.lock().refuse_refresh = true;
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(call_text(&client, "whoami").await.unwrap(), "user-1 mcp");
    assert_eq!(seen(&st, "/authorize").len(), 2);
    handle.close().await;
}

#[tokio::test]
async fn stored_tokens_are_reused_and_kept_private() {
    let (issuer, st) = start_as().await;
    let url = start_mcp(&issuer).await;
    let dir = tempfile::tempdir().unwrap();
    let store = TokenStore::new(dir.path().join("tokens.json"));
    let config = || {
        let mut c = code_flow(&url);
        c.store = Some(store.clone());
        c
    };
    let oauth = Arc::new(OAuthClient::new(config()).unwrap());
    let (client, handle) = connect(&url, oauth).await.unwrap();
    assert_eq!(call_text(&client, "whoami").await.unwrap(), "user-1 mcp");
    handle.close().await;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(store.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // A second client (another run) uses the stored token: no new authorization.
    let oauth = Arc::new(OAuthClient::new(config()).unwrap());
    let (client, handle) = connect(&url, oauth).await.unwrap();
    assert_eq!(call_text(&client, "whoami").await.unwrap(), "user-1 mcp");
    assert_eq!(seen(&st, "/authorize").len(), 1);
    handle.close().await;
    // The token is never sent to another server (C7): a second MCP server gets its own.
    let other = start_mcp(&issuer).await;
    let mut c = code_flow(&other);
    c.store = Some(store.clone());
    assert!(
        store
            .grant_for_server(&url::Url::parse(&other).unwrap())
            .unwrap()
            .is_none()
    );
    let oauth = Arc::new(OAuthClient::new(c).unwrap());
    let (client, handle) = connect(&other, oauth).await.unwrap();
    assert_eq!(call_text(&client, "whoami").await.unwrap(), "user-1 mcp");
    assert_eq!(seen(&st, "/authorize").len(), 2);
    handle.close().await;
}

#[tokio::test]
async fn client_credentials_with_a_secret() {
    let (issuer, _st) = start_as().await;
    let url = start_mcp(&issuer).await;
    let mut c = OAuthConfig::new(&url, Flow::ClientCredentials(None));
    c.client_id = Some("machine".into());
    c.client_secret = Some("machine-secret".into());
    let oauth = Arc::new(OAuthClient::new(c).unwrap());
    let (client, handle) = connect(&url, oauth).await.unwrap();
    assert_eq!(call_text(&client, "whoami").await.unwrap(), "machine mcp");
    handle.close().await;
}

/// What the fake server's resource metadata says.
#[derive(Clone)]
enum Prm {
    None,
    /// For another resource.
    Resource(&'static str),
    /// For this server, with this authorization server.
    Issuer(&'static str),
}

/// A fake MCP server that challenges with `resource_metadata` and serves `prm` at the
/// well-known URI.
async fn challenging_server(resource_metadata: Option<&str>, prm: Prm) -> String {
    let rm = resource_metadata.map(str::to_owned);
    let router = axum::Router::new()
        .route(
            "/mcp",
            axum::routing::post(move || {
                let rm = rm.clone();
                async move {
                    let h = match rm {
                        Some(u) => format!("Bearer resource_metadata=\"{u}\""),
                        None => "Bearer".to_owned(),
                    };
                    (StatusCode::UNAUTHORIZED, [("www-authenticate", h)]).into_response()
                }
            }),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            axum::routing::get(move |headers: axum::http::HeaderMap| {
                let prm = prm.clone();
                async move {
                    let host = headers["host"].to_str().unwrap().to_owned();
                    let doc = match prm {
                        Prm::None => return StatusCode::NOT_FOUND.into_response(),
                        Prm::Resource(r) => serde_json::json!({"resource": r, "authorization_servers": ["https://as.example"]}),
                        Prm::Issuer(i) => serde_json::json!({"resource": format!("http://{host}/mcp"), "authorization_servers": [i]}),
                    };
                    axum::Json(doc).into_response()
                }
            }),
        );
    format!("{}/mcp", listen(router).await)
}

async fn refusal(url: &str) -> String {
    let oauth = Arc::new(OAuthClient::new(code_flow(url)).unwrap());
    chain(&connect(url, oauth).await.expect_err("refused"))
}

#[tokio::test]
async fn discovery_refuses_what_it_must_not_fetch_or_trust() {
    // Metadata pointed at cloud metadata, private addresses or IP tricks: refused before any
    // request leaves.
    for bad in [
        "http://169.254.169.254/latest/meta-data/",
        "https://169.254.169.254/latest/meta-data/",
        "https://[::ffff:10.0.0.1]/x",
        "https://10.0.0.1/.well-known/oauth-protected-resource",
        "https://metadata.google.internal/x",
        "file:///etc/passwd",
    ] {
        let url = challenging_server(Some(bad), Prm::None).await;
        let err = refusal(&url).await;
        assert!(err.contains("refused"), "{bad}: {err}");
    }
    // Resource metadata for another resource (RFC 9728 §3.3).
    let url = challenging_server(None, Prm::Resource("https://evil.example.com/mcp")).await;
    let err = refusal(&url).await;
    assert!(err.contains("not for"), "{err}");
    // Authorization servers over plain http on a public host, or on a private address.
    for issuer in [
        "http://as.example.com",
        "https://192.168.1.1",
        "https://[fe80::1]",
    ] {
        let url = challenging_server(None, Prm::Issuer(issuer)).await;
        let err = refusal(&url).await;
        assert!(err.contains("refused"), "{issuer}: {err}");
    }
}

#[tokio::test]
async fn step_up_gives_up_after_three_authorizations() {
    let (issuer, st) = start_as().await;
    // A server that wants a scope the authorization server never grants.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let make = |url: &str| -> Arc<dyn oxmcp_auth::server::TokenVerifier> {
        Arc::new(JwtVerifier::new(JwtConfig::new(&issuer, url)).unwrap())
    };
    let url = start_mcp_full(&issuer, listener, url, make, vec!["unobtainable".into()]).await;
    let oauth = Arc::new(OAuthClient::new(code_flow(&url)).unwrap());
    let err = chain(&connect(&url, oauth).await.expect_err("gave up"));
    assert!(err.contains("gave up"), "{err}");
    assert_eq!(seen(&st, "/authorize").len(), 3);
}
