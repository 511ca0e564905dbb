//! `--auth-resource` apart from `--auth-audience`, over real processes and sockets with a test
//! authorization server (JWKS, RS256) on 127.0.0.1: a server whose tokens name an app's client
//! id in `aud` (Microsoft Entra v2) advertises its URL as the resource of its Protected
//! Resource Metadata, accepts those tokens and refuses tokens for any other audience; several
//! `--auth-audience`s each work; a client id alone as the resource is a clear error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../crates/oxmcp-auth/tests/common/mod.rs"]
mod oauth;

use serde_json::{Value, json};

/// The app's client id, as Microsoft Entra v2 tokens carry it in `aud`.
const CLIENT_ID: &str = "3f0b7c2e-8d41-4a6b-9f35-21c4e0d9a8b7";

/// `oxmcp serve` on a free port with `args`: the child and its URL.
async fn serve(port: u16, args: &[&str]) -> (tokio::process::Child, String) {
    let listen = format!("127.0.0.1:{port}");
    let mut all = vec!["--listen", &listen];
    all.extend_from_slice(args);
    let (child, url) = oxmcp_tests::serve_http(&all).await;
    assert_eq!(url, format!("http://{listen}/mcp"));
    (child, url)
}

/// The status of an `initialize` POSTed to `url` with a token for `aud`.
async fn init_status(issuer: &str, url: &str, aud: Value) -> u16 {
    let token = oauth::token_for(issuer, "", "alice", "mcp", json!({ "aud": aud }));
    oauth::post(url, Some(&token), None, oauth::INIT)
        .await
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entra_token_naming_the_client_id_is_accepted_and_the_metadata_names_the_url() {
    let (issuer, _st) = oauth::start_as().await;
    let port = oxmcp_tests::scale::free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let (_server, url) = serve(
        port,
        &[
            "--auth-issuer",
            &issuer,
            "--auth-audience",
            CLIENT_ID,
            "--auth-resource",
            &resource,
        ],
    )
    .await;
    // The metadata advertises the URL (clients ask tokens for it), not the client id.
    let metadata_url = format!("http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp");
    let metadata: Value = reqwest::get(&metadata_url)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["resource"], resource, "{metadata}");
    assert_eq!(
        metadata["authorization_servers"],
        json!([issuer]),
        "{metadata}"
    );
    // A refusal points at that metadata.
    let refused = oauth::post(&url, None, None, oauth::INIT).await;
    assert_eq!(refused.status(), 401);
    let challenge = refused.headers()["www-authenticate"].to_str().unwrap();
    assert!(challenge.contains(&metadata_url), "{challenge}");

    assert_eq!(init_status(&issuer, &url, json!(CLIENT_ID)).await, 200);
    assert_eq!(
        init_status(&issuer, &url, json!(["api://other", CLIENT_ID])).await,
        200,
        "one of the token's audiences is enough"
    );
    // The resource itself is not an accepted audience once audiences are given.
    assert_eq!(init_status(&issuer, &url, json!(resource)).await, 401);
    assert_eq!(
        init_status(&issuer, &url, json!("9a9a9a9a-0000-4000-8000-000000000000")).await,
        401
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_of_several_audiences_is_accepted_and_a_resource_alone_is_the_audience() {
    let (issuer, _st) = oauth::start_as().await;
    let port = oxmcp_tests::scale::free_port();
    let app_uri = format!("api://{CLIENT_ID}");
    let (_two, url) = serve(
        port,
        &[
            "--auth-issuer",
            &issuer,
            "--auth-audience",
            CLIENT_ID,
            "--auth-audience",
            &app_uri,
            "--auth-resource",
            "https://mcp.example.com/mcp",
        ],
    )
    .await;
    assert_eq!(init_status(&issuer, &url, json!(CLIENT_ID)).await, 200);
    assert_eq!(init_status(&issuer, &url, json!(app_uri)).await, 200);
    assert_eq!(init_status(&issuer, &url, json!("api://other")).await, 401);

    // Without --auth-audience, tokens must name the resource.
    let port = oxmcp_tests::scale::free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let (_one, url) = serve(
        port,
        &["--auth-issuer", &issuer, "--auth-resource", &resource],
    )
    .await;
    assert_eq!(init_status(&issuer, &url, json!(resource)).await, 200);
    assert_eq!(init_status(&issuer, &url, json!(CLIENT_ID)).await, 401);
}

#[tokio::test]
async fn a_client_id_cannot_be_the_advertised_resource() {
    let (ok, _, err) = oxmcp_tests::mcp(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--auth-issuer",
        "https://login.example.com/tenant/v2.0",
        "--auth-audience",
        CLIENT_ID,
    ])
    .await;
    assert!(!ok);
    assert!(err.contains("--auth-resource"), "{err}");
}
