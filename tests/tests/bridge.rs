//! One-line bridges end to end: `oxmcp serve -- CMD` (a stdio server over our HTTP transports)
//! and `oxmcp serve --stdio --upstream URL` (a remote server for a stdio-only host), in both
//! protocol eras, names unchanged, sampling and elicitation passed through.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use oxmcp_tests::mcp;

use oxmcp_tests::oxmcp;
const ERAS: [&str; 2] = ["legacy", "modern"];

/// The first word of every line.
fn first_words(out: &str) -> Vec<&str> {
    out.lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect()
}

const ANSWER: &str = r#"cat >/dev/null; echo '{"role":"assistant","content":{"type":"text","text":"bridged"},"model":"sh"}'"#;

/// What a client sees through a bridge: the demo's tools by their own names, calls, a
/// resource, sampling and elicitation passed through, in both eras. `reach` is the URL, or
/// the arguments that come after the command's own (`-- CMD...`).
async fn works_through(reach: &[&str]) {
    for era in ERAS {
        // `COMMAND [URL] ARGS --era ERA [-- CMD...]`.
        let with = |args: &[&str]| {
            let owned = |s: &&str| (*s).to_owned();
            let (command, rest) = args.split_first().unwrap();
            let mut all = vec![(*command).to_owned()];
            let url = reach.len() == 1;
            if url {
                all.push(reach[0].to_owned());
            }
            all.extend(rest.iter().map(owned));
            all.extend(["--era".to_owned(), era.to_owned()]);
            if !url {
                all.extend(reach.iter().map(owned));
            }
            all
        };
        let run = |args: Vec<String>| async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            mcp(&args).await
        };
        let (ok, out, err) = run(with(&["tools"])).await;
        assert!(ok, "{era}: {err}");
        assert_eq!(
            first_words(&out),
            oxmcp_tests::DEMO_TOOLS,
            "{era}: no prefixes"
        );
        let (ok, out, err) = run(with(&["call", "echo", r#"{"message":"through"}"#])).await;
        assert!(ok, "{era}: {err}");
        assert_eq!(out, "through\n");
        let (ok, out, err) = run(with(&["read", "demo://readme"])).await;
        assert!(ok, "{era}: {err}");
        assert_eq!(out, "This is the mcp demo server.\n\n");
        let (ok, out, err) = run(with(&["complete", "--prompt", "greet", "name", "Gr"])).await;
        assert!(ok, "{era}: {err}");
        assert_eq!(out, "Grace\n");
        // The upstream's sampling request reaches our client, which answers with the command.
        let (ok, out, err) = run(with(&[
            "call",
            "sample",
            "-a",
            "prompt=hi",
            "--sampling-cmd",
            ANSWER,
        ]))
        .await;
        assert!(ok, "{era}: {err}");
        assert_eq!(out, "bridged\n");
        // Its roots request too (the client's --root).
        let root = std::env::temp_dir();
        let canonical = std::fs::canonicalize(&root).unwrap();
        let (ok, out, err) = run(with(&["call", "roots", "--root", root.to_str().unwrap()])).await;
        assert!(ok, "{era}: {err}");
        let uri = url::Url::from_file_path(&canonical).unwrap();
        assert!(out.starts_with(&format!("{uri} ")), "{era}: {out}");
        // Its elicitation too (declined here: no terminal).
        let (ok, out, err) = run(with(&["call", "ask"])).await;
        assert!(ok, "{era}: {err}");
        assert_eq!(out, "no name given (decline)\n", "{era}");
    }
}

#[tokio::test]
async fn a_stdio_server_is_served_over_http() {
    let (_bridge, url) =
        oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0", "--", oxmcp(), "serve", "--stdio"])
            .await;
    let (ok, out, _) = mcp(&["info", "--json", &url]).await;
    assert!(ok);
    let info: Value = serde_json::from_str(&out).unwrap();
    assert!(
        info["instructions"]
            .as_str()
            .unwrap()
            .starts_with("A bridge to `"),
        "{info}"
    );
    works_through(&[&url]).await;
    // The other transports of `oxmcp serve` serve it too.
    let ws = url.replace("http://", "ws://").replace("/mcp", "/ws");
    let (ok, out, err) = mcp(&["call", &ws, "add", "-a", "a=2", "-a", "b=3"]).await;
    assert!(ok, "{err}");
    assert!(out.contains('5'), "{out}");
}

#[tokio::test]
async fn a_remote_server_is_served_on_stdio() {
    let (_upstream, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    // A host driving the bridge's stdin and stdout itself.
    let mut raw = oxmcp_tests::Raw::spawn_with(&["--upstream", &url]);
    let init = raw.initialize("2025-11-25").await;
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    let tools = raw.request(1, "tools/list", json!({})).await;
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, oxmcp_tests::DEMO_TOOLS);
    let r = raw
        .request(
            2,
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "over stdio"}}),
        )
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "over stdio", "{r}");
    raw.close().await;
    // Our own client commands, as a stdio host would run it.
    works_through(&["--", oxmcp(), "serve", "--stdio", "--upstream", &url]).await;
}

