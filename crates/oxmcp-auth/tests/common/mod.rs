//! What the OAuth tests share: a small authorization server on 127.0.0.1 (metadata, JWKS,
//! authorize, register, token, introspection) that mints JWTs with the test keys, and an MCP
//! server protected by bearer tokens.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code, unreachable_pub)]

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use oxmcp_auth::server::{JwtConfig, JwtVerifier, ScopePolicy, TokenVerifier, protect};
use oxmcp_http::{HttpConfig, StreamableHttp};
use oxmcp_server::{Ctx, Server};
use parking_lot::Mutex;
use serde_json::{Value, json};

pub const RSA: &str = include_str!("../keys/rsa.pem");
pub const RSA2: &str = include_str!("../keys/rsa2.pem");
pub const RSA_PUB: &str = include_str!("../keys/rsa.pub.pem");
pub const JWKS: &str = include_str!("../keys/jwks.json");

pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Serves a router on 127.0.0.1; its base URL.
pub async fn listen(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { oxmcp_http::serve_router(listener, router).await });
    base
}

/// Signs `claims` with a PEM key.
pub fn sign(claims: &Value, pem: &str, alg: Algorithm, kid: Option<&str>) -> String {
    let mut h = Header::new(alg);
    h.kid = kid.map(str::to_owned);
    let key = match alg {
        Algorithm::ES256 => EncodingKey::from_ec_pem(pem.as_bytes()).unwrap(),
        _ => EncodingKey::from_rsa_pem(pem.as_bytes()).unwrap(),
    };
    jsonwebtoken::encode(&h, claims, &key).unwrap()
}

/// What the test authorization server was asked, and how it behaves.
#[derive(Default)]
pub struct AsState {
    pub base: String,
    /// The JWK set served (tests swap keys in and out).
    pub jwks: Value,
    pub jwks_fetches: usize,
    /// (path, form or query) of every request.
    pub requests: Vec<(String, HashMap<String, String>)>,
    /// code -> (client_id, redirect_uri, code_challenge, resource, scope)
    pub codes: HashMap<String, (String, String, String, String, String)>,
    /// refresh token -> (subject, resource, scope)
    pub refresh: HashMap<String, (String, String, String)>,
    /// Seconds access tokens live.
    pub ttl: u64,
    /// Opaque tokens known to introspection: token -> answer.
    pub opaque: HashMap<String, Value>,
    /// Opaque tokens whose introspection answers only after a while: token -> how long.
    pub slow: HashMap<String, std::time::Duration>,
    pub next: u64,
    /// Refuse refresh requests.
    pub refuse_refresh: bool,
}

pub type As = Arc<Mutex<AsState>>;

/// Starts the authorization server; its issuer URL and state.
pub async fn start_as() -> (String, As) {
    let state: As = Arc::new(Mutex::new(AsState {
        jwks: serde_json::from_str(JWKS).unwrap(),
        ttl: 3600,
        ..AsState::default()
    }));
    // rsa-2 is not published at first (the unknown-kid test publishes it later).
    state.lock().jwks["keys"]
        .as_array_mut()
        .unwrap()
        .retain(|k| k["kid"] != "rsa-2");
    let router = axum::Router::new()
        .route("/.well-known/oauth-authorization-server", get(metadata))
        .route("/jwks", get(jwks))
        .route("/authorize", get(authorize))
        .route("/register", axum::routing::post(register))
        .route("/token", axum::routing::post(token))
        .route("/introspect", axum::routing::post(introspect))
        .with_state(state.clone());
    let base = listen(router).await;
    state.lock().base = base.clone();
    (base, state)
}

async fn metadata(State(st): State<As>) -> Json<Value> {
    let b = st.lock().base.clone();
    Json(json!({
        "issuer": b,
        "authorization_endpoint": format!("{b}/authorize"),
        "token_endpoint": format!("{b}/token"),
        "registration_endpoint": format!("{b}/register"),
        "introspection_endpoint": format!("{b}/introspect"),
        "jwks_uri": format!("{b}/jwks"),
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
        "scopes_supported": ["mcp", "admin", "offline_access"],
        "authorization_response_iss_parameter_supported": true,
    }))
}

async fn jwks(State(st): State<As>) -> Json<Value> {
    let mut s = st.lock();
    s.jwks_fetches += 1;
    Json(s.jwks.clone())
}

async fn authorize(State(st): State<As>, Query(q): Query<HashMap<String, String>>) -> Response {
    let mut s = st.lock();
    s.requests.push(("/authorize".into(), q.clone()));
    if q.get("code_challenge_method").map(String::as_str) != Some("S256") {
        return (StatusCode::BAD_REQUEST, "PKCE S256 required").into_response();
    }
    s.next += 1;
    let code = format!("code-{}", s.next);
    let get = |k: &str| q.get(k).cloned().unwrap_or_default();
    s.codes.insert(
        code.clone(),
        (
            get("client_id"),
            get("redirect_uri"),
            get("code_challenge"),
            get("resource"),
            get("scope"),
        ),
    );
    let mut to = url::Url::parse(&get("redirect_uri")).unwrap();
    to.query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &get("state"))
        .append_pair("iss", &s.base);
    Redirect::to(to.as_str()).into_response()
}

