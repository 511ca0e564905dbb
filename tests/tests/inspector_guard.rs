//! `oxmcp inspect`'s guard, from outside: the refusals of every request that is not its own
//! page's (no token or cookie, a foreign `Host` or `Origin`, a WebSocket without the page's
//! key), checked with plain HTTP requests, and how it opens the browser (a private file that
//! forwards to the address), checked in chromium. `inspector.rs` walks the page itself.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use oxmcp_tests::inspector::{Browser, Page, inspect_env, inspect_opening, skipped};
use oxmcp_tests::serve_http;
use serde_json::json;

/// Where the screenshots of these tests go (unless `$OXMCP_SCREENSHOTS` says).
fn shots() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("inspector")
}

/// `http://127.0.0.1:PORT` of an address.
fn origin(address: &str) -> String {
    address.split("/?").next().expect("origin").to_owned()
}

fn token(address: &str) -> String {
    address.split("token=").nth(1).expect("token").to_owned()
}

// ---------------------------------------------------------------- refusals (no browser)

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// Exchanges the token for the cookie, as a browser does: the `Cookie` header to send.
/// The page's key comes with it, in the address the answer's page goes on to: (cookie, key).
async fn cookie_of(address: &str) -> (String, String) {
    let r = http().get(address).send().await.expect("GET /?token");
    assert_eq!(r.status(), 200);
    let set = r.headers()["set-cookie"]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert!(set.contains("HttpOnly"), "{set}");
    assert!(set.contains("SameSite=Strict"), "{set}");
    // A page of the app's own goes on to the app, the key in the fragment.
    let body = r.text().await.expect("body");
    let key = body
        .split("url=/#key=")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no key in {body}"))
        .to_owned();
    (set.split(';').next().expect("pair").to_owned(), key)
}

#[tokio::test]
async fn the_inspector_refuses_what_is_not_its_own_page() {
    let (_server, url) = serve_http(&["--listen", "127.0.0.1:0"]).await;
    let (mut inspector, address) = inspect_env(&[&url], &[("MCP_LOG", "trace")]).await;
    let base = origin(&address);
    let port = base.rsplit(':').next().expect("port").to_owned();
    let c = http();
    // Nothing without the token or its cookie.
    for path in ["/", "/app.js", "/app.css", "/ws", "/anything"] {
        let r = c.get(format!("{base}{path}")).send().await.expect("GET");
        assert_eq!(r.status(), 403, "{path} without the cookie");
    }
    let wrong = c
        .get(format!("{base}/?token=00{}", &token(&address)[2..]))
        .send()
        .await
        .expect("GET");
    assert_eq!(wrong.status(), 403, "a wrong token");
    // DNS rebinding: another name for 127.0.0.1 is refused, even with the right token.
    let rebound = c
        .get(&address)
        .header("host", format!("attacker.example:{port}"))
        .send()
        .await
        .expect("GET");
    assert_eq!(rebound.status(), 403, "a foreign Host");
    // Another site's page is refused, even with the right token.
    let foreign = c
        .get(&address)
        .header("origin", "http://attacker.example")
        .send()
        .await
        .expect("GET");
    assert_eq!(foreign.status(), 403, "a foreign Origin");
    // The token works once, for a cookie; then the page is served with the cookie only.
    let (cookie, key) = cookie_of(&address).await;
    let again = c.get(&address).send().await.expect("GET");
    assert_eq!(
        again.status(),
        403,
        "the token a second time, without the cookie"
    );
    let page = c
        .get(format!("{base}/"))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("GET");
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .expect("csp")
        .to_owned();
    assert!(csp.contains("script-src 'self'"), "{csp}");
    assert!(page.text().await.expect("body").contains("oxmcp inspect"));
    // With the cookie, the Host and Origin checks still hold.
    let rebound = c
        .get(format!("{base}/app.js"))
        .header("cookie", &cookie)
        .header("host", format!("attacker.example:{port}"))
        .send()
        .await
        .expect("GET");
    assert_eq!(rebound.status(), 403, "a foreign Host with the cookie");
    // The WebSocket needs the app's own Origin (a browser always sends one).
    let upgrade = |origin: Option<&str>, key: &str| {
        let mut r = c
            .get(format!("{base}/ws?key={key}"))
            .header("cookie", &cookie)
            .header("connection", "upgrade")
            .header("upgrade", "websocket")
            .header("sec-websocket-version", "13")
            .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==");
        if let Some(o) = origin {
            r = r.header("origin", o);
        }
        r.send()
    };
    assert_eq!(
        upgrade(None, &key).await.expect("ws").status(),
        403,
        "a WebSocket without Origin"
    );
    assert_eq!(
        upgrade(Some("http://attacker.example"), &key)
            .await
            .expect("ws")
            .status(),
        403,
        "a WebSocket from another site"
    );
    // The cookie alone (which a browser also sends to other ports of 127.0.0.1) is not enough.
    assert_eq!(
        upgrade(Some(&base), "").await.expect("ws").status(),
        403,
        "a WebSocket without the page's key"
    );
    let last = if key.ends_with('0') { '1' } else { '0' };
    let wrong = format!("{}{last}", &key[..key.len() - 1]);
    assert_eq!(
        upgrade(Some(&base), &wrong).await.expect("ws").status(),
        403,
        "a WebSocket with a wrong key"
    );
    assert_eq!(
        upgrade(Some(&base), &key).await.expect("ws").status(),
        101,
        "its own page"
    );
    // The token is in no log line, even at trace level.
    inspector.start_kill().expect("kill");
    let mut stderr = String::new();
    tokio::io::AsyncReadExt::read_to_string(
        inspector.stderr.as_mut().expect("stderr"),
        &mut stderr,
    )
    .await
    .expect("stderr");
    assert!(stderr.len() > 200, "trace logging was on: {stderr}");
    assert!(!stderr.contains(&token(&address)), "the token was logged");
    assert!(
        !stderr.contains(cookie.split('=').nth(1).expect("value")),
        "the cookie was logged"
    );
    assert!(!stderr.contains(&key), "the page's key was logged");
}

