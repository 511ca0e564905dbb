//! `oxmcp inspect` in a real browser: Debian's chromium, driven through chromedriver over
//! WebDriver, against `oxmcp serve`'s demo server over Streamable HTTP and stdio, in both
//! eras. Each step asserts what the page shows. A screenshot of each panel is written to
//! `target/tmp/inspector/` (or `$OXMCP_SCREENSHOTS`).
//!
//! The browser is needed: without chromium and chromedriver these tests fail, unless
//! `OXMCP_SKIP_BROWSER=1` says to skip them (the test script installs both as root).
//! The refusals (token, Host, Origin) are checked with plain HTTP requests, without a browser.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

#[path = "../../crates/oxmcp-auth/tests/common/mod.rs"]
mod oauth;

use fantoccini::{Client, ClientBuilder, Locator};
use oxmcp_tests::{oxmcp, serve_http};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// `oxmcp inspect --no-open ARGS`, and the address with its token that it printed.
async fn inspect(args: &[&str]) -> (Child, String) {
    inspect_env(args, &[]).await
}

async fn inspect_env(args: &[&str], env: &[(&str, &str)]) -> (Child, String) {
    let mut child = Command::new(oxmcp())
        .arg("inspect")
        .arg("--no-open")
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("oxmcp inspect starts");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("oxmcp inspect prints its address")
        .expect("stdout")
        .expect("a line");
    let address = line
        .strip_prefix("oxmcp inspect: ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    assert!(address.starts_with("http://127.0.0.1:"), "{address}");
    (child, address)
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
async fn cookie_of(address: &str) -> String {
    let r = http().get(address).send().await.expect("GET /?token");
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], "/");
    let set = r.headers()["set-cookie"]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert!(set.contains("HttpOnly"), "{set}");
    assert!(set.contains("SameSite=Strict"), "{set}");
    set.split(';').next().expect("pair").to_owned()
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
    let cookie = cookie_of(&address).await;
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
    let upgrade = |origin: Option<&str>| {
        let mut r = c
            .get(format!("{base}/ws"))
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
        upgrade(None).await.expect("ws").status(),
        403,
        "a WebSocket without Origin"
    );
    assert_eq!(
        upgrade(Some("http://attacker.example"))
            .await
            .expect("ws")
            .status(),
        403,
        "a WebSocket from another site"
    );
    assert_eq!(
        upgrade(Some(&base)).await.expect("ws").status(),
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
}

// ---------------------------------------------------------------- the browser

/// The skills `oxmcp serve --skills` publishes in the browser tests.
fn skills() -> String {
    format!(
        "{}/../crates/oxmcp/tests/fixtures/skills",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Whether the browser tests are skipped on purpose.
fn skipped() -> bool {
    if std::env::var_os("OXMCP_SKIP_BROWSER").is_some() {
        eprintln!("OXMCP_SKIP_BROWSER is set: the browser tests are skipped");
        return true;
    }
    false
}

fn screenshots() -> PathBuf {
    let dir = std::env::var_os("OXMCP_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("inspector"));
    std::fs::create_dir_all(&dir).expect("screenshot directory");
    dir
}

/// chromedriver on a free loopback port, and a headless chromium session of it.
struct Browser {
    _driver: Child,
    client: Client,
}

impl Browser {
    async fn start() -> Self {
        let driver_path = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "chromedriver".into());
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .expect("a free port")
            .local_addr()
            .expect("addr")
            .port();
        let driver = Command::new(&driver_path)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {driver_path} ({e}): install Debian's chromium and \
                     chromium-driver, or set OXMCP_SKIP_BROWSER=1 to skip the browser tests"
                )
            });
        let deadline = Instant::now() + Duration::from_secs(20);
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            assert!(Instant::now() < deadline, "chromedriver did not listen");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut args = vec![
            "--headless=new",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--window-size=1400,1000",
        ];
        // Chromium's sandbox needs user namespaces, which root in a container lacks.
        if nix::unistd::Uid::effective().is_root() {
            args.push("--no-sandbox");
        }
        let mut options = json!({ "args": args });
        if let Ok(binary) = std::env::var("CHROMIUM") {
            options["binary"] = json!(binary);
        }
        let caps = json!({ "goog:chromeOptions": options });
        let caps = caps.as_object().expect("object").clone();
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("a chromium session");
        Self {
            _driver: driver,
            client,
        }
    }
}