async fn register(State(st): State<As>, Json(body): Json<Value>) -> Response {
    let mut s = st.lock();
    s.next += 1;
    let id = format!("client-{}", s.next);
    s.requests.push((
        "/register".into(),
        HashMap::from([("client_id".into(), id.clone())]),
    ));
    (
        StatusCode::CREATED,
        Json(json!({"client_id": id, "redirect_uris": body["redirect_uris"], "token_endpoint_auth_method": "none"})),
    )
        .into_response()
}

fn pkce(verifier: &str) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(verifier.as_bytes()))
}

/// Mints an access token (and a refresh token).
fn mint(s: &mut AsState, sub: &str, resource: &str, scope: &str, refresh: bool) -> Value {
    let claims = json!({
        "iss": s.base, "sub": sub, "aud": resource, "scope": scope,
        "exp": now() + s.ttl, "iat": now(), "client_id": "test",
    });
    let token = sign(&claims, RSA, Algorithm::RS256, Some("rsa-1"));
    let mut answer =
        json!({"access_token": token, "token_type": "Bearer", "expires_in": s.ttl, "scope": scope});
    if refresh {
        s.next += 1;
        let r = format!("refresh-{}", s.next);
        s.refresh.insert(
            r.clone(),
            (sub.to_owned(), resource.to_owned(), scope.to_owned()),
        );
        answer["refresh_token"] = json!(r);
    }
    answer
}

fn oauth_error(code: &str) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({"error": code}))).into_response()
}

async fn token(
    State(st): State<As>,
    headers: HeaderMap,
    Form(f): Form<HashMap<String, String>>,
) -> Response {
    let mut s = st.lock();
    let mut logged = f.clone();
    if let Some(a) = headers.get("authorization") {
        logged.insert("authorization".into(), a.to_str().unwrap().to_owned());
    }
    s.requests.push(("/token".into(), logged));
    let get = |k: &str| f.get(k).cloned().unwrap_or_default();
    match get("grant_type").as_str() {
        "authorization_code" => {
            let Some((client, redirect, challenge, resource, scope)) = s.codes.remove(&get("code"))
            else {
                return oauth_error("invalid_grant");
            };
            if pkce(&get("code_verifier")) != challenge
                || redirect != get("redirect_uri")
                || client != get("client_id")
                || resource != get("resource")
            {
                return oauth_error("invalid_grant");
            }
            let wants_refresh = scope.split(' ').any(|x| x == "offline_access");
            let scope: Vec<&str> = scope
                .split(' ')
                .filter(|x| ["mcp", "admin"].contains(x))
                .collect();
            Json(mint(
                &mut s,
                "user-1",
                &resource,
                &scope.join(" "),
                wants_refresh,
            ))
            .into_response()
        }
        "refresh_token" => {
            if s.refuse_refresh {
                return oauth_error("invalid_grant");
            }
            let Some((sub, resource, scope)) = s.refresh.remove(&get("refresh_token")) else {
                return oauth_error("invalid_grant");
            };
            Json(mint(&mut s, &sub, &resource, &scope, true)).into_response()
        }
        "client_credentials" => {
            let basic = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            use base64::Engine as _;
            let expect = format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode("machine:machine-secret")
            );
            if basic != expect {
                return (
                    StatusCode::UNAUTHORIZED,
                    Json(json!({"error": "invalid_client"})),
                )
                    .into_response();
            }
            let resource = get("resource");
            let scope = get("scope");
            Json(mint(&mut s, "machine", &resource, &scope, false)).into_response()
        }
        _ => oauth_error("unsupported_grant_type"),
    }
}

