//! Run with: cargo run -p oxmcp --example auth
//!
//! A server protected as an OAuth 2.1 resource server: a request without a token gets 401
//! with a `WWW-Authenticate` challenge pointing at the Protected Resource Metadata (RFC 9728),
//! a bad token is refused, and a valid one gets through, its tool seeing the caller's
//! identity. To stay self-contained the tokens are static ones this program makes up
//! (`StaticTokens`); a real deployment puts a `JwtVerifier` or `Introspection` in its place.

use std::hash::BuildHasher;
use std::sync::Arc;

use oxmcp::client::{ClientConfig, EraChoice};
use oxmcp::http::{HttpConfig, ScopePolicy, StreamableHttp};
use oxmcp::remote::{Remote, connect};
use oxmcp::server::{Ctx, Server};
use oxmcp::types::{Content, JsonObject};
use oxmcp_auth::server::{StaticTokens, protect};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("auth-example", "1.0.0")
        .tool(
            "whoami",
            "Says who the caller is",
            |ctx: Ctx, _: Nothing| async move {
                let who = ctx.identity().ok_or("no verified caller")?;
                Ok::<_, String>(format!("{} with scopes {:?}", who.subject, who.scopes))
            },
        )
        .build()?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    // A token made up for this run, standing for the subject "alice".
    let token = format!(
        "{:016x}",
        std::collections::hash_map::RandomState::new().hash_one(0)
    );
    let verifier = StaticTokens::new(vec![(token.clone(), "alice".into())], vec!["mcp".into()])?;
    let issuer = "https://auth.example.com".to_owned();
    let auth = protect(
        &url,
        vec![issuer],
        Arc::new(verifier),
        ScopePolicy::default(),
        None,
    )?;
    let config = HttpConfig::default().auth(Some(Arc::new(auth)));
    let http = StreamableHttp::new(server, config);
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));

    // No token: 401, and where to learn how to get one.
    let raw = reqwest::Client::new();
    let answer = raw
        .post(&url)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await?;
    let challenge = answer
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok());
    let challenge = challenge.unwrap_or_default().to_owned();
    println!(
        "no token: {}\n  WWW-Authenticate: {challenge}",
        answer.status()
    );
    if answer.status() != 401 || !challenge.starts_with("Bearer ") {
        return Err("expected a 401 with a Bearer challenge".into());
    }
    let metadata_url = challenge
        .split("resource_metadata=\"")
        .nth(1)
        .and_then(|s| s.split('"').next());
    let metadata = raw
        .get(metadata_url.ok_or("no resource_metadata")?)
        .send()
        .await?
        .text()
        .await?;
    println!("  resource metadata: {metadata}");

    // A wrong token: refused at connect.
    let bearer = |t: &str| vec![("Authorization".to_owned(), format!("Bearer {t}"))];
    let wrong = Remote::default().headers(bearer("not-the-token"));
    match connect(&url, wrong).await {
        Ok(_) => return Err("a wrong token was accepted".into()),
        Err(e) => {
            // The cause is the error's source.
            let cause = std::error::Error::source(&e).map(ToString::to_string);
            println!("wrong token: {e}: {}", cause.unwrap_or_default());
        }
    }

    // The right token, in each era: the tool sees who called.
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let client = ClientConfig::default().era(era);
        let remote = Remote::default().headers(bearer(&token)).client(client);
        let client = connect(&url, remote).await?;
        let result = client.call_tool("whoami", JsonObject::new()).await?;
        let text = result
            .content
            .first()
            .and_then(Content::as_text)
            .unwrap_or_default();
        println!("{era:?} with the token: {text}");
        if !text.starts_with("alice") {
            return Err(format!("{era:?}: unexpected result {result:?}").into());
        }
        client.close().await;
    }
    Ok(())
}
