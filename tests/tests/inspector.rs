//! `oxmcp inspect` in a real browser: Debian's chromium, driven through chromedriver over
//! WebDriver, against `oxmcp serve`'s demo server over Streamable HTTP and stdio, in both
//! eras: every panel, each step asserting what the page shows. A screenshot of each panel is
//! written to `target/tmp/inspector/` (or `$OXMCP_SCREENSHOTS`). `inspector_servers.rs` has
//! the other servers: 1,000 tools, the other transports, OAuth.
//!
//! The browser is needed: without chromium and chromedriver these tests fail, unless
//! `OXMCP_SKIP_BROWSER=1` says to skip them (the test script installs both as root).
//! The refusals (token, Host, Origin) are checked with plain HTTP requests, without a browser.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use oxmcp_tests::inspector::{Browser, Page, inspect, inspect_env, inspect_opening, skipped};
use oxmcp_tests::{oxmcp, serve_http};
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

// ---------------------------------------------------------------- the browser

/// The skills `oxmcp serve --skills` publishes in the browser tests.
fn skills() -> String {
    format!(
        "{}/../crates/oxmcp/tests/fixtures/skills",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Every step of the list, on one inspector.
async fn walk(page: &Page<'_>, address: &str, modern: bool) {
    page.c.goto(address).await.expect("open the inspector");
    server_panel(page, modern).await;
    tool_calls(page).await;
    progress_and_cancel(page, modern).await;
    server_requests(page).await;
    log_and_roots(page).await;
    resources_panel(page).await;
    prompts_tasks_and_skills(page).await;
    traffic_panel(page).await;
}

/// Server: who it is, in which era.
async fn server_panel(page: &Page<'_>, modern: bool) {
    let run = page.run();
    // Server: who it is, in which era.
    let status = page
        .until(
            "the connected status",
            "document.querySelector('#status.ok')?.textContent",
        )
        .await;
    let status = status.as_str().unwrap_or_default();
    assert_eq!(status.contains("2026-07-28"), modern, "{run}: {status}");
    let info = page
        .until(
            "the server's name",
            "document.querySelector('#server-info')?.innerText",
        )
        .await;
    assert!(
        info.as_str().unwrap_or_default().contains("mcp-demo"),
        "{run}: {info}"
    );
    page.until(
        "the capabilities",
        "document.querySelector('#server-capabilities')?.textContent.includes('tools')",
    )
    .await;
    page.shot("server").await;
}

/// Tools: the list, echo through its form, a form refused before anything is sent, and add's
/// structured result checked against its output schema.
async fn tool_calls(page: &Page<'_>) {
    let run = page.run();
    // Tools: the list, then echo through its form.
    page.tab("tools").await;
    let count = page
        .until("the tools", "document.querySelectorAll('#tool-list li.tool').length >= 16 && document.querySelectorAll('#tool-list li.tool').length")
        .await;
    assert_eq!(count, json!(oxmcp_tests::DEMO_TOOLS.len()), "{run}");
    page.tool("echo").await;
    page.type_in("#tool-form [data-field=message]", "hello from chromium")
        .await;
    page.click("#call-tool").await;
    let echoed = page.result("echo's answer").await;
    assert!(echoed.contains("hello from chromium"), "{run}: {echoed}");
    // A required field left empty is refused before anything is sent.
    page.tool("echo").await;
    let sent = page.eval("window.__inspector.state.traffic.length").await;
    page.click("#call-tool").await;
    page.until(
        "the form's error",
        "document.querySelector('#form-errors')?.textContent.includes('message')",
    )
    .await;
    assert_eq!(
        page.eval("window.__inspector.state.traffic.length").await,
        sent,
        "{run}: an invalid form sent a request"
    );

    // add: structured content, checked against its output schema.
    page.tool("add").await;
    page.type_in("#tool-form [data-field=a]", "2").await;
    page.type_in("#tool-form [data-field=b]", "3.5").await;
    page.click("#call-tool").await;
    page.until(
        "add's structured result",
        "document.querySelector('#tool-result .structured')?.textContent.includes('5.5')",
    )
    .await;
    page.until(
        "the output schema check",
        "document.querySelector('#tool-result .output-check.check-ok')",
    )
    .await;
    page.shot("tools").await;
}

/// slow: progress as a bar, then cancelled from the page.
async fn progress_and_cancel(page: &Page<'_>, modern: bool) {
    let run = page.run();
    // slow: progress as a bar, then cancelled from the page.
    page.tool("slow").await;
    page.type_in("#tool-form [data-field=steps]", "100").await;
    page.type_in("#tool-form [data-field=delay_ms]", "150")
        .await;
    page.click("#call-tool").await;
    page.until("progress", "!document.querySelector('#call-progress').hidden && document.querySelector('#call-progress progress').value >= 2").await;
    let progress = page
        .eval("document.querySelector('#call-progress-text').textContent")
        .await;
    assert!(
        progress.as_str().unwrap_or_default().contains("/ 100"),
        "{run}: {progress}"
    );
    page.shot("progress").await;
    page.click("#cancel-call").await;
    let cancelled = page.result("the cancellation").await;
    assert!(cancelled.contains("cancelled"), "{run}: {cancelled}");
    if !modern {
        page.until("notifications/cancelled in the traffic", "[...document.querySelectorAll('#traffic-list li.msg')].some(li => li.dataset.method === 'notifications/cancelled' && li.dataset.dir === 'out')").await;
    }
}

/// The server's requests answered at the page: ask's elicitation in a generated form, and
/// sample's sampling request as the model.
async fn server_requests(page: &Page<'_>) {
    let run = page.run();
    // ask: the elicitation answered in a generated form.
    page.tool("ask").await;
    page.click("#call-tool").await;
    page.until(
        "the elicitation",
        "document.querySelector('.ask[data-kind=elicitation] [data-field=name]')",
    )
    .await;
    page.type_in(".ask[data-kind=elicitation] [data-field=name]", "Ada")
        .await;
    page.shot("elicitation").await;
    page.click(".ask[data-kind=elicitation] .ask-accept").await;
    let greeted = page.result("the greeting").await;
    assert!(greeted.contains("Hello, Ada!"), "{run}: {greeted}");
    page.until(
        "the elicitation to close",
        "!document.querySelector('.ask')",
    )
    .await;

    // sample: the person at the page answers as the model.
    page.tool("sample").await;
    page.type_in("#tool-form [data-field=prompt]", "What is two and two?")
        .await;
    page.click("#call-tool").await;
    page.until("the sampling request", "document.querySelector('.ask[data-kind=sampling]')?.innerText.includes('What is two and two?')").await;
    page.type_in(".ask[data-kind=sampling] textarea.ask-text", "Four.")
        .await;
    page.shot("sampling").await;
    page.click(".ask[data-kind=sampling] .ask-send").await;
    let sampled = page.result("the sampled answer").await;
    assert!(sampled.contains("Four."), "{run}: {sampled}");
}

/// A log message of the server in the pane beside the traffic, and roots configured in the
/// page, then asked for by the server.
async fn log_and_roots(page: &Page<'_>) {
    let run = page.run();
    // A log message of the server, in the pane beside the traffic.
    page.tool("log").await;
    page.type_in("#tool-form [data-field=message]", "a line for the log pane")
        .await;
    page.click("#call-tool").await;
    page.result("log's answer").await;
    page.until(
        "the log line",
        "document.querySelector('#log-list')?.textContent.includes('a line for the log pane')",
    )
    .await;

    // Roots configured in the page, then asked for by the server.
    page.tab("roots").await;
    page.click("#root-add").await;
    page.type_in(
        "#root-table tbody tr:last-child td:first-child input",
        "file:///srv/projects",
    )
    .await;
    page.type_in(
        "#root-table tbody tr:last-child td:nth-child(2) input",
        "projects",
    )
    .await;
    page.click("#roots-apply").await;
    page.until(
        "the roots applied",
        "document.querySelector('#roots-note')?.textContent.includes('1 root')",
    )
    .await;
    page.tool("roots").await;
    page.click("#call-tool").await;
    let roots = page.result("the roots the server got").await;
    assert!(
        roots.contains("file:///srv/projects projects"),
        "{run}: {roots}"
    );
}

/// Resources: read one, subscribe, see the update `touch` announces, and read a template with
/// its variable completed by the server.
async fn resources_panel(page: &Page<'_>) {
    // Resources: read one, subscribe, and see the update `touch` announces.
    page.tab("resources").await;
    page.click("#resource-list li.resource[data-uri='demo://readme']")
        .await;
    page.until("the resource's text", "document.querySelector('#resource-content')?.innerText.includes('This is the mcp demo server.')").await;
    page.click("#subscribe").await;
    page.until(
        "the subscription",
        "document.querySelector('#subscribe')?.dataset.subscribed === 'yes'",
    )
    .await;
    page.tool("touch").await;
    page.type_in("#tool-form [data-field=uri]", "demo://readme")
        .await;
    page.click("#call-tool").await;
    page.result("touch's answer").await;
    page.tab("resources").await;
    page.until(
        "the update",
        "document.querySelector(\"#resource-updates li.update[data-uri='demo://readme']\")",
    )
    .await;
    // A template, with its variable completed by the server.
    page.click("#template-list li.template[data-template='demo://greeting/{name}']")
        .await;
    page.type_in("#resource-detail [data-field=name]", "Ba")
        .await;
    page.until(
        "the server's completion",
        "(document.querySelector('#resource-detail [data-field=name]')?.dataset.suggestions || '').split('\\n').includes('Barbara')",
    )
    .await;
    page.type_in("#resource-detail [data-field=name]", "Bo")
        .await;
    page.click("#template-read").await;
    page.until(
        "the template's reading",
        "document.querySelector('#resource-content')?.innerText.includes('Hello, Bo!')",
    )
    .await;
    page.shot("resources").await;
}

/// Prompts (arguments completed, messages rendered), a task's status, and a skill loaded.
async fn prompts_tasks_and_skills(page: &Page<'_>) {
    let run = page.run();
    // Prompts: arguments in, messages rendered.
    page.tab("prompts").await;
    page.click("#prompt-list li.prompt[data-name=greet]").await;
    page.type_in("#prompt-detail [data-field=name]", "Gr").await;
    page.until(
        "the prompt argument's completion",
        "document.querySelector('#prompt-detail datalist option')?.value === 'Grace'",
    )
    .await;
    page.type_in("#prompt-detail [data-field=name]", "Grace")
        .await;
    page.click("#prompt-get").await;
    page.until(
        "the prompt's messages",
        "document.querySelector('#prompt-result')?.innerText.includes('Grace')",
    )
    .await;
    page.shot("prompts").await;

    // Tasks: the demo declares them; a task run from the Tools panel shows its status.
    page.tool("slow").await;
    page.type_in("#tool-form [data-field=steps]", "2").await;
    page.type_in("#tool-form [data-field=delay_ms]", "50").await;
    page.click("#call-as-task").await;
    page.click("#call-tool").await;
    page.result("the task's result").await;
    page.tab("tasks").await;
    page.until("the task in the Tasks panel", "document.querySelector('#task-table tbody tr td:nth-child(2)')?.textContent === 'completed'").await;
    let note = page
        .eval("document.querySelector('#tasks-note').textContent")
        .await;
    assert!(
        !note
            .as_str()
            .unwrap_or_default()
            .contains("declares no tasks"),
        "{run}: {note}"
    );
    page.shot("tasks").await;

    // Skills: listed, and one loaded (verified) with its SKILL.md shown.
    page.tab("skills").await;
    page.click("#skill-list li.skill[data-uri='skill://pdf-processing/SKILL.md']")
        .await;
    page.until(
        "the skill's SKILL.md",
        "document.querySelector('#skill-detail .skill-md')?.textContent.includes('name: pdf-processing')",
    )
    .await;
    page.shot("skills").await;
}

/// Traffic: every message, both ways, filterable, each one expandable.
async fn traffic_panel(page: &Page<'_>) {
    let run = page.run();
    // Traffic: every message, both ways, filterable.
    page.tab("traffic").await;
    page.until("requests out", "[...document.querySelectorAll('#traffic-list li.msg')].some(li => li.dataset.method === 'tools/call' && li.dataset.dir === 'out')").await;
    page.until(
        "responses in",
        "document.querySelectorAll('#traffic-list li.msg.response[data-dir=in]').length >= 8",
    )
    .await;
    let rows = page
        .eval("document.querySelectorAll('#traffic-list li.msg').length")
        .await;
    let kept = page.eval("window.__inspector.state.traffic.length").await;
    assert_eq!(rows, kept, "{run}: a row per message");
    page.type_in("#traffic-filter", "hello from chromium").await;
    let shown = page
        .until("the filtered traffic", "[...document.querySelectorAll('#traffic-list li.msg')].filter(li => !li.hidden).length")
        .await;
    assert!(
        shown.as_u64().unwrap_or(0) >= 2,
        "{run}: the echo's request and answer, got {shown}"
    );
    assert!(
        shown.as_u64() < rows.as_u64(),
        "{run}: the filter hid nothing"
    );
    page.click("#traffic-list li.msg:not([hidden]) .row").await;
    page.until("an expanded message", "document.querySelector('#traffic-list li.open .body pre')?.textContent.includes('hello from chromium')").await;
    page.shot("traffic").await;
}

async fn browse(run: &str, modern: bool, inspector_args: &[&str]) {
    let era = if modern { "2026-07-28" } else { "legacy" };
    let mut args = vec!["--era", era];
    args.extend_from_slice(inspector_args);
    let (_inspector, address) = inspect(&args).await;
    let browser = Browser::start(shots()).await;
    walk(&Page::new(&browser, run), &address, modern).await;
    browser.client.close().await.expect("close the session");
}

#[tokio::test]
async fn the_inspector_in_a_browser_over_streamable_http() {
    if skipped() {
        return;
    }
    let skills = skills();
    let (_server, url) = serve_http(&["--listen", "127.0.0.1:0", "--skills", &skills]).await;
    browse("http-legacy", false, &[&url]).await;
    browse("http-2026", true, &[&url]).await;
}

#[tokio::test]
async fn the_inspector_in_a_browser_over_stdio() {
    if skipped() {
        return;
    }
    let skills = skills();
    let serve = ["--", oxmcp(), "serve", "--stdio", "--skills", &skills];
    browse("stdio-legacy", false, &serve).await;
    browse("stdio-2026", true, &serve).await;
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