#[tokio::test]
async fn the_upstream_bearer_reaches_the_remote_server() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "s3cret alice\n").unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "s3cret\n").unwrap();
    let (_upstream, url) = oxmcp_tests::serve_http(&[
        "--listen",
        "127.0.0.1:0",
        "--auth-token-file",
        tokens.to_str().unwrap(),
    ])
    .await;
    let bridge = ["--", oxmcp(), "serve", "--stdio", "--upstream", &url];
    let mut with_token = bridge.to_vec();
    with_token.extend(["--upstream-bearer-file", token_file.to_str().unwrap()]);
    let mut args = vec!["call", "echo", r#"{"message":"authorized"}"#];
    args.extend(&with_token);
    let (ok, out, err) = mcp(&args).await;
    assert!(ok, "{err}");
    assert_eq!(out, "authorized\n");
    // Without it the upstream refuses the bridge: it has no tools to offer.
    let mut args = vec!["call", "echo", r#"{"message":"refused"}"#];
    args.extend(&bridge);
    let (ok, _, _) = mcp(&args).await;
    assert!(!ok);
}

#[tokio::test]
async fn bridges_refuse_what_they_cannot_serve() {
    let (ok, _, err) = mcp(&["serve", "--stdio", "--upstream", "ftp://example.com"]).await;
    assert!(!ok);
    assert!(err.contains("--upstream"), "{err}");
    let (ok, _, err) = mcp(&["serve", "--config", "x.toml", "--", "true"]).await;
    assert!(!ok);
    assert!(err.contains("cannot be used with"), "{err}");
}

/// Resource updates of the bridged server reach a listener of the bridge, in both eras.
#[tokio::test]
async fn resource_updates_pass_through_a_bridge() {
    let (_bridge, url) =
        oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0", "--", oxmcp(), "serve", "--stdio"])
            .await;
    for era in ERAS {
        let (child, mut lines) =
            oxmcp_tests::listen::listening(&[&url, "--era", era, "--resource", "demo://readme"])
                .await;
        // The bridge subscribes upstream on its own: wait until the server holds it.
        held_upstream(&url, era, |n| n > 0).await;
        let (ok, _, err) = mcp(&["call", &url, "touch", "-a", "uri=demo://readme"]).await;
        assert!(ok, "{era}: {err}");
        oxmcp_tests::listen::until_line(&mut lines, "updated demo://readme").await;
        oxmcp_tests::listen::interrupt(child).await;
        // Its subscription ends with it (upstream too), before the next era's listener.
        held_upstream(&url, era, |n| n == 0).await;
    }
}

/// Waits until the bridged demo server holds a number of subscriptions that `done` accepts
/// (its `subscriptions` tool, called through the bridge; at most 30 s).
async fn held_upstream(url: &str, era: &str, done: impl Fn(u64) -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (ok, out, err) = mcp(&["call", url, "subscriptions"]).await;
        assert!(ok, "{era}: {err}");
        let n: u64 = out.trim().parse().unwrap();
        if done(n) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{era}: still {n} held upstream"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// What a bridge tells its clients about itself (its `instructions`) names the program it
/// bridges, never its arguments or the secrets of a URL (where people put API keys).
#[tokio::test]
async fn a_bridge_names_the_program_not_its_arguments() {
    let secret = "sk-live-SECRET-4711";
    // `sh -c 'exec "$0" serve --stdio' MCP --api-key=SECRET`: the key is an argument.
    let key = format!("--api-key={secret}");
    let command = ["sh", "-c", r#"exec "$0" serve --stdio"#, oxmcp(), &key];
    let mut args = vec!["--listen", "127.0.0.1:0", "--"];
    args.extend(command);
    let (_bridge, url) = oxmcp_tests::serve_http(&args).await;
    let (ok, out, err) = mcp(&["info", "--json", &url]).await;
    assert!(ok, "{err}");
    let info: Value = serde_json::from_str(&out).unwrap();
    let instructions = info["instructions"].as_str().unwrap();
    assert!(!instructions.contains(secret), "{instructions}");
    assert!(!instructions.contains("exec"), "{instructions}");
    assert!(instructions.contains("`sh`"), "{instructions}");
    // A URL upstream: no credentials, query or fragment.
    let (_upstream, upstream_url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    let with_secret = upstream_url.replace("http://", &format!("http://me:{secret}@"))
        + &format!("?key={secret}#{secret}");
    let mut raw = oxmcp_tests::Raw::spawn_with(&["--upstream", &with_secret]);
    let init = raw.initialize("2025-11-25").await;
    let instructions = init["result"]["instructions"].as_str().unwrap();
    assert!(!instructions.contains(secret), "{instructions}");
    let origin = upstream_url.trim_end_matches("/mcp");
    assert!(instructions.contains(origin), "{instructions}");
    raw.close().await;
}

/// A URL whose path holds a secret (`https://host/s/SECRET/mcp`, as some hosted servers hand
/// out): the bridge names it by scheme, host and port only, to its clients (`instructions`,
/// and the errors of an upstream it cannot reach) and in its log.
#[tokio::test]
async fn a_bridge_never_shows_the_path_of_its_url() {
    let secret = "path-SECRET-4711";
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("bridge.log");
    // Nothing listens on port 1: connecting fails, and says why.
    let url = format!("http://127.0.0.1:1/s/{secret}/mcp");
    let stderr = std::fs::File::create(&log).unwrap();
    let mut raw = oxmcp_tests::Raw::spawn_logging(&["--upstream", &url], "debug", stderr);
    let init = raw.initialize("2025-11-25").await;
    let instructions = init["result"]["instructions"].as_str().unwrap();
    assert!(!instructions.contains(secret), "{instructions}");
    assert!(!instructions.contains("/s/"), "{instructions}");
    assert!(
        instructions.contains("http://127.0.0.1:1"),
        "{instructions}"
    );
    // A request that needs the upstream fails, saying why.
    let complete = json!({
        "ref": {"type": "ref/prompt", "name": "greet"},
        "argument": {"name": "name", "value": "A"}
    });
    let failed = raw.request(1, "completion/complete", complete).await;
    let error = failed["error"]["message"].as_str().unwrap();
    assert!(error.contains("127.0.0.1:1"), "{failed}");
    assert!(!error.contains(secret), "{failed}");
    raw.close().await;
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("127.0.0.1:1"), "{logged}");
    assert!(!logged.contains(secret), "{logged}");
}

/// The fields of `result` that a client of 2025-11-25 cannot know: `resultType`, the cache
/// hints, and the 2026-07-28 entries of `_meta` (the server's identity and the request's).
fn modern_only_fields(result: &Value) -> Vec<String> {
    let mut found: Vec<String> = ["resultType", "ttlMs", "cacheScope"]
        .into_iter()
        .filter(|k| result.get(k).is_some())
        .map(str::to_owned)
        .collect();
    if let Some(meta) = result.get("_meta").and_then(Value::as_object) {
        found.extend(
            meta.keys()
                .filter(|k| {
                    [
                        "serverInfo",
                        "subscriptionId",
                        "protocolVersion",
                        "clientInfo",
                    ]
                    .iter()
                    .any(|m| **k == format!("io.modelcontextprotocol/{m}"))
                })
                .map(|k| format!("_meta.{k}")),
        );
    }
    found
}

/// A 2025-11-25 client of a bridge or gateway whose upstream speaks 2026-07-28 gets results
/// of its own version: nothing the newer revision added.
#[tokio::test]
async fn legacy_clients_get_legacy_results_from_a_2026_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.toml");
    let bin = oxmcp();
    std::fs::write(
        &config,
        format!("[[upstream]]\nname = \"new\"\ncommand = [\"{bin}\", \"serve\", \"--stdio\"]\nera = \"modern\"\n"),
    )
    .unwrap();
    let bridge = [
        "--listen",
        "127.0.0.1:0",
        "--upstream-era",
        "modern",
        "--",
        oxmcp(),
        "serve",
        "--stdio",
    ];
    let gateway = [
        "--listen",
        "127.0.0.1:0",
        "--config",
        config.to_str().unwrap(),
    ];
    for (what, args, prefix, uri) in [
        ("bridge", &bridge[..], "", "demo://readme"),
        (
            "gateway",
            &gateway[..],
            "new__",
            "gateway://new/demo://readme",
        ),
    ] {
        let (_served, url) = oxmcp_tests::serve_http(args).await;
        let s = oxmcp_tests::HttpSession::open(&url, "2025-11-25").await;
        let requests = [
            json!({"method": "tools/list", "params": {}}),
            json!({"method": "tools/call", "params": {"name": format!("{prefix}echo"), "arguments": {"message": "hi"}}}),
            json!({"method": "resources/read", "params": {"uri": uri}}),
            json!({"method": "prompts/get", "params": {"name": format!("{prefix}greet"), "arguments": {"name": "Ada"}}}),
        ];
        for (id, mut request) in requests.into_iter().enumerate() {
            request["jsonrpc"] = json!("2.0");
            request["id"] = json!(id);
            let (status, messages) = s.post(request.to_string().as_bytes()).await;
            assert_eq!(status, 200, "{what}: {request}");
            let answer = messages.iter().find(|m| m["id"] == json!(id)).unwrap();
            let result = &answer["result"];
            assert!(result.is_object(), "{what}: {request} -> {answer}");
            let extra = modern_only_fields(result);
            assert!(
                extra.is_empty(),
                "{what}: {request} -> {extra:?} in {result}"
            );
        }
    }
}