/// The page under test, with the name of the run its screenshots carry.
struct Page<'a> {
    c: &'a Client,
    run: String,
}

impl Page<'_> {
    /// Evaluates `expr` (JavaScript) in the page.
    async fn eval(&self, expr: &str) -> Value {
        self.c
            .execute(&format!("return ({expr});"), vec![])
            .await
            .unwrap_or_else(|e| panic!("{expr}: {e}"))
    }

    /// Waits until `expr` is truthy (at most 30 s); its value.
    async fn until(&self, what: &str, expr: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let v = self.eval(expr).await;
            let truthy =
                !matches!(&v, Value::Null | Value::Bool(false)) && v != json!(0) && v != json!("");
            if truthy {
                return v;
            }
            if Instant::now() > deadline {
                self.shot(&format!("failed-{}", what.replace(' ', "-")))
                    .await;
                let shown = self.eval("document.body.innerText.slice(0, 3000)").await;
                panic!(
                    "{}: the page never showed {what} ({expr}); it shows:\n{shown}",
                    self.run
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn click(&self, css: &str) {
        self.c
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("{}: no {css}: {e}", self.run))
            .click()
            .await
            .unwrap_or_else(|e| panic!("{}: cannot click {css}: {e}", self.run));
    }

    /// Empties the field `css` (it may hold the schema's default), then types `text`.
    async fn type_in(&self, css: &str, text: &str) {
        let field = self
            .c
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("{}: no {css}: {e}", self.run));
        field
            .clear()
            .await
            .unwrap_or_else(|e| panic!("{}: cannot empty {css}: {e}", self.run));
        field
            .send_keys(text)
            .await
            .unwrap_or_else(|e| panic!("{}: cannot type in {css}: {e}", self.run));
    }

    async fn shot(&self, panel: &str) {
        let png = self.c.screenshot().await.expect("a screenshot");
        let path = screenshots().join(format!("{}-{panel}.png", self.run));
        std::fs::write(&path, png).expect("write the screenshot");
    }

    async fn tab(&self, panel: &str) {
        self.click(&format!("#tabs button[data-panel={panel}]"))
            .await;
    }

    /// Chooses tool `name` in the Tools panel.
    async fn tool(&self, name: &str) {
        self.tab("tools").await;
        self.click(&format!("#tool-list li.tool[data-name={name}]"))
            .await;
        self.until("the tool's form", &format!("document.querySelector('#tool-name')?.textContent.length > 0 && document.querySelector('#call-tool') && window.__inspector.state.selectedTool?.name === '{name}'")).await;
    }

    /// The text of the last tool result.
    async fn result(&self, what: &str) -> String {
        let v = self
            .until(what, "document.querySelector('#tool-result')?.innerText")
            .await;
        v.as_str().unwrap_or_default().to_owned()
    }
}