/// Without `--no-open`: the browser (here a script named in `BROWSER`, as a person's
/// `xdg-open` would be) is given a file only this user can read, not the address with its
/// token; chromium opened on that file ends on the connected page; the file is gone when the
/// inspector stops.
#[tokio::test]
async fn the_inspector_opens_the_browser_through_a_private_file() {
    use std::os::unix::fs::PermissionsExt as _;
    if skipped() {
        return;
    }
    let (_server, url) = serve_http(&["--listen", "127.0.0.1:0"]).await;
    let dir = tempfile::tempdir().expect("a directory");
    let opened = dir.path().join("opened");
    let opener = dir.path().join("opener.sh");
    std::fs::write(
        &opener,
        format!("#!/bin/sh\nprintf '%s' \"$1\" > {}\n", opened.display()),
    )
    .expect("the opener");
    std::fs::set_permissions(&opener, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let browser_env = opener.to_str().expect("utf-8").to_owned();
    let (mut inspector, address) =
        inspect_opening(&[&url], &[("BROWSER", &browser_env)], true).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !opened.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the browser was not opened"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let file_url = std::fs::read_to_string(&opened).expect("what was opened");
    assert!(file_url.starts_with("file:///"), "{file_url}");
    assert!(
        !file_url.contains(&token(&address)),
        "the token is not on the command line"
    );
    let file = url::Url::parse(&file_url)
        .expect("a URL")
        .to_file_path()
        .expect("a path");
    let mode = std::fs::metadata(&file)
        .expect("the file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "only this user can read it");
    let browser = Browser::start(shots()).await;
    let page = Page::new(&browser, "opened");
    page.c.goto(&file_url).await.expect("open the file");
    page.until("connected", "document.querySelector('#status.ok')")
        .await;
    let here = page.eval("location.href").await;
    assert_eq!(
        here,
        json!(format!("{}/", origin(&address))),
        "the key left the address"
    );
    browser.client.close().await.expect("close");
    let pid = nix::unistd::Pid::from_raw(inspector.id().expect("running") as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    tokio::time::timeout(std::time::Duration::from_secs(10), inspector.wait())
        .await
        .expect("the inspector stops")
        .expect("status");
    assert!(
        !file.exists(),
        "the file is removed when the inspector stops"
    );
}
