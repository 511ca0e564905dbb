//! `oxmcp serve` protected by bearer tokens, `oxmcp login` / `oxmcp logout` driven headlessly, the
//! client commands with stored tokens, and the gateway's own upstream credentials, over real
//! processes and sockets.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../oxmcp-auth/tests/common/mod.rs"]
mod oauth;

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use oxmcp_http::{Identity, TokenError, TokenVerifier};
use parking_lot::Mutex;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const MCP: &str = env!("CARGO_BIN_EXE_oxmcp");

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs `mcp ARGS` with `MCP_CONFIG_DIR=dir`; (success, stdout, stderr).
async fn mcp(dir: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(MCP)
        .args(args)
        .env("MCP_CONFIG_DIR", dir)
        .env_remove("MCP_BEARER")
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `oxmcp serve ARGS` on a free port, logging at debug into a shared buffer; its URL.
async fn serve(args: &[&str], log: Arc<Mutex<String>>) -> (Child, String) {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut child = Command::new(MCP)
        .arg("serve")
        .args(["--listen", &listen])
        .args(args)
        .env("MCP_LOG", "debug")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    loop {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the server starts")
            .unwrap()
            .expect("the server is running");
        log.lock().push_str(&line);
        if line.contains("serving") {
            break;
        }
    }
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            log.lock().push_str(&line);
            log.lock().push('\n');
        }
    });
    (child, format!("http://{listen}/mcp"))
}

#[tokio::test]
async fn a_remote_bind_without_auth_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, _, err) = mcp(dir.path(), &["serve", "--listen", "0.0.0.0:0"]).await;
    assert!(!ok);
    assert!(err.contains("--allow-unauthenticated"), "{err}");
}

#[tokio::test]
async fn a_static_token_file_protects_serve_and_is_never_logged() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.txt");
    std::fs::write(&tokens, "# local tokens\ns3cret-token-value alice\n").unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let (_server, url) = serve(
        &["--auth-token-file", tokens.to_str().unwrap()],
        log.clone(),
    )
    .await;
    let (ok, _, err) = mcp(dir.path(), &["tools", &url]).await;
    assert!(!ok);
    assert!(err.contains(&format!("oxmcp login {url}")), "{err}");
    let (ok, out, err) = mcp(
        dir.path(),
        &["tools", &url, "--bearer", "wrong-token-value"],
    )
    .await;
    assert!(!ok, "{out}");
    assert!(err.contains("401"), "{err}");
    let (ok, out, err) = mcp(
        dir.path(),
        &["tools", &url, "--bearer", "s3cret-token-value"],
    )
    .await;
    assert!(ok, "{err}");
    assert!(out.contains("echo"), "{out}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let log = log.lock().clone();
    assert!(
        !log.contains("s3cret-token-value"),
        "the token is never logged"
    );
    assert!(!log.contains("wrong-token-value"), "nor a refused one");
}

