//! Requests that end before their upstream answered them (cancelled by their client, or
//! paused for a 2026-07-28 `input_required` round) must not restart the upstream: a stdio
//! server restarted loses its state and subscriptions for every client. Upstreams here are
//! `oxmcp serve --stdio` behind a shell line that counts its starts and logs its input.

use super::*;

/// A stdio upstream named `name` that appends a line to `DIR/NAME.starts` each time it
/// starts, and what it reads to `DIR/NAME.starts.in`: its `[[upstream]]` table and the
/// first file.
fn counted(dir: &std::path::Path, name: &str, era: &str) -> (String, std::path::PathBuf) {
    let log = dir.join(format!("{name}.starts"));
    let script = r#"echo started >> "$0"; tee -a "$0.in" | "$1" serve --stdio"#;
    let bin = oxmcp();
    let table = format!(
        "[[upstream]]\nname = \"{name}\"\ncommand = [\"sh\", \"-c\", {script:?}, \"{}\", \"{bin}\"]\nera = \"{era}\"\n",
        log.display()
    );
    (table, log)
}

/// How many times the upstream whose starts `log` counts has started.
fn starts(log: &std::path::Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .count()
}

/// How many `method` requests the upstream whose starts `log` counts has read.
fn sent(log: &std::path::Path, method: &str) -> usize {
    let input = format!("{}.in", log.display());
    let needle = format!("\"method\":\"{method}\"");
    std::fs::read_to_string(input)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(&needle))
        .count()
}

/// A legacy client of `url` presenting `token`.
async fn with_token(url: &str, token: &str) -> Client {
    let config = HttpClientConfig::default().headers(vec![(
        "authorization".to_owned(),
        format!("Bearer {token}"),
    )]);
    let t = oxmcp_http::client::connect(url, config).unwrap();
    Client::connect(
        t.incoming,
        t.outgoing,
        ClientHandlers::new(),
        ClientConfig::default(),
    )
    .await
    .unwrap()
}

/// Calls `local__slow` and cancels it once the upstream works on it: `None`, or the error
/// the gateway refused it with before it started.
async fn call_and_cancel(c: &Client) -> Option<oxmcp_client::CallError> {
    let (options, progress) = oxmcp_tests::first_progress();
    let call = c.call_tool_with(
        "local__slow",
        args(json!({"steps": 100, "delay_ms": 50})),
        &options,
    );
    tokio::select! {
        r = call => match r {
            Ok(r) => panic!("the call ended before it was cancelled: {r:?}"),
            Err(e) => Some(e),
        },
        () = oxmcp_tests::started(progress) => None,
    }
}

/// A gateway over one counted stdio upstream `local`, whose clients present `alice-token`
/// or `bob-token`, with `extra` settings: its folder, process, URL and start count file.
async fn alice_and_bob(
    tag: &str,
    extra: &str,
) -> (
    std::path::PathBuf,
    tokio::process::Child,
    String,
    std::path::PathBuf,
) {
    let (dir, config) = config_file(tag, "");
    let (table, log) = counted(&dir, "local", "legacy");
    let tokens = dir.join("tokens.txt");
    std::fs::write(&tokens, "alice-token alice\nbob-token bob\n").unwrap();
    std::fs::write(
        &config,
        format!(
            "{extra}\n[auth]\ntoken_file = \"{}\"\n\n{table}",
            tokens.display()
        ),
    )
    .unwrap();
    let (gateway, url) = serve_gateway(&config).await;
    (dir, gateway, url, log)
}

/// Bob's echo through the gateway works.
async fn bob_is_served(bob: &Client, round: usize) {
    let r = bob
        .call_tool("local__echo", args(json!({"message": "bob"})))
        .await
        .unwrap_or_else(|e| panic!("round {round}: Bob's call failed: {e}"));
    assert_eq!(r.content[0].as_text(), Some("bob"), "round {round}");
}