/// Every step of the issue's list, on one inspector.
async fn walk(c: &Client, address: &str, run: &str, modern: bool) {
    let page = Page {
        c,
        run: run.to_owned(),
    };
    c.goto(address).await.expect("open the inspector");
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
    let browser = Browser::start().await;
    walk(&browser.client, &address, run, modern).await;
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

/// A server of 1,000 tools (999 small ones and `form`): listed and filtered in the page, with
/// the times the page took printed (measured in the browser with `performance.now()`); then
/// `form`'s form, made from a schema with an enum, a nested object, an array and a default.
#[tokio::test]
async fn the_inspector_lists_and_filters_a_thousand_tools() {
    if skipped() {
        return;
    }
    let (_inspector, address) = inspect(&["--", env!("CARGO_BIN_EXE_many_tools"), "999"]).await;
    let browser = Browser::start().await;
    let page = Page {
        c: &browser.client,
        run: "many-tools".into(),
    };
    browser.client.goto(&address).await.expect("open");
    page.until("connected", "document.querySelector('#status.ok')")
        .await;
    page.tab("tools").await;
    page.until("1000 tools", "window.__inspector.perf.toolCount === 1000 && document.querySelectorAll('#tool-list li.tool').length === 1000").await;
    let listed = page.eval("window.__inspector.perf.toolsListed").await;
    let fetched = page.eval("window.__inspector.perf.toolsFetched").await;
    let longest = page.eval("window.__inspector.perf.longestTask").await;
    // Filters typed one key at a time, as a person types.
    page.type_in("#tool-filter", "group 7").await;
    page.until(
        "the filtered list",
        "document.querySelector('#tool-count').textContent === '100 of 1000 tools'",
    )
    .await;
    let visible = page
        .eval(
            "[...document.querySelectorAll('#tool-list li.tool')].filter(li => !li.hidden).length",
        )
        .await;
    assert_eq!(visible, json!(100));
    let filtered = page.eval("window.__inspector.perf.lastFilter").await;
    page.type_in("#tool-filter", "tool_0998").await;
    page.until(
        "one tool",
        "document.querySelector('#tool-count').textContent === '1 of 1000 tools'",
    )
    .await;
    page.click("#tool-list li.tool[data-name=tool_0998]").await;
    page.type_in("#tool-form [data-field=text]", "last").await;
    page.click("#call-tool").await;
    let answer = page.result("tool_0998's answer").await;
    assert!(answer.contains("last"), "{answer}");
    page.shot("tools").await;
    fill_the_form(&page).await;
    eprintln!(
        "1,000 tools: listed and shown in {:.1} ms ({:.1} ms of it the tools/list round trip), the longest task of the page {:.1} ms; one filter keystroke took {:.2} ms (in the page)",
        listed.as_f64().unwrap_or(-1.0),
        fetched.as_f64().unwrap_or(-1.0),
        longest.as_f64().unwrap_or(-1.0),
        filtered.as_f64().unwrap_or(-1.0)
    );
    browser.client.close().await.expect("close");
}

/// `form`: each kind of field filled as a person does, the arguments checked before they go,
/// then the same call from the raw JSON editor.
async fn fill_the_form(page: &Page<'_>) {
    page.type_in("#tool-filter", "form").await;
    page.click("#tool-list li.tool[data-name=form]").await;
    page.until(
        "form's form",
        "window.__inspector.state.selectedTool?.name === 'form'",
    )
    .await;
    page.type_in("#tool-form [data-field=name]", "box").await;
    // The enum is a select list of its values (the third is `star`).
    page.click("#tool-form select[data-field=kind] option:nth-child(3)")
        .await;
    page.type_in("#tool-form [data-field='at.x']", "3").await;
    // A nested field left empty is refused before anything is sent.
    page.click("#call-tool").await;
    page.until(
        "the nested field's error",
        "document.querySelector('#form-errors')?.textContent.includes('at.y: required')",
    )
    .await;
    page.type_in("#tool-form [data-field='at.y']", "-4").await;
    // The array: two items added, each filled.
    page.click("#tool-form [data-field=tags] .add-item").await;
    page.click("#tool-form [data-field=tags] .add-item").await;
    page.type_in(
        "#tool-form [data-field=tags] .array-item:nth-of-type(1) input",
        "red",
    )
    .await;
    page.type_in(
        "#tool-form [data-field=tags] .array-item:nth-of-type(2) input",
        "blue",
    )
    .await;
    let count = page
        .eval("document.querySelector('#tool-form [data-field=count]').value")
        .await;
    assert_eq!(count, json!("3"), "the default is in the field");
    page.click("#call-tool").await;
    let expected = r#"{"name":"box","kind":"star","at":{"x":3,"y":-4},"tags":["red","blue"],"count":3,"filled":false}"#;
    let answer = page.result("form's answer").await;
    assert!(answer.contains(expected), "{answer}");
    page.shot("form").await;
    // The raw JSON editor starts from what the form holds, and calls the same.
    page.click("#tool-raw-toggle").await;
    let raw = page.eval("document.querySelector('#tool-raw').value").await;
    assert!(
        raw.as_str()
            .unwrap_or_default()
            .contains("\"kind\": \"star\""),
        "{raw}"
    );
    page.eval("document.querySelector('#tool-result-box').textContent = ''")
        .await;
    page.click("#call-tool").await;
    let again = page.result("form's answer from the raw editor").await;
    assert!(again.contains(expected), "{again}");
}

/// The other transports of the client, each reached by its URL: the page connects, lists the
/// tools and calls echo.
#[tokio::test]
async fn the_inspector_in_a_browser_over_websocket_grpc_and_legacy_sse() {
    if skipped() {
        return;
    }
    let (_server, url) = serve_http(&["--listen", "127.0.0.1:0"]).await;
    let host = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let browser = Browser::start().await;
    for (run, target) in [
        ("websocket", format!("ws://{host}/ws")),
        ("grpc", format!("grpc://{host}")),
        ("legacy-sse", format!("http://{host}/sse")),
    ] {
        let (_inspector, address) = inspect(&["--era", "legacy", &target]).await;
        let page = Page {
            c: &browser.client,
            run: run.into(),
        };
        browser.client.goto(&address).await.expect("open");
        page.until("connected", "document.querySelector('#status.ok')")
            .await;
        page.tab("tools").await;
        page.until(
            "the tools",
            "document.querySelectorAll('#tool-list li.tool').length >= 16",
        )
        .await;
        page.tool("echo").await;
        page.type_in("#tool-form [data-field=message]", &format!("over {run}"))
            .await;
        page.click("#call-tool").await;
        let echoed = page.result("echo's answer").await;
        assert!(echoed.contains(&format!("over {run}")), "{run}: {echoed}");
        page.shot("tools").await;
    }
    browser.client.close().await.expect("close");
}

/// A server behind OAuth: the inspector cannot connect without a token, Log in on the page
/// offers the authorization server's page, the browser goes through it (the test authorization
/// server approves at once) back to the inspector's loopback listener, and the page is then
/// connected with the stored token.
#[tokio::test]
async fn the_inspector_logs_in_from_the_page() {
    if skipped() {
        return;
    }
    let (issuer, st) = oauth::start_as().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("addr")
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let listen = format!("127.0.0.1:{port}");
    let (_server, served) = serve_http(&[
        "--listen",
        &listen,
        "--auth-issuer",
        &issuer,
        "--auth-audience",
        &url,
        "--auth-scope",
        "mcp",
    ])
    .await;
    assert_eq!(served, url);
    let tokens = tempfile::tempdir().expect("a token directory");
    let dir = tokens.path().to_str().expect("utf-8").to_owned();
    let (_inspector, address) =
        inspect_env(&["--era", "legacy", &url], &[("MCP_CONFIG_DIR", &dir)]).await;
    let browser = Browser::start().await;
    let page = Page {
        c: &browser.client,
        run: "login".into(),
    };
    browser.client.goto(&address).await.expect("open");
    page.until(
        "the advice to log in",
        "document.querySelector('#status.bad')?.textContent.includes('oxmcp login')",
    )
    .await;
    page.click("#login").await;
    page.until(
        "the authorization link",
        "document.querySelector('.ask[data-kind=authorize] a.authorize-link')",
    )
    .await;
    page.shot("login").await;
    page.click(".ask[data-kind=authorize] a.authorize-link")
        .await;
    page.until(
        "connected after logging in",
        "document.querySelector('#status.ok')",
    )
    .await;
    page.tab("tools").await;
    page.until(
        "the tools",
        "document.querySelectorAll('#tool-list li.tool').length >= 16",
    )
    .await;
    assert!(
        tokens.path().join("tokens.json").exists(),
        "the tokens were stored"
    );
    let auth = oauth::seen(&st, "/authorize");
    assert_eq!(auth.len(), 1, "one authorization");
    assert_eq!(auth[0]["resource"], url);
    browser.client.close().await.expect("close");
}
