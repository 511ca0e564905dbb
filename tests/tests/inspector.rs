//! `oxmcp inspect` in a real browser: Debian's chromium, driven through chromedriver over
//! WebDriver, against `oxmcp serve`'s demo server over Streamable HTTP and stdio, in both
//! eras: every panel, each step asserting what the page shows. A screenshot of each panel is
//! written to `target/tmp/inspector/` (or `$OXMCP_SCREENSHOTS`). `inspector_servers.rs` has
//! the other servers: 1,000 tools, the other transports, OAuth.
//!
//! The browser is needed: without chromium and chromedriver these tests fail, unless
//! `OXMCP_SKIP_BROWSER=1` says to skip them (the test script installs both as root).
//! `inspector_guard.rs` has the refusals and the opening of the browser.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use oxmcp_tests::inspector::{Browser, Page, inspect, skipped};
use oxmcp_tests::{oxmcp, serve_http};
use serde_json::json;

/// Where the screenshots of these tests go (unless `$OXMCP_SCREENSHOTS` says).
fn shots() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("inspector")
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