/// Drives `oxmcp login URL --no-browser`: opens the printed URL like a browser would and
/// follows the redirect to the loopback listener.
async fn login(dir: &std::path::Path, url: &str) {
    let mut child = Command::new(MCP)
        .args(["login", url, "--no-browser"])
        .env("MCP_CONFIG_DIR", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let authorize = loop {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("oxmcp login prints the URL")
            .unwrap()
            .expect("oxmcp login is running");
        if let Some(u) = line
            .trim()
            .strip_prefix("http")
            .filter(|u| u.contains("/authorize?"))
        {
            break format!("http{u}");
        }
    };
    assert!(
        authorize.contains("code_challenge_method=S256"),
        "{authorize}"
    );
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = browser.get(&authorize).send().await.unwrap();
    let callback = r.headers()["location"].to_str().unwrap().to_owned();
    assert!(callback.starts_with("http://127.0.0.1:"), "{callback}");
    let page = browser.get(&callback).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .unwrap()
        .unwrap();
    let mut rest = String::new();
    while let Ok(Some(l)) = lines.next_line().await {
        rest.push_str(&l);
    }
    assert!(status.success(), "{rest}");
    assert!(rest.contains("logged in"), "{rest}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_then_client_commands_then_logout() {
    let (issuer, st) = oauth::start_as().await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let (_server, served) = {
        let mut child = Command::new(MCP)
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .args([
                "--auth-issuer",
                &issuer,
                "--auth-audience",
                &url,
                "--auth-scope",
                "mcp",
            ])
            .env("MCP_LOG", "off")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        while let Some(l) = lines.next_line().await.unwrap() {
            if l.contains("serving") {
                break;
            }
        }
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        (child, url.clone())
    };
    let (ok, _, err) = mcp(dir.path(), &["tools", &served]).await;
    assert!(!ok);
    assert!(err.contains("oxmcp login"), "{err}");
    login(dir.path(), &served).await;
    let store = dir.path().join("tokens.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&store).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let (ok, out, err) = mcp(
        dir.path(),
        &["call", &served, "echo", r#"{"message":"hi"}"#],
    )
    .await;
    assert!(ok, "{err}");
    assert!(out.contains("hi"), "{out}");
    let (ok, _, err) = mcp(dir.path(), &["tools", &served]).await;
    assert!(ok, "{err}");
    // The authorization carried the resource and the scope the server asked for.
    let auth = oauth::seen(&st, "/authorize");
    assert_eq!(auth.len(), 1);
    assert_eq!(auth[0]["resource"], served);
    assert!(auth[0]["scope"].split(' ').any(|s| s == "mcp"), "{auth:?}");
    let (ok, _, err) = mcp(dir.path(), &["logout", &served]).await;
    assert!(ok, "{err}");
    let (ok, _, err) = mcp(dir.path(), &["tools", &served]).await;
    assert!(!ok);
    assert!(err.contains("oxmcp login"), "{err}");
}

/// A verifier that accepts one token and records every token it is shown.
#[derive(Debug)]
struct Recording {
    accept: String,
    seen: Arc<Mutex<Vec<String>>>,
}

impl TokenVerifier for Recording {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Identity, TokenError>> {
        self.seen.lock().push(token.to_owned());
        Box::pin(async move {
            if token == self.accept {
                Ok(Identity {
                    subject: "gateway".into(),
                    scopes: vec!["mcp".into()],
                    ..Identity::default()
                })
            } else {
                Err(TokenError::Invalid("not the gateway's token".into()))
            }
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_never_passes_a_clients_token_upstream() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let verifier = Arc::new(Recording {
        accept: "upstream-token".into(),
        seen: seen.clone(),
    });
    let upstream = oauth::start_mcp_with("https://issuer.invalid", Some(verifier)).await;
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let clients = write("clients.txt", "client-token carol\n");
    let bearer = write("upstream-bearer.txt", "upstream-token\n");
    let config = write(
        "mcp.toml",
        &format!(
            "[auth]\ntoken_file = \"{clients}\"\n\n[[upstream]]\nname = \"up\"\nurl = \"{upstream}\"\n\n[upstream.auth]\nbearer_file = \"{bearer}\"\n"
        ),
    );
    let log = Arc::new(Mutex::new(String::new()));
    let (_gw, url) = serve(&["--config", &config], log).await;
    let (ok, out, err) = mcp(
        dir.path(),
        &["call", &url, "up__whoami", "--bearer", "client-token"],
    )
    .await;
    assert!(ok, "{err}");
    assert!(
        out.contains("gateway mcp"),
        "the upstream saw the gateway: {out}"
    );
    let tokens = seen.lock().clone();
    assert!(tokens.iter().any(|t| t == "upstream-token"));
    assert!(
        tokens.iter().all(|t| t != "client-token"),
        "a client's token reached the upstream: {tokens:?}"
    );
    // Without its own credentials, the gateway has nothing to offer the upstream: it does
    // not fall back to the client's token.
    let config2 = write(
        "mcp2.toml",
        &format!(
            "[auth]\ntoken_file = \"{clients}\"\n\n[[upstream]]\nname = \"up\"\nurl = \"{upstream}\"\n"
        ),
    );
    let log = Arc::new(Mutex::new(String::new()));
    let (_gw2, url2) = serve(&["--config", &config2], log).await;
    let (ok, _, _) = mcp(
        dir.path(),
        &["call", &url2, "up__whoami", "--bearer", "client-token"],
    )
    .await;
    assert!(!ok, "the upstream refused the gateway");
    let seen = seen.lock().clone();
    assert!(
        seen.iter().all(|t| t != "client-token"),
        "a client's token reached the upstream: {seen:?}"
    );
}
