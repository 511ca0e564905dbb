//! Two clients of the gateway call the same upstream tool at once; the tool logs, asks for
//! sampling and elicitation, and logs again, all naming the caller's topic. Each client must
//! see only its own requests and log messages, and get the answer made from its own replies
//! (the class of CVE-2026-25536: one client's traffic reaching another).

use super::*;

/// What one client was asked and told, as lines (`sampling: ...`, `elicitation: ...`,
/// `log: ...`).
type Seen = Arc<std::sync::Mutex<Vec<String>>>;

/// A client named `me`: it answers sampling with "`me` says: PROMPT", elicitation with the
/// name `me`, and records everything.
async fn talker(url: &str, era: EraChoice, me: &'static str) -> (Client, Seen) {
    let seen: Seen = Arc::default();
    let (s, e, l) = (seen.clone(), seen.clone(), seen.clone());
    let handlers = ClientHandlers::new()
        .sampling(move |p| {
            let prompt = serde_json::to_value(&p.messages[0].content).unwrap()["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            s.lock().unwrap().push(format!("sampling: {prompt}"));
            async move {
                Ok(CreateMessageResult::new(
                    "test-model",
                    OneOrMany::One(Content::text(format!("{me} says: {prompt}"))),
                )
                .with_role(Role::Assistant))
            }
        })
        .elicitation(move |p| {
            e.lock()
                .unwrap()
                .push(format!("elicitation: {}", p.message));
            async move {
                Ok(ElicitResult::cancel()
                    .with_action(ElicitAction::Accept)
                    .with_content(Some(args(json!({ "name": me })))))
            }
        })
        .on_event(move |ev| {
            if let ServerEvent::Log(p) = ev {
                let text = p.data.as_str().unwrap_or_default().to_owned();
                l.lock().unwrap().push(format!("log: {text}"));
            }
        });
    let (c, _handle) = connect(url, handlers, era).await;
    c.set_log_level(LoggingLevel::Debug).await.unwrap();
    (c, seen)
}

/// Checks that `who` saw only its own topic, all of it, and got its own answer.
fn only_its_own(who: &str, topic: &str, seen: &Seen, result: &str) {
    let seen = seen.lock().unwrap().clone();
    for line in &seen {
        assert!(
            line.contains(topic),
            "{who} saw another client's traffic: {line:?} (all: {seen:?})"
        );
    }
    for want in [
        format!("log: {topic}: starting"),
        format!("sampling: {topic}"),
        format!("elicitation: {topic}: what is your name?"),
        format!("log: {topic}: done"),
    ] {
        assert!(seen.contains(&want), "{who} never saw {want:?}: {seen:?}");
    }
    assert_eq!(
        result,
        format!("{topic}: the model said \"{who} says: {topic}\"; the user is {who}"),
        "{who}'s answer is made of its own replies"
    );
}

/// Calls `tool` (a gateway `converse`) about `topic`: its text.
async fn converse(c: &Client, tool: &str, topic: &str) -> String {
    let arguments = args(json!({ "topic": topic, "delay_ms": 300 }));
    let r = c.call_tool(tool, arguments).await.unwrap();
    assert!(!r.failed(), "{r:?}");
    r.content[0].as_text().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_clients_never_see_each_others_traffic() {
    let (_upstream, upstream_url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    // The handshake era over stdio and over HTTP (server-to-client requests and session log
    // messages, which cannot say which call they are about), and 2026-07-28 over stdio (its
    // log messages cannot either).
    let bin = oxmcp();
    let (dir, config) = config_file(
        "mcp-gateway-isolation",
        &format!(
            r#"[[upstream]]
name = "local"
command = ["{bin}", "serve", "--stdio"]
era = "legacy"
max_connections = 4

[[upstream]]
name = "remote"
url = "{upstream_url}"
era = "legacy"

[[upstream]]
name = "newer"
command = ["{bin}", "serve", "--stdio"]
era = "modern"
max_connections = 4
"#
        ),
    );
    let (_gateway, url) = serve_gateway(&config).await;
    for upstream in ["local", "remote", "newer"] {
        let (ada, ada_seen) = talker(&url, EraChoice::Legacy, "Ada").await;
        let (bob, bob_seen) = talker(&url, EraChoice::Modern, "Bob").await;
        let tool = format!("{upstream}__converse");
        let ada_topic = format!("{upstream}-topic-of-Ada");
        let bob_topic = format!("{upstream}-topic-of-Bob");
        let (a, b) = tokio::join!(
            converse(&ada, &tool, &ada_topic),
            converse(&bob, &tool, &bob_topic)
        );
        // Log messages are passed on before the answer: all are in by now.
        only_its_own("Ada", &ada_topic, &ada_seen, &a);
        only_its_own("Bob", &bob_topic, &bob_seen, &b);
        ada.close().await;
        bob.close().await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A client of the gateway that records the log messages it gets.
async fn listener(url: &str) -> (Client, Seen) {
    let seen: Seen = Arc::default();
    let sink = seen.clone();
    let handlers = ClientHandlers::new().on_event(move |ev| {
        if let ServerEvent::Log(p) = ev {
            let text = p.data.as_str().unwrap_or_default().to_owned();
            sink.lock().unwrap().push(text);
        }
    });
    let (c, _handle) = connect(url, handlers, EraChoice::Legacy).await;
    c.set_log_level(LoggingLevel::Debug).await.unwrap();
    (c, seen)
}

/// A gateway to one local legacy `oxmcp serve --stdio` upstream with `max_connections`: its
/// folder, its process and its URL.
async fn local_gateway(
    tag: &str,
    max_connections: u32,
) -> (std::path::PathBuf, tokio::process::Child, String) {
    let bin = oxmcp();
    let (dir, config) = config_file(
        tag,
        &format!(
            r#"[[upstream]]
name = "local"
command = ["{bin}", "serve", "--stdio"]
era = "legacy"
max_connections = {max_connections}
"#
        ),
    );
    let (gateway, url) = serve_gateway(&config).await;
    (dir, gateway, url)
}

/// A request cancelled by its client: what the upstream still says about it (here, the demo's
/// "slow: cancelled after step N") goes to that client, never to the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_requests_last_words_stay_with_its_client() {
    let (dir, _gateway, url) = local_gateway("mcp-gateway-cancelled", 4).await;
    let (ada, ada_seen) = listener(&url).await;
    let (_bob, bob_seen) = listener(&url).await;
    let (options, progress) = oxmcp_tests::first_progress();
    let call = ada.call_tool_with(
        "local__slow",
        args(json!({"steps": 100, "delay_ms": 50})),
        &options,
    );
    oxmcp_tests::cancel_once_started(call, progress).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ada_seen
        .lock()
        .unwrap()
        .iter()
        .any(|l| l.starts_with("slow: cancelled after step"))
    {
        assert!(
            Instant::now() < deadline,
            "Ada never heard of her cancelled call"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Whatever reached Bob got there by now (same upstream, same queue).
    ada.call_tool("local__echo", args(json!({"message": "flush"})))
        .await
        .unwrap();
    let bob_seen = bob_seen.lock().unwrap().clone();
    assert!(bob_seen.is_empty(), "Bob got Ada's traffic: {bob_seen:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `max_connections = 1`: requests take turns on the one connection (and stay apart); one
/// waiting for its turn can be cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_connection_serves_requests_one_at_a_time() {
    let (dir, _gateway, url) = local_gateway("mcp-gateway-one", 1).await;
    let (ada, ada_seen) = talker(&url, EraChoice::Legacy, "Ada").await;
    let (bob, bob_seen) = talker(&url, EraChoice::Legacy, "Bob").await;
    // Ada's slow call holds the connection from its first progress on.
    let (options, started) = oxmcp_tests::first_progress();
    let slow = ada.call_tool_with(
        "local__slow",
        args(json!({"steps": 10, "delay_ms": 100})),
        &options,
    );
    let waiting = async {
        oxmcp_tests::started(started).await;
        // Bob waits for his turn, and gives up. (That his call does not run shows only as
        // time passing: 300 ms, while Ada's call has about 900 ms to go.)
        let echo = bob.call_tool("local__echo", args(json!({"message": "bob"})));
        assert!(
            tokio::time::timeout(Duration::from_millis(300), echo)
                .await
                .is_err(),
            "Bob's call ran while Ada's held the only connection"
        );
    };
    let (r, ()) = tokio::join!(slow, waiting);
    assert_eq!(r.unwrap().content[0].as_text(), Some("done after 10 steps"));
    // Then both converse at once, one after the other, each with its own replies.
    let ada_topic = "one-topic-of-Ada";
    let bob_topic = "one-topic-of-Bob";
    let (a, b) = tokio::join!(
        converse(&ada, "local__converse", ada_topic),
        converse(&bob, "local__converse", bob_topic)
    );
    only_its_own("Ada", ada_topic, &ada_seen, &a);
    only_its_own("Bob", bob_topic, &bob_seen, &b);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A stdio server (handshake era) whose `stubborn` tool never answers and, 1.5 s after its
/// call is cancelled, asks the client something about it (an elicitation about that call); its
/// `wait` tool answers after 3 s. It reports progress on each call (when asked to), so that
/// the test knows the call reached it.
const LATE_ASKER: &str = r#"while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/^{"jsonrpc":"2.0","id":\([0-9][0-9]*\),.*/\1/p')
  token=$(printf '%s' "$line" | sed -n 's/.*"progressToken":\([0-9][0-9]*\).*/\1/p')
  if [ -n "$token" ]; then
    echo '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":'"$token"',"progress":1}}'
  fi
  case "$line" in
    *'"method":"initialize"'*)
      echo '{"jsonrpc":"2.0","id":'"$id"',"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"late","version":"0"}}}' ;;
    *'"method":"tools/list"'*)
      echo '{"jsonrpc":"2.0","id":'"$id"',"result":{"tools":[{"name":"stubborn","inputSchema":{"type":"object"}},{"name":"wait","inputSchema":{"type":"object"}}]}}' ;;
    *'"method":"ping"'*)
      echo '{"jsonrpc":"2.0","id":'"$id"',"result":{}}' ;;
    *'"method":"tools/call"'*'"name":"wait"'*)
      (sleep 3; echo '{"jsonrpc":"2.0","id":'"$id"',"result":{"content":[{"type":"text","text":"waited"}]}}') & ;;
    *'"method":"notifications/cancelled"'*)
      (sleep 1.5; echo '{"jsonrpc":"2.0","id":"late","method":"elicitation/create","params":{"message":"the secret of the cancelled call","requestedSchema":{"type":"object","properties":{}}}}') & ;;
  esac
done
"#;

/// `late__wait`, once it reached the upstream: its answer.
async fn wait_started(c: &Client) -> impl std::future::Future<Output = String> + '_ {
    let (options, progress) = oxmcp_tests::first_progress();
    let call = Box::pin(async move {
        let r = c
            .call_tool_with("late__wait", JsonObject::new(), &options)
            .await;
        r.unwrap().content[0].as_text().unwrap().to_owned()
    });
    let mut call = call;
    tokio::select! {
        r = &mut call => panic!("the call ended before it started: {r}"),
        () = oxmcp_tests::started(progress) => {}
    }
    call
}

/// A request cancelled while the upstream still works on it: what the upstream asks about it
/// later must not reach the client whose request gets that connection next, whether it was the
/// supervised connection (one connection) or an extra one (two; the supervised one busy).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_requests_late_questions_never_reach_the_next_client() {
    for max_connections in [2, 1] {
        let (dir, config) = config_file(&format!("mcp-gateway-late-{max_connections}"), "");
        let script = dir.join("late.sh");
        std::fs::write(&script, LATE_ASKER).unwrap();
        std::fs::write(
            &config,
            format!(
                "[[upstream]]\nname = \"late\"\ncommand = [\"sh\", \"{}\"]\nera = \"legacy\"\nmax_connections = {max_connections}\n",
                script.display()
            ),
        )
        .unwrap();
        let (_gateway, url) = serve_gateway(&config).await;
        let (ada, _) = talker(&url, EraChoice::Legacy, "Ada").await;
        let (bob, bob_seen) = talker(&url, EraChoice::Legacy, "Bob").await;
        let (carol, carol_seen) = talker(&url, EraChoice::Legacy, "Carol").await;
        // With two connections, Carol's call holds the supervised one.
        let carols = match max_connections {
            1 => None,
            _ => Some(wait_started(&carol).await),
        };
        // Ada's call reaches the upstream, and she gives up on it.
        let (options, progress) = oxmcp_tests::first_progress();
        let call = ada.call_tool_with("late__stubborn", JsonObject::new(), &options);
        oxmcp_tests::cancel_once_started(call, progress).await;
        // Bob's call comes next, and runs while the late question comes.
        let bobs = bob.call_tool("late__wait", JsonObject::new());
        let (r, c) = tokio::join!(bobs, async {
            match carols {
                Some(c) => Some(c.await),
                None => None,
            }
        });
        assert_eq!(r.unwrap().content[0].as_text(), Some("waited"));
        assert!(c.is_none_or(|c| c == "waited"));
        for (who, seen) in [("Bob", bob_seen), ("Carol", carol_seen)] {
            let seen = seen.lock().unwrap().clone();
            assert!(
                seen.is_empty(),
                "{max_connections} connection(s): {who} got what was asked about Ada's call: {seen:?}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
