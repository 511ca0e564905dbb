//! `oxmcp inspect` in a real browser against other servers than the demo over HTTP and stdio:
//! a server of 1,000 tools (listed, filtered, and a form with every shape of field), the
//! demo over WebSocket, gRPC and legacy HTTP+SSE, and a server behind OAuth (logging in from
//! the page). `inspector.rs` has the demo's every panel, and the refusals.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../crates/oxmcp-auth/tests/common/mod.rs"]
mod oauth;

use std::path::PathBuf;

use oxmcp_tests::inspector::{Browser, Page, inspect, inspect_env, skipped};
use oxmcp_tests::serve_http;
use serde_json::json;

/// Where the screenshots of these tests go (unless `$OXMCP_SCREENSHOTS` says).
fn shots() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("inspector")
}

/// A server of 1,000 tools (999 small ones and `form`): listed and filtered in the page, with
/// the times the page took printed (measured in the browser with `performance.now()`); then
/// `form`'s form, made from a schema with an enum, a nested object, an array and a default.
#[tokio::test]
async fn the_inspector_lists_and_filters_a_thousand_tools() {
    if skipped() {
        return;
    }
    // `OXMCP_MANY_TOOLS` names another build of it (a release one, for the figures).
    let many = std::env::var("OXMCP_MANY_TOOLS")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_many_tools").to_owned());
    let (_inspector, address) = inspect(&["--", &many, "999"]).await;
    let browser = Browser::start(shots()).await;
    let page = Page::new(&browser, "many-tools");
    browser.client.goto(&address).await.expect("open");
    page.until("connected", "document.querySelector('#status.ok')")
        .await;
    page.tab("tools").await;
    page.until("1000 tools", "window.__inspector.perf.toolCount === 1000 && document.querySelectorAll('#tool-list li.tool').length === 1000").await;
    let listed = page.eval("window.__inspector.perf.toolsListed").await;
    let fetched = page.eval("window.__inspector.perf.toolsFetched").await;
    let longest = page.eval("window.__inspector.perf.longestTask").await;
    let tasks = page
        .eval("JSON.stringify({asked: Math.round(window.__inspector.perf.toolsAsked), long: window.__inspector.perf.longTasks})")
        .await;
    eprintln!("the page's long tasks [start ms, duration ms]: {tasks}");
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
    page_functions(&page).await;
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

/// What the page computes itself: a URI template's expansion (RFC 6570), and a form for a
/// schema that refers to itself many times over (made within a budget, not hanging the page).
async fn page_functions(page: &Page<'_>) {
    let uri = page
        .eval("expandTemplate('demo://x{/p}{?q,r}{#f}{.e}{;m}', {q: 'a b', r: '', p: 'x/y', f: '/z', e: 'json', m: 'v'})")
        .await;
    assert_eq!(uri, json!("demo://x/x%2Fy?q=a%20b#/z.json;m=v"));
    let simple = page
        .eval("expandTemplate('demo://greeting/{name}', {name: 'Ada Lovelace'})")
        .await;
    assert_eq!(simple, json!("demo://greeting/Ada%20Lovelace"));
    let fields = page
        .eval("(() => { const props = {}; for (let i = 0; i < 20; i++) props['p' + i] = {$ref: '#/$defs/A'}; const bomb = {type: 'object', properties: props, $defs: {A: {type: 'object', properties: props}}}; const t0 = performance.now(); const f = schemaForm(bomb, 'bomb'); return [f.el.querySelectorAll('input, select, textarea').length, performance.now() - t0]; })()")
        .await;
    let made = fields[0].as_u64().unwrap_or(u64::MAX);
    assert!(made <= 2100, "{fields}");
    assert!(fields[1].as_f64().unwrap_or(f64::MAX) < 5000.0, "{fields}");
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
    let browser = Browser::start(shots()).await;
    for (run, target) in [
        ("websocket", format!("ws://{host}/ws")),
        ("grpc", format!("grpc://{host}")),
        ("legacy-sse", format!("http://{host}/sse")),
    ] {
        let (_inspector, address) = inspect(&["--era", "legacy", &target]).await;
        let page = Page::new(&browser, run);
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
    let port = oxmcp_tests::scale::free_port();
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
    let browser = Browser::start(shots()).await;
    let page = Page::new(&browser, "login");
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
