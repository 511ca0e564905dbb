//! The OAuth client's address guard over real sockets: a proxy named by the environment is
//! never used (it would reach the target without the guard resolving it), IPv6 forms that
//! carry a private or loopback IPv4 address (6to4, Teredo) are refused like that address, and
//! the headless user agent, which fetches the authorization endpoint itself, is held to both.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Json;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use oxmcp_auth::AuthError;
use oxmcp_auth::client::{Flow, Headless, OAuthClient, OAuthConfig};
use serde_json::json;

const CHILD: &str = "child_authorizes_with_proxies_in_the_environment";

/// Run by [`proxies_from_the_environment_are_never_used`] in a child process whose
/// environment names a proxy: discovery for a server on a remote name.
#[tokio::test]
#[ignore = "the child process of proxies_from_the_environment_are_never_used"]
async fn child_authorizes_with_proxies_in_the_environment() {
    let mut config = OAuthConfig::new("https://mcp.invalid/mcp", Flow::ClientCredentials(None));
    config.client_id = Some("machine".into());
    config.client_secret = Some("machine-secret".into());
    let oauth = OAuthClient::new(config).unwrap();
    let outcome = oauth.authorize().await;
    println!("child outcome: {outcome:?}");
}

/// Runs the ignored test `child` in a child process whose environment names a proxy (a
/// listener that counts who connects, and hangs up): what it printed, and how many
/// connections the proxy saw.
fn run_with_proxies(child: &str) -> (String, usize) {
    let proxy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy_url = format!("http://{}", proxy.local_addr().unwrap());
    let connected = Arc::new(AtomicUsize::new(0));
    let seen = connected.clone();
    std::thread::spawn(move || {
        for conn in proxy.incoming() {
            seen.fetch_add(1, Ordering::SeqCst);
            drop(conn);
        }
    });
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    command.args([
        "--ignored",
        "--exact",
        child,
        "--nocapture",
        "--test-threads=1",
    ]);
    for var in ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"] {
        command.env(var, &proxy_url);
        command.env(var.to_ascii_lowercase(), &proxy_url);
    }
    command.env_remove("NO_PROXY").env_remove("no_proxy");
    let out = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}");
    (stdout, connected.load(Ordering::SeqCst))
}

#[test]
fn proxies_from_the_environment_are_never_used() {
    let (stdout, connected) = run_with_proxies(CHILD);
    assert!(
        stdout.contains("child outcome: Err("),
        "the child ran: {stdout}"
    );
    assert_eq!(
        connected, 0,
        "requests went to the proxy, unresolved by the guard: {stdout}"
    );
}

const HEADLESS_CHILD: &str = "child_authorizes_headless_at_private_endpoints";

/// Authorization endpoints on private addresses, as an authorization server's metadata might
/// name them.
const PRIVATE_ENDPOINTS: [&str; 2] = [
    "https://10.0.0.1/authorize",
    "https://[2002:a00:1::]/authorize", // 6to4 of 10.0.0.1
];

/// A loopback authorization server whose metadata names `authorization_endpoint` (and
/// registers any client): its issuer URL.
async fn server_with_authorization_endpoint(authorization_endpoint: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let meta = json!({
        "issuer": base,
        "authorization_endpoint": authorization_endpoint,
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
    });
    let router = axum::Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            get(move || async move { Json(meta) }),
        )
        .route(
            "/register",
            post(|Json(body): Json<serde_json::Value>| async move {
                let client = json!({"client_id": "c1", "redirect_uris": body["redirect_uris"],
                    "token_endpoint_auth_method": "none"});
                (StatusCode::CREATED, Json(client))
            }),
        );
    tokio::spawn(async move { axum::serve(listener, router).await });
    base
}