/// A client that calls a slow tool and cancels it, twenty times over, while another client
/// calls too: the upstream (one process, as for any stdio server by default) is not
/// restarted for it, and the other client is served throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_looping_call_and_cancel_never_restarts_the_upstream() {
    let (dir, _gateway, url, log) = alice_and_bob("mcp-gateway-interrupted", "").await;
    let alice = with_token(&url, "alice-token").await;
    let bob = with_token(&url, "bob-token").await;
    for round in 0..20 {
        if let Some(e) = call_and_cancel(&alice).await {
            panic!("round {round}: Alice's call was refused: {e}");
        }
        bob_is_served(&bob, round).await;
    }
    let started = starts(&log);
    assert!(
        started <= 2,
        "the upstream was started {started} times for 20 cancelled calls"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A principal that has ended its share of requests early (`max_interrupted_per_principal`)
/// is refused with -32000 and a retry hint; another principal is served all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_principal_past_its_budget_is_refused_with_a_retry_hint() {
    let (dir, _gateway, url, log) =
        alice_and_bob("mcp-gateway-budget", "max_interrupted_per_principal = 3").await;
    let alice = with_token(&url, "alice-token").await;
    let bob = with_token(&url, "bob-token").await;
    for round in 0..3 {
        if let Some(e) = call_and_cancel(&alice).await {
            panic!("round {round}: Alice's call was refused: {e}");
        }
    }
    for round in 3..6 {
        let e = call_and_cancel(&alice)
            .await
            .unwrap_or_else(|| panic!("round {round}: Alice's call ran past her budget"));
        let e = e
            .rpc()
            .unwrap_or_else(|| panic!("not a JSON-RPC error: {e}"));
        assert_eq!(e.code.0, -32000, "{e:?}");
        assert!(e.message.contains("retry in"), "{e:?}");
        let data = e.data.as_ref().unwrap();
        let wait = data["retryAfterMs"].as_u64().unwrap();
        assert!((1..=60_000).contains(&wait), "{data}");
        assert_eq!(data["transient"], true, "{data}");
        bob_is_served(&bob, round).await;
    }
    assert_eq!(starts(&log), 1, "the upstream was restarted");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A 2026-07-28 client's call that needs sampling and elicitation goes through three rounds;
/// the upstream call of each of the first two ends early. Neither a 2025-06-18 upstream
/// (whose call is cancelled) nor a 2026-07-28 one (whose round had been answered) is
/// restarted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_required_rounds_never_restart_the_upstream() {
    let (dir, config) = config_file("mcp-gateway-rounds", "");
    let (old, old_log) = counted(&dir, "old", "legacy");
    let (new, new_log) = counted(&dir, "new", "modern");
    std::fs::write(&config, format!("{old}\n{new}")).unwrap();
    let (_gateway, url) = serve_gateway(&config).await;
    let handlers = ClientHandlers::new()
        .sampling(|_| async {
            Ok(
                CreateMessageResult::new("test-model", OneOrMany::One(Content::text("fine")))
                    .with_role(Role::Assistant),
            )
        })
        .elicitation(|_| async {
            Ok(ElicitResult::cancel()
                .with_action(ElicitAction::Accept)
                .with_content(Some(args(json!({"name": "Grace"})))))
        });
    let (c, _handle) = connect(&url, handlers, EraChoice::Modern).await;
    for upstream in ["old", "new"] {
        for call in 0..3 {
            let topic = format!("{upstream}-{call}");
            let r = c
                .call_tool(
                    &format!("{upstream}__converse"),
                    args(json!({"topic": topic})),
                )
                .await
                .unwrap();
            assert_eq!(
                r.content[0].as_text(),
                Some(format!("{topic}: the model said \"fine\"; the user is Grace").as_str()),
                "{r:?}"
            );
        }
    }
    for (name, log) in [("old", old_log), ("new", new_log)] {
        assert_eq!(starts(&log), 1, "{name} was restarted");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A client that gives up on a call while the gateway asks it a 2026-07-28 upstream's
/// question: the upstream had answered that round, so nothing of the call runs there any
/// more, and its connection is lent again at once (not quarantined: no `ping` goes to it),
/// also while a request of the gateway's own stays open on it (a subscription).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_given_up_between_rounds_needs_no_quarantine() {
    let (dir, config) = config_file("mcp-gateway-between-rounds", "");
    let (new, log) = counted(&dir, "new", "modern");
    // No heartbeat during the test: a quarantine's ping is then the only one.
    std::fs::write(&config, format!("heartbeat_ms = 600000\n{new}")).unwrap();
    let (_gateway, url) = serve_gateway(&config).await;
    let other = client(&url, EraChoice::Legacy).await;
    until(&other, "the upstream is up", |n| {
        n.iter().any(|t| t == "new__converse")
    })
    .await;
    other
        .subscribe("gateway://new/demo://readme")
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while sent(&log, "subscriptions/listen") == 0 {
        assert!(Instant::now() < deadline, "never subscribed upstream");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pings = sent(&log, "server/discover");
    // Asked for sampling, the client never answers; the call is dropped then.
    let (asked, question) = tokio::sync::oneshot::channel::<()>();
    let asked = std::sync::Mutex::new(Some(asked));
    let handlers = ClientHandlers::new().sampling(move |_| {
        if let Some(tx) = asked.lock().unwrap().take() {
            let _ = tx.send(());
        }
        std::future::pending()
    });
    let (quitter, _handle) = connect(&url, handlers, EraChoice::Legacy).await;
    let call = quitter.call_tool("new__converse", args(json!({"topic": "quit"})));
    tokio::select! {
        r = call => panic!("the call ended before its question: {r:?}"),
        r = question => r.unwrap(),
    }
    // The next call gets the connection once the quitter's is given back (or quarantined).
    let r = other
        .call_tool("new__echo", args(json!({"message": "next"})))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("next"));
    assert_eq!(
        sent(&log, "server/discover"),
        pings,
        "the connection was quarantined"
    );
    assert_eq!(starts(&log), 1, "the upstream was restarted");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A stdio server (handshake era) that logs its starts to the file `$1`, reports progress on
/// each call that asks for it, answers `wait` after 0.2 s, never answers `stubborn`, and
/// stops reading anything once a call is cancelled (so a `ping` gets no answer).
const DEAF_AFTER_CANCEL: &str = r#"echo started >> "$1"
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/^{"jsonrpc":"2.0","id":\([0-9][0-9]*\),.*/\1/p')
  token=$(printf '%s' "$line" | sed -n 's/.*"progressToken":\([0-9][0-9]*\).*/\1/p')
  if [ -n "$token" ]; then
    echo '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":'"$token"',"progress":1}}'
  fi
  case "$line" in
    *'"method":"initialize"'*)
      echo '{"jsonrpc":"2.0","id":'"$id"',"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"deaf","version":"0"}}}' ;;
    *'"method":"tools/list"'*)
      echo '{"jsonrpc":"2.0","id":'"$id"',"result":{"tools":[{"name":"stubborn","inputSchema":{"type":"object"}},{"name":"wait","inputSchema":{"type":"object"}}]}}' ;;
    *'"method":"ping"'*)
      echo '{"jsonrpc":"2.0","id":'"$id"',"result":{}}' ;;
    *'"method":"tools/call"'*'"name":"wait"'*)
      (sleep 0.2; echo '{"jsonrpc":"2.0","id":'"$id"',"result":{"content":[{"type":"text","text":"waited"}]}}') & ;;
    *'"method":"notifications/cancelled"'*)
      exec sleep 600 ;;
  esac
