//! `oxmcp inspect` and its page in a headless chromium, for the inspector's tests
//! (`tests/inspector*.rs`): [`inspect`] starts the inspector, [`Browser`] starts chromedriver
//! and a chromium session, [`Page`] drives the page as a person does (click, type) and waits
//! for what it shows.
//!
//! Without chromium and chromedriver (on PATH, or `$CHROMIUM` and `$CHROMEDRIVER`) a browser
//! test fails, unless `OXMCP_SKIP_BROWSER=1` ([`skipped`]).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::oxmcp;

/// `oxmcp inspect --no-open ARGS`, and the address with its token that it printed.
pub async fn inspect(args: &[&str]) -> (Child, String) {
    inspect_env(args, &[]).await
}

/// [`inspect`] with extra environment variables.
pub async fn inspect_env(args: &[&str], env: &[(&str, &str)]) -> (Child, String) {
    inspect_opening(args, env, false).await
}

/// [`inspect_env`], and with `open` the browser opened as a person's would be (the test
/// names the program in `BROWSER`).
pub async fn inspect_opening(args: &[&str], env: &[(&str, &str)], open: bool) -> (Child, String) {
    let no_open: &[&str] = if open { &[] } else { &["--no-open"] };
    let mut child = Command::new(oxmcp())
        .arg("inspect")
        .args(no_open)
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

/// Whether the browser tests are skipped on purpose.
pub fn skipped() -> bool {
    if std::env::var_os("OXMCP_SKIP_BROWSER").is_some() {
        eprintln!("OXMCP_SKIP_BROWSER is set: the browser tests are skipped");
        return true;
    }
    false
}

/// Where screenshots go: `$OXMCP_SCREENSHOTS`, else `dir` (a test passes
/// `CARGO_TARGET_TMPDIR/inspector`).
fn screenshots(dir: PathBuf) -> PathBuf {
    let dir = std::env::var_os("OXMCP_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or(dir);
    std::fs::create_dir_all(&dir).expect("screenshot directory");
    dir
}

/// chromedriver on a free loopback port, and a headless chromium session of it.
#[derive(Debug)]
pub struct Browser {
    _driver: Child,
    /// The WebDriver session.
    pub client: Client,
    shots: PathBuf,
}

impl Browser {
    /// Starts chromedriver and a headless chromium; screenshots go to `shots` (see
    /// [`Page::shot`]).
    pub async fn start(shots: PathBuf) -> Self {
        let driver_path = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "chromedriver".into());
        let port = crate::scale::free_port();
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
            shots: screenshots(shots),
        }
    }
}

/// The page under test, with the name of the run its screenshots carry.
#[derive(Debug)]
pub struct Page<'a> {
    /// The WebDriver session.
    pub c: &'a Client,
    run: String,
    shots: PathBuf,
}

impl<'a> Page<'a> {
    /// The page of `browser`, for the run named `run` (its screenshots' prefix).
    pub fn new(browser: &'a Browser, run: &str) -> Self {
        Self {
            c: &browser.client,
            run: run.to_owned(),
            shots: browser.shots.clone(),
        }
    }

    /// The run's name.
    pub fn run(&self) -> &str {
        &self.run
    }

    /// Evaluates `expr` (JavaScript) in the page.
    pub async fn eval(&self, expr: &str) -> Value {
        self.c
            .execute(&format!("return ({expr});"), vec![])
            .await
            .unwrap_or_else(|e| panic!("{expr}: {e}"))
    }

    /// Waits until `expr` is truthy (at most 30 s); its value.
    pub async fn until(&self, what: &str, expr: &str) -> Value {
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

    /// Clicks the element `css` (the first that matches).
    pub async fn click(&self, css: &str) {
        self.c
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("{}: no {css}: {e}", self.run))
            .click()
            .await
            .unwrap_or_else(|e| panic!("{}: cannot click {css}: {e}", self.run));
    }

    /// Empties the field `css` (it may hold the schema's default), then types `text`.
    pub async fn type_in(&self, css: &str, text: &str) {
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

    /// Writes a screenshot of the page, named `RUN-PANEL.png`.
    pub async fn shot(&self, panel: &str) {
        let png = self.c.screenshot().await.expect("a screenshot");
        let path = self.shots.join(format!("{}-{panel}.png", self.run));
        std::fs::write(&path, png).expect("write the screenshot");
    }

    /// Opens the inspector's panel `panel` (`tools`, `resources`...).
    pub async fn tab(&self, panel: &str) {
        self.click(&format!("#tabs button[data-panel={panel}]"))
            .await;
    }

    /// Chooses tool `name` in the Tools panel.
    pub async fn tool(&self, name: &str) {
        self.tab("tools").await;
        self.click(&format!("#tool-list li.tool[data-name={name}]"))
            .await;
        self.until("the tool's form", &format!("document.querySelector('#tool-name')?.textContent.length > 0 && document.querySelector('#call-tool') && window.__inspector.state.selectedTool?.name === '{name}'")).await;
    }

    /// The text of the last tool result.
    pub async fn result(&self, what: &str) -> String {
        let v = self
            .until(what, "document.querySelector('#tool-result')?.innerText")
            .await;
        v.as_str().unwrap_or_default().to_owned()
    }
}
