//! The OAuth client's address guard over real sockets: a proxy named by the environment is
//! never used (it would reach the target without the guard resolving it), and IPv6 forms
//! that carry a private or loopback IPv4 address (6to4, Teredo) are refused like that address.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Json;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use oxmcp_auth::AuthError;
use oxmcp_auth::client::{Flow, OAuthClient, OAuthConfig};
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

#[test]
fn proxies_from_the_environment_are_never_used() {
    // A "proxy" that counts who connects, and hangs up.
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
    let mut child = std::process::Command::new(std::env::current_exe().unwrap());
    child.args([
        "--ignored",
        "--exact",
        CHILD,
        "--nocapture",
        "--test-threads=1",
    ]);
    for var in ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"] {
        child.env(var, &proxy_url);
        child.env(var.to_ascii_lowercase(), &proxy_url);
    }
    child.env_remove("NO_PROXY").env_remove("no_proxy");
    let out = child.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("child outcome: Err("),
        "the child ran: {stdout}"
    );
    assert_eq!(
        connected.load(Ordering::SeqCst),
        0,
        "requests went to the proxy, unresolved by the guard: {stdout}"
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