/// Run by [`the_headless_agent_reaches_no_private_endpoint`] in a child process whose
/// environment names a proxy: the authorization code flow with [`Headless`], whose
/// authorization server names a private authorization endpoint.
#[tokio::test]
#[ignore = "the child process of the_headless_agent_reaches_no_private_endpoint"]
async fn child_authorizes_headless_at_private_endpoints() {
    for endpoint in PRIVATE_ENDPOINTS {
        let issuer = server_with_authorization_endpoint(endpoint).await;
        let url = server_naming(&issuer).await;
        let agent = Headless::new("http://127.0.0.1:9/callback").unwrap();
        let flow = Flow::AuthorizationCode(Arc::new(agent));
        let oauth = OAuthClient::new(OAuthConfig::new(&url, flow)).unwrap();
        let outcome = tokio::time::timeout(Duration::from_secs(20), oauth.authorize()).await;
        println!("child outcome for {endpoint}: {outcome:?}");
    }
}

/// The headless agent GETs the authorization endpoint itself, so it is held to the OAuth
/// client's guard: a private address from the metadata is refused before any connection,
/// and a proxy from the environment is not used.
#[test]
fn the_headless_agent_reaches_no_private_endpoint() {
    let (stdout, connected) = run_with_proxies(HEADLESS_CHILD);
    for endpoint in PRIVATE_ENDPOINTS {
        assert!(
            stdout.contains(&format!("child outcome for {endpoint}: Ok(Err(Refused(")),
            "{endpoint} is refused: {stdout}"
        );
    }
    assert_eq!(
        connected, 0,
        "the headless agent went through the proxy: {stdout}"
    );
}

/// A loopback MCP server whose resource metadata names `authorization_server`.
async fn server_naming(authorization_server: &str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let url = format!("{base}/mcp");
    let prm = json!({"resource": url, "authorization_servers": [authorization_server]});
    let challenge =
        format!(r#"Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp""#);
    let router = axum::Router::new()
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(move || async move { Json(prm) }),
        )
        .route(
            "/mcp",
            post(move || async move {
                (StatusCode::UNAUTHORIZED, [("www-authenticate", challenge)]).into_response()
            }),
        );
    tokio::spawn(async move { axum::serve(listener, router).await });
    url
}

#[tokio::test]
async fn six_to_four_and_teredo_forms_of_private_addresses_are_refused() {
    for issuer in [
        "https://[2002:7f00:1::]/",                        // 6to4 of 127.0.0.1
        "https://[2002:a00:1::]/",                         // 6to4 of 10.0.0.1
        "https://[2002:a9fe:a9fe::]/",                     // 6to4 of 169.254.169.254
        "https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", // Teredo, client 127.0.0.1
        "https://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/", // Teredo, client 10.0.0.1
        "https://[2001:0:a00:1:8000:63bf:f7f7:f7f7]/",     // Teredo, server 10.0.0.1
        "https://[64:ff9b:1::a00:1]/",                     // local-use NAT64 (RFC 8215)
    ] {
        let url = server_naming(issuer).await;
        let oauth =
            OAuthClient::new(OAuthConfig::new(&url, Flow::ClientCredentials(None))).unwrap();
        let err = oauth.authorize().await.unwrap_err();
        assert!(
            matches!(&err, AuthError::Refused(m) if m.contains("private")),
            "{issuer}: {err}"
        );
    }
}

/// Called directly, without an OAuth client's policy, the headless agent reaches public hosts
/// only: a loopback listener is never connected to.
#[tokio::test]
async fn the_headless_agent_alone_reaches_public_hosts_only() {
    use oxmcp_auth::client::UserAgent;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/authorize", listener.local_addr().unwrap());
    let agent = Headless::new("http://127.0.0.1:9/callback").unwrap();
    for url in [url.as_str(), PRIVATE_ENDPOINTS[0], PRIVATE_ENDPOINTS[1]] {
        let err = agent.authorize(url).await.unwrap_err();
        assert!(matches!(&err, AuthError::Refused(_)), "{url}: {err}");
    }
    let accepted = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
    assert!(accepted.is_err(), "the agent connected to loopback");
}