done
"#;

/// An upstream that stops answering after a call is cancelled fails the quarantine's `ping`:
/// its connection is replaced (the server restarted, once), and the next call is served by
/// the new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_stops_answering_after_a_cancellation_is_replaced() {
    let (dir, config) = config_file("mcp-gateway-deaf", "");
    let script = dir.join("deaf.sh");
    std::fs::write(&script, DEAF_AFTER_CANCEL).unwrap();
    let log = dir.join("deaf.starts");
    // No heartbeat during the test: only the quarantine finds the server deaf.
    std::fs::write(
        &config,
        format!(
            "heartbeat_ms = 600000\n[[upstream]]\nname = \"deaf\"\ncommand = [\"sh\", \"{}\", \"{}\"]\nera = \"legacy\"\n",
            script.display(),
            log.display()
        ),
    )
    .unwrap();
    let (_gateway, url) = serve_gateway(&config).await;
    let c = client(&url, EraChoice::Legacy).await;
    until(&c, "the upstream is up", |n| {
        n.iter().any(|t| t == "deaf__wait")
    })
    .await;
    let (options, progress) = oxmcp_tests::first_progress();
    let call = c.call_tool_with("deaf__stubborn", JsonObject::new(), &options);
    oxmcp_tests::cancel_once_started(call, progress).await;
    let r = tokio::time::timeout(
        Duration::from_secs(60),
        c.call_tool("deaf__wait", JsonObject::new()),
    )
    .await
    .expect("the next call was served")
    .unwrap();
    assert_eq!(r.content[0].as_text(), Some("waited"));
    assert_eq!(starts(&log), 2, "restarted once");
    let _ = std::fs::remove_dir_all(&dir);
}