async fn introspect(State(st): State<As>, Form(f): Form<HashMap<String, String>>) -> Json<Value> {
    let token = f.get("token").cloned().unwrap_or_default();
    let delay = st.lock().slow.get(&token).copied();
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    let s = st.lock();
    Json(
        s.opaque
            .get(&token)
            .cloned()
            .unwrap_or(json!({"active": false})),
    )
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Nothing {}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Sleep {
    /// How long to take, in seconds.
    pub secs: u64,
}

/// A server whose `whoami` tool answers "SUBJECT SCOPES" from `Ctx::identity`, whose
/// `admin` tool needs the `admin` scope, and whose `sleep` tool takes `secs` seconds.
pub fn oxmcp_server() -> Server {
    Server::builder("protected", "1")
        .tool(
            "whoami",
            "who is calling",
            |c: Ctx, _a: Nothing| async move {
                let id = c.identity().ok_or("no identity")?;
                Ok::<_, String>(format!("{} {}", id.subject, id.scopes.join(",")))
            },
        )
        .tool(
            "admin",
            "needs the admin scope",
            |_c: Ctx, _a: Nothing| async move { Ok::<_, String>("admin done".to_owned()) },
        )
        .tool("sleep", "takes a while", |_c: Ctx, a: Sleep| async move {
            tokio::time::sleep(std::time::Duration::from_secs(a.secs)).await;
            Ok::<_, String>(format!("slept {} s", a.secs))
        })
        .build()
        .unwrap()
}

/// A protected MCP endpoint: its URL (`http://ADDR/mcp`) and the verifier.
pub async fn start_mcp_with(issuer: &str, verifier: Option<Arc<dyn TokenVerifier>>) -> String {
    start_mcp_made(issuer, |url| {
        verifier.unwrap_or_else(|| {
            let mut cfg = JwtConfig::new(issuer, url);
            cfg.min_refetch = std::time::Duration::ZERO;
            Arc::new(JwtVerifier::new(cfg).unwrap())
        })
    })
    .await
}

/// A protected MCP endpoint whose verifier is made for its URL.
pub async fn start_mcp_made(
    issuer: &str,
    make: impl FnOnce(&str) -> Arc<dyn TokenVerifier>,
) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    start_mcp_full(issuer, listener, url, make, vec!["mcp".into()]).await
}

/// A protected MCP endpoint on `listener` whose requests all need `all`.
pub async fn start_mcp_full(
    issuer: &str,
    listener: tokio::net::TcpListener,
    url: String,
    make: impl FnOnce(&str) -> Arc<dyn TokenVerifier>,
    all: Vec<String>,
) -> String {
    let verifier = make(&url);
    let mut scopes = ScopePolicy::default().all(all);
    scopes.tools.insert("admin".into(), vec!["admin".into()]);
    let auth = protect(
        &url,
        vec![issuer.to_owned()],
        verifier,
        scopes,
        Some(vec!["mcp".into(), "admin".into()]),
    )
    .unwrap();
    let http = StreamableHttp::new(
        oxmcp_server(),
        HttpConfig::default().auth(Some(Arc::new(auth))),
    );
    let router = http.router();
    tokio::spawn(async move { oxmcp_http::serve_router(listener, router).await });
    url
}

pub async fn start_mcp(issuer: &str) -> String {
    start_mcp_with(issuer, None).await
}

/// A token for the MCP server at `aud`, from the test issuer, with `claims` changed.
pub fn token_for(issuer: &str, aud: &str, sub: &str, scope: &str, changes: Value) -> String {
    let mut claims = json!({"iss": issuer, "aud": aud, "sub": sub, "scope": scope, "exp": now() + 600, "iat": now()});
    for (k, v) in changes.as_object().unwrap() {
        if v.is_null() {
            claims.as_object_mut().unwrap().remove(k);
        } else {
            claims[k] = v.clone();
        }
    }
    sign(&claims, RSA, Algorithm::RS256, Some("rsa-1"))
}

pub const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

/// A raw POST with an optional bearer token and session.
pub async fn post(
    url: &str,
    token: Option<&str>,
    session: Option<&str>,
    body: &str,
) -> reqwest::Response {
    let mut r = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .body(body.to_owned());
    if let Some(t) = token {
        r = r.bearer_auth(t);
    }
    if let Some(s) = session {
        r = r.header("mcp-session-id", s);
    }
    r.send().await.unwrap()
}

/// Connects an MCP client over HTTP with `authorizer`.
pub async fn connect(
    url: &str,
    authorizer: Arc<dyn oxmcp_http::client::Authorizer>,
) -> Result<(oxmcp_client::Client, oxmcp_http::HttpClientHandle), oxmcp_client::ConnectError> {
    let t = oxmcp_http::client::connect(
        url,
        oxmcp_http::HttpClientConfig::default()
            .authorizer(Some(authorizer))
            .standalone_stream(false),
    )
    .unwrap();
    let client = oxmcp_client::Client::connect(
        t.incoming,
        t.outgoing,
        oxmcp_client::ClientHandlers::new(),
        oxmcp_client::ClientConfig::default(),
    )
    .await?;
    Ok((client, t.handle))
}

/// The text a tool answered.
pub async fn call_text(client: &oxmcp_client::Client, tool: &str) -> Result<String, String> {
    let r = client
        .call_tool(tool, serde_json::Map::new())
        .await
        .map_err(|e| e.to_string())?;
    Ok(r.content
        .first()
        .and_then(|c| c.as_text())
        .unwrap_or_default()
        .to_owned())
}

/// The requests the authorization server saw at `path`.
pub fn seen(st: &As, path: &str) -> Vec<HashMap<String, String>> {
    st.lock()
        .requests
        .iter()
        .filter(|(p, _)| p == path)
        .map(|(_, f)| f.clone())
        .collect()
}

/// An error and its causes, on one line.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}
