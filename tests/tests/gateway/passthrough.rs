//! The gateway's basic behaviour: naming, routing, failover, and everything passed through.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_over_a_stdio_and_an_http_upstream() {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let (upstream, upstream_url) = oxmcp_tests::serve_http(&["--listen", &listen]).await;
    let bin = oxmcp();
    let (dir, config) = config_file(
        "mcp-gateway",
        &format!(
            r#"heartbeat_ms = 200

[[upstream]]
name = "local"
command = ["{bin}", "serve", "--stdio"]
deny_tools = ["fail"]

[[upstream]]
name = "remote"
url = "{upstream_url}"
allow_tools = ["echo", "slow"]
"#
        ),
    );
    let (_gateway, url) = serve_gateway(&config).await;

    let legacy = client(&url, EraChoice::Legacy).await;
    let modern = client(&url, EraChoice::Modern).await;
    assert!(modern.is_modern());
    let all = names(&legacy).await;
    assert_eq!(
        all,
        [
            "local__add",
            "local__ask",
            "local__cd",
            "local__converse",
            "local__echo",
            "local__log",
            "local__ls",
            "local__note",
            "local__notes",
            "local__pwd",
            "local__roots",
            "local__sample",
            "local__slow",
            "local__subscriptions",
            "local__touch",
            "remote__echo",
            "remote__slow"
        ],
        "collision-free names, allow and deny lists applied"
    );
    for c in [&legacy, &modern] {
        for tool in ["local__echo", "remote__echo"] {
            let r = c
                .call_tool(tool, args(json!({"message": tool})))
                .await
                .unwrap();
            assert_eq!(r.content[0].as_text(), Some(tool));
        }
    }
    // Progress from the upstream reaches the downstream client.
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    let options = RequestOptions::default().on_progress(move |_| {
        s.fetch_add(1, Ordering::SeqCst);
    });
    let r = legacy
        .call_tool_with(
            "remote__slow",
            args(json!({"steps": 3, "delay_ms": 20})),
            &options,
        )
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("done after 3 steps"));
    assert_eq!(
        seen.load(Ordering::SeqCst),
        3,
        "three progress notifications"
    );
    // Upstream errors come back as they are.
    let e = legacy
        .call_tool("remote__echo", args(json!({"nope": 1})))
        .await
        .unwrap();
    assert!(e.failed(), "schema violation is a tool error");

    // The HTTP upstream goes down: its tools leave the list, the others stay and work.
    drop(upstream);
    let left = until(&legacy, "remote tools removed", |n| {
        !n.iter().any(|t| t.starts_with("remote__"))
    })
    .await;
    assert_eq!(left.len(), 15);
    let r = modern
        .call_tool("local__echo", args(json!({"message": "still here"})))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("still here"));
    // It comes back on the same address: so do its tools.
    let (_upstream, _) = oxmcp_tests::serve_http(&["--listen", &listen]).await;
    until(&legacy, "remote tools back", |n| n.len() == 17).await;
    let r = legacy
        .call_tool("remote__echo", args(json!({"message": "back"})))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("back"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_configs_are_refused_with_a_clear_message() {
    let dir = std::env::temp_dir().join(format!("mcp-gateway-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (text, want) in [
        (
            "[[upstream]]\nname = \"a__b\"\ncommand = [\"x\"]\n",
            "upstream name",
        ),
        ("[[upstream]]\nname = \"a\"\n", "exactly one of"),
        (
            "[[upstream]]\nname = \"a\"\ncommand = [\"x\"]\n[[upstream]]\nname = \"a\"\ncommand = [\"y\"]\n",
            "used twice",
        ),
        (
            "[[upstream]]\nname = \"a\"\ncommand = [\"x\"]\nsurprise = 1\n",
            "unknown field",
        ),
        (
            "[[upstream]]\nname = \"a\"\nurl = \"http://127.0.0.1:1/mcp\"\nenv = { A = \"1\" }\n",
            "`env` is for `command` upstreams",
        ),
        (
            "[[upstream]]\nname = \"a_\"\ncommand = [\"x\"]\n",
            "upstream name",
        ),
        (
            "[[upstream]]\nname = \"a\"\ncommand = [\"x\"]\nmax_connections = 0\n",
            "max_connections is 1 to 64",
        ),
    ] {
        let path = dir.join("bad.toml");
        std::fs::write(&path, text).unwrap();
        let out = std::process::Command::new(oxmcp())
            .args(["serve", "--stdio", "--config", path.to_str().unwrap()])
            .env("MCP_LOG", "off")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{want}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_passes_everything_else_through() {
    let (_upstream, upstream_url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    // `local` speaks the handshake era (its requests to us are server-to-client requests),
    // `remote` 2026-07-28 (its requests come as input_required results).
    let bin = oxmcp();
    let (dir, config) = config_file(
        "mcp-gateway-all",
        &format!(
            r#"[[upstream]]
name = "local"
command = ["{bin}", "serve", "--stdio"]
era = "legacy"

[[upstream]]
name = "remote"
url = "{upstream_url}"
era = "modern"
"#
        ),
    );
    let (_gateway, url) = serve_gateway(&config).await;
    let (legacy, legacy_events) = answering_client(&url, EraChoice::Legacy).await;
    let (modern, _) = answering_client(&url, EraChoice::Modern).await;
    assert!(modern.is_modern() && !legacy.is_modern());

    for c in [&legacy, &modern] {
        // Prompts: listed under UPSTREAM__NAME, got from their upstream.
        let prompts = c.list_prompts(None).await.unwrap().prompts;
        let mut names: Vec<_> = prompts.iter().map(|p| p.name.as_str()).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "local__greet",
                "local__summarize",
                "remote__greet",
                "remote__summarize"
            ]
        );
        let p = c
            .get_prompt(
                "remote__greet",
                [("name".to_owned(), "Ada".to_owned())].into(),
            )
            .await
            .unwrap();
        let text = serde_json::to_value(&p.messages[0].content).unwrap();
        assert_eq!(text["text"], "Please greet Ada warmly.");
        // Resources and templates: under gateway://UPSTREAM/, read from their upstream.
        let resources = c.list_resources(None).await.unwrap().resources;
        let uris: Vec<_> = resources.iter().map(|r| r.uri.as_str()).collect();
        assert!(uris.contains(&"gateway://local/demo://readme"), "{uris:?}");
        assert!(uris.contains(&"gateway://remote/demo://readme"), "{uris:?}");
        assert_eq!(uris.len(), 6, "{uris:?}");
        let r = c
            .read_resource("gateway://local/demo://readme")
            .await
            .unwrap();
        assert_eq!(r.contents[0].uri, "gateway://local/demo://readme");
        assert_eq!(
            r.contents[0].text.as_deref(),
            Some("This is the mcp demo server.\n")
        );
        let templates = c
            .list_resource_templates(None)
            .await
            .unwrap()
            .resource_templates;
        let t: Vec<_> = templates.iter().map(|t| t.uri_template.as_str()).collect();
        assert!(
            t.contains(&"gateway://remote/demo://greeting/{name}"),
            "{t:?}"
        );
        let r = c
            .read_resource("gateway://remote/demo://greeting/Ada")
            .await
            .unwrap();
        assert_eq!(r.contents[0].text.as_deref(), Some("Hello, Ada!"));
        // Completion is asked of the upstream.
        let done = c
            .complete(&CompleteParams::new(
                CompletionReference::Prompt {
                    name: "local__greet".into(),
                },
                CompletionArgument::default()
                    .with_name("name".into())
                    .with_value("A".into()),
            ))
            .await
            .unwrap();
        assert_eq!(done.completion.values, ["Ada", "Alan"]);
        // Sampling and elicitation from both upstreams reach this client.
        for upstream in ["local", "remote"] {
            let r = c
                .call_tool(
                    &format!("{upstream}__sample"),
                    args(json!({"prompt": "hi"})),
                )
                .await
                .unwrap();
            assert_eq!(
                r.content[0].as_text(),
                Some("model says: hi"),
                "sampling from {upstream}, modern client: {}",
                c.is_modern()
            );
            let r = c
                .call_tool(&format!("{upstream}__ask"), JsonObject::new())
                .await
                .unwrap();
            assert_eq!(r.content[0].as_text(), Some("Hello, Grace!"), "{upstream}");
        }
    }

    // Log messages from an upstream tool reach the client, named after the upstream.
    legacy.set_log_level(LoggingLevel::Debug).await.unwrap();
    legacy
        .call_tool(
            "local__log",
            args(json!({"message": "via gateway", "level": "debug"})),
        )
        .await
        .unwrap();
    let log = seen(
        &legacy_events,
        "the log message",
        |e| matches!(e, ServerEvent::Log(p) if p.data == json!("via gateway")),
    )
    .await;
    let ServerEvent::Log(log) = log else {
        unreachable!()
    };
    assert_eq!(log.logger.as_deref(), Some("local/demo"));
    assert_eq!(log.level, LoggingLevel::Debug);

    // Resource updates: a subscription through the gateway is made upstream too.
    legacy
        .subscribe("gateway://local/demo://readme")
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        legacy
            .call_tool("local__touch", args(json!({"uri": "demo://readme"})))
            .await
            .unwrap();
        let updated = legacy_events.lock().unwrap().iter().any(|e| {
            matches!(e, ServerEvent::ResourceUpdated(u) if u == "gateway://local/demo://readme")
        });
        if updated {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no resources/updated came through"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Cancellation: dropping the call cancels it at the gateway, which cancels it upstream;
    // the upstream tool notices and says so in a log message.
    let (options, progress) = oxmcp_tests::first_progress();
    let call = legacy.call_tool_with(
        "local__slow",
        args(json!({"steps": 100, "delay_ms": 50})),
        &options,
    );
    oxmcp_tests::cancel_once_started(call, progress).await;
    let log = seen(&legacy_events, "the upstream's cancellation", |e| {
        matches!(e, ServerEvent::Log(p) if p.data.as_str().is_some_and(|s| s.starts_with("slow: cancelled after step")))
    })
    .await;
    let ServerEvent::Log(log) = log else {
        unreachable!()
    };
    assert_eq!(log.logger.as_deref(), Some("local/demo"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_over_stdio() {
    let bin = oxmcp();
    let (dir, config) = config_file(
        "mcp-gateway-stdio",
        &format!(
            r#"[[upstream]]
name = "local"
command = ["{bin}", "serve", "--stdio"]
allow_tools = ["echo"]
"#
        ),
    );
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let c = Client::spawn(
            oxmcp(),
            &["serve", "--config", config.to_str().unwrap(), "--stdio"],
            ClientHandlers::new(),
            ClientConfig::default().era(era),
        )
        .await
        .unwrap();
        assert_eq!(names(&c).await, ["local__echo"]);
        let r = c
            .call_tool("local__echo", args(json!({"message": "over stdio"})))
            .await
            .unwrap();
        assert_eq!(r.content[0].as_text(), Some("over stdio"));
        c.close().await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}
