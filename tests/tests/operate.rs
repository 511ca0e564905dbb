//! What operators run `oxmcp serve` with, against the real binary: `/metrics` (calls, errors
//! and histograms with bounded labels), `/healthz` and `/readyz` (Redis down and back,
//! draining after SIGTERM), and the middleware flags: rate limits over stdio and HTTP, tool
//! deadlines, the audit log.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use oxmcp_tests::{HttpSession, code};

/// The body of `GET base + path`, with its status.
async fn get(base: &str, path: &str) -> (u16, String) {
    let r = reqwest::Client::new()
        .get(format!("{base}{path}"))
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

/// `http://127.0.0.1:PORT` of an endpoint URL.
fn base(url: &str) -> String {
    url.trim_end_matches("/mcp").to_owned()
}

/// A `tools/call` in `s`; the one answer.
async fn call(s: &HttpSession, id: u64, tool: &str, arguments: Value) -> Value {
    let body = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":arguments}});
    let (status, mut m) = s.post(body.to_string().as_bytes()).await;
    assert_eq!(status, 200, "{m:?}");
    m.remove(0)
}

/// The value of the one sample of `metric` whose labels contain every `label="value"` of
/// `labels` (`None`: no such sample).
fn sample(text: &str, metric: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| l.starts_with(metric) && l[metric.len()..].starts_with(['{', ' ']))
        .find(|l| labels.iter().all(|want| l.contains(want)))
        .and_then(|l| l.rsplit(' ').next())
        .map(|v| v.parse().unwrap())
}

/// The operation series: the `_count` lines of the duration histogram.
fn series(text: &str) -> usize {
    text.lines()
        .filter(|l| l.starts_with("mcp_server_operation_duration_seconds_count{"))
        .count()
}

#[tokio::test]
async fn metrics_count_calls_and_errors_with_bounded_labels() {
    let (_server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    let s = HttpSession::open(&url, "2025-11-25").await;
    for id in 0..3 {
        let r = call(&s, id, "echo", json!({"message": "secret-argument-7"})).await;
        assert_eq!(r["result"]["content"][0]["text"], "secret-argument-7");
    }
    // Three reads of a template's resources, two URIs: one series, the template's.
    for (id, name) in [(20, "ann"), (21, "bob"), (22, "ann")] {
        let body = json!({"jsonrpc":"2.0","id":id,"method":"resources/read",
                          "params":{"uri":format!("demo://greeting/{name}")}});
        let (_, m) = s.post(body.to_string().as_bytes()).await;
        assert!(m[0]["result"]["contents"].is_array(), "{m:?}");
    }
    let r = call(&s, 10, "fail", json!({})).await;
    assert_eq!(r["result"]["isError"], true);
    let r = call(&s, 11, "no-such-tool-0", json!({})).await;
    assert_eq!(code(&r), -32602, "{r}");
    // A task that completes.
    let body = json!({"jsonrpc":"2.0","id":12,"method":"tools/call","params":{
        "name":"slow","arguments":{"steps":1,"delay_ms":10},"task":{"ttl":60000}}});
    let (_, m) = s.post(body.to_string().as_bytes()).await;
    let task = m[0]["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let get = json!({"jsonrpc":"2.0","id":13,"method":"tasks/get","params":{"taskId":task}});
        let (_, m) = s.post(get.to_string().as_bytes()).await;
        if m[0]["result"]["status"] == "completed" {
            break;
        }
        assert!(Instant::now() < deadline, "the task completes: {m:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (status, before) = get(&base(&url), "/metrics").await;
    assert_eq!(status, 200);
    let count = "mcp_server_operation_duration_seconds_count";
    let echo = [
        r#"mcp_method_name="tools/call""#,
        r#"gen_ai_tool_name="echo""#,
        r#"error_type="""#,
    ];
    assert_eq!(sample(&before, count, &echo), Some(3.0), "{before}");
    let fail = [r#"gen_ai_tool_name="fail""#, r#"error_type="tool_error""#];
    assert_eq!(sample(&before, count, &fail), Some(1.0), "{before}");
    let unknown = [r#"gen_ai_tool_name="_other""#, r#"error_type="-32602""#];
    assert_eq!(sample(&before, count, &unknown), Some(1.0), "{before}");
    let template = [r#"mcp_resource_uri="demo://greeting/{name}""#];
    assert_eq!(sample(&before, count, &template), Some(3.0), "{before}");
    assert!(!before.contains("demo://greeting/ann"), "{before}");
    assert!(before.contains("# TYPE mcp_server_operation_duration_seconds histogram"));
    let bucket = "mcp_server_operation_duration_seconds_bucket";
    assert!(
        sample(
            &before,
            bucket,
            &[r#"gen_ai_tool_name="echo""#, r#"le="+Inf""#]
        ) == Some(3.0),
        "{before}"
    );
    assert_eq!(
        sample(&before, "mcp_server_sessions", &[]),
        Some(1.0),
        "{before}"
    );
    assert!(
        sample(&before, "oxmcp_open", &[r#"transport="connection""#]).is_some(),
        "{before}"
    );
    let ended = "mcp_server_tasks_ended_total";
    assert_eq!(
        sample(&before, ended, &[r#"status="completed""#]),
        Some(1.0),
        "{before}"
    );
    assert_eq!(
        sample(&before, "mcp_server_tasks_running", &[]),
        Some(0.0),
        "{before}"
    );
    assert!(
        !before.contains("secret-argument-7"),
        "never an argument or a result"
    );

    // 10,000 calls of unknown tools add no series (2025-03-26 takes them in batches).
    let batches = HttpSession::open(&url, "2025-03-26").await;
    // Batches of 50, the default --max-batch.
    for batch in 0..200u64 {
        let calls: Vec<Value> = (0..50u64)
            .map(|i| {
                let n = batch * 50 + i;
                json!({"jsonrpc":"2.0","id":n + 100,"method":"tools/call",
                       "params":{"name":format!("no-such-tool-{n}"),"arguments":{}}})
            })
            .collect();
        let (status, answers) = batches
            .post(Value::from(calls).to_string().as_bytes())
            .await;
        assert_eq!(status, 200);
        let answers = match &answers[..] {
            [Value::Array(a)] => a.clone(),
            other => other.to_vec(),
        };
        assert_eq!(answers.len(), 50);
        assert!(
            answers.iter().all(|r| code(r) == -32602),
            "{:.300}",
            answers[0]
        );
    }
    let (_, after) = get(&base(&url), "/metrics").await;
    assert_eq!(series(&after), series(&before), "{after}");
    assert_eq!(sample(&after, count, &unknown), Some(10_001.0), "{after}");
    assert!(
        !after.contains("no-such-tool"),
        "unknown names are not labels"
    );
}

#[tokio::test]
async fn parked_sessions_are_counted_as_sessions() {
    let (_server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    // Sessions that only did their handshake are parked at once: no engine connection runs
    // for them, and they are still sessions.
    let a = HttpSession::open(&url, "2025-11-25").await;
    let _b = HttpSession::open(&url, "2025-11-25").await;
    let parked = "oxmcp_http_sessions_parked";
    let mut text = String::new();
    // (A parked session's engine may still be ending for a moment: counted twice then.)
    for _ in 0..50 {
        text = get(&base(&url), "/metrics").await.1;
        let sessions = sample(&text, "mcp_server_sessions", &[]);
        if sample(&text, parked, &[]) == Some(2.0) && sessions == Some(2.0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(sample(&text, parked, &[]), Some(2.0), "{text}");
    assert_eq!(
        sample(&text, "mcp_server_sessions", &[]),
        Some(2.0),
        "{text}"
    );
    // A call starts one again: one parked, two sessions still.
    let r = call(&a, 1, "echo", json!({"message": "hi"})).await;
    assert_eq!(r["result"]["content"][0]["text"], "hi", "{r}");
    let (_, text) = get(&base(&url), "/metrics").await;
    assert_eq!(sample(&text, parked, &[]), Some(1.0), "{text}");
    assert_eq!(
        sample(&text, "mcp_server_sessions", &[]),
        Some(2.0),
        "{text}"
    );
}

#[tokio::test]
async fn metrics_can_have_a_listener_of_their_own() {
    let port = oxmcp_tests::scale::free_port();
    let addr = format!("127.0.0.1:{port}");
    let (_server, url) =
        oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0", "--metrics-listen", &addr]).await;
    let s = HttpSession::open(&url, "2025-11-25").await;
    call(&s, 1, "echo", json!({"message": "hi"})).await;
    let own = format!("http://{addr}");
    let mut text = String::new();
    for _ in 0..50 {
        if let Ok(r) = reqwest::get(format!("{own}/metrics")).await {
            text = r.text().await.unwrap();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let echo = [r#"gen_ai_tool_name="echo""#];
    let count = "mcp_server_operation_duration_seconds_count";
    assert_eq!(sample(&text, count, &echo), Some(1.0), "{text}");
    assert_eq!(get(&own, "/healthz").await, (200, "ok\n".to_owned()));
    assert_eq!(get(&base(&url), "/metrics").await.0, 404, "not on --listen");
    assert_eq!(
        get(&base(&url), "/healthz").await.0,
        200,
        "probes stay on --listen"
    );
}

/// Polls `/readyz` until it answers `want` (10 s at most); its last body.
async fn ready_becomes(base: &str, want: u16) -> Value {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (status, body) = get(base, "/readyz").await;
        if status == want {
            return serde_json::from_str(&body).unwrap();
        }
        assert!(
            Instant::now() < deadline,
            "/readyz stays {status}, not {want}: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn readiness_follows_the_store_and_the_drain() {
    let mut redis = oxmcp_tests::scale::Redis::start().await;
    let port = redis.url().rsplit(':').next().unwrap().parse().unwrap();
    let (server, url) = oxmcp_tests::serve_http(&[
        "--listen",
        "127.0.0.1:0",
        "--store",
        &redis.url(),
        "--shutdown-delay",
        "3s",
    ])
    .await;
    let base = base(&url);
    let ok = ready_becomes(&base, 200).await;
    assert_eq!(ok["checks"]["store"]["ok"], true, "{ok}");

    redis.stop().await;
    let down = ready_becomes(&base, 503).await;
    assert_eq!(down["checks"]["store"]["ok"], false, "{down}");
    assert_eq!(get(&base, "/healthz").await.0, 200, "alive all the same");
    let _redis = oxmcp_tests::scale::Redis::start_on(port).await;
    let back = ready_becomes(&base, 200).await;
    assert_eq!(back["checks"]["draining"], false, "{back}");

    // SIGTERM: not ready at once, still serving for the delay, then gone.
    let s = HttpSession::open(&url, "2025-11-25").await;
    let pid = nix::unistd::Pid::from_raw(server.id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let draining = ready_becomes(&base, 503).await;
    assert_eq!(draining["checks"]["draining"], true, "{draining}");
    assert_eq!(get(&base, "/healthz").await.0, 200);
    let r = call(&s, 1, "echo", json!({"message": "still here"})).await;
    assert_eq!(r["result"]["content"][0]["text"], "still here", "{r}");
    let mut server = server;
    let exited = tokio::time::timeout(Duration::from_secs(20), server.wait()).await;
    assert!(
        exited.is_ok(),
        "the server exits after the delay and the drain"
    );
}

/// A stdio `tools/call` of `tool` with `arguments` (id `id`).
async fn stdio_call(s: &mut oxmcp_tests::Raw, id: i64, tool: &str, arguments: Value) -> Value {
    s.request(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
    .await
}

#[tokio::test]
async fn rate_limits_refuse_calls_past_their_budget_over_stdio_and_http() {
    let mut s = oxmcp_tests::Raw::spawn_with(&["--rate-limit", "echo=2/1m"]);
    s.initialize("2025-11-25").await;
    for id in 1..=2 {
        let r = stdio_call(&mut s, id, "echo", json!({"message": "x"})).await;
        assert_eq!(r["result"]["content"][0]["text"], "x", "{r}");
    }
    let r = stdio_call(&mut s, 3, "echo", json!({"message": "x"})).await;
    assert_eq!(code(&r), -32000, "{r}");
    assert_eq!(r["error"]["data"]["scope"], "tool", "{r}");
    assert_eq!(r["error"]["data"]["transient"], true, "{r}");
    let wait = r["error"]["data"]["retryAfterMs"].as_u64().unwrap();
    assert!(wait > 1_000 && wait <= 30_000, "about 30 s left: {r}");
    let r = stdio_call(&mut s, 4, "fail", json!({})).await;
    assert_eq!(
        r["result"]["isError"], true,
        "other tools are not limited: {r}"
    );
    s.close().await;

    let (_server, url) =
        oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0", "--rate-limit-principal", "3/1m"])
            .await;
    let s = HttpSession::open(&url, "2025-11-25").await;
    for id in 1..=3 {
        let r = call(&s, id, "echo", json!({"message": "y"})).await;
        assert_eq!(r["result"]["content"][0]["text"], "y", "{r}");
    }
    let r = call(&s, 4, "fail", json!({})).await;
    assert_eq!(code(&r), -32000, "{r}");
    assert_eq!(r["error"]["data"]["scope"], "principal", "{r}");
    // Lists are not tool calls.
    let (_, m) = s
        .post(br#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#)
        .await;
    assert!(m[0]["result"]["tools"].is_array(), "{m:?}");
    // The refusal is counted too.
    let (_, text) = get(&base(&url), "/metrics").await;
    let refused = [r#"gen_ai_tool_name="fail""#, r#"error_type="-32000""#];
    let count = "mcp_server_operation_duration_seconds_count";
    assert_eq!(sample(&text, count, &refused), Some(1.0), "{text}");
}

#[tokio::test]
async fn a_tool_past_its_deadline_is_stopped_with_an_error() {
    let mut s = oxmcp_tests::Raw::spawn_with(&["--tool-timeout", "slow=300ms"]);
    s.initialize("2025-11-25").await;
    let started = Instant::now();
    let r = stdio_call(&mut s, 1, "slow", json!({"steps": 20, "delay_ms": 200})).await;
    assert_eq!(code(&r), -32001, "{r}");
    assert_eq!(r["error"]["data"]["timeoutMs"], 300, "{r}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "not the 4 s of the call"
    );
    let r = stdio_call(&mut s, 2, "slow", json!({"steps": 1, "delay_ms": 10})).await;
    assert_eq!(
        r["result"]["content"][0]["text"], "done after 1 steps",
        "{r}"
    );
    s.close().await;
}

#[tokio::test]
async fn the_audit_log_names_each_call_but_never_its_arguments() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let file = log.reopen().unwrap();
    let mut s = oxmcp_tests::Raw::spawn_logging(&["--audit"], "warn", Stdio::from(file));
    s.initialize("2025-11-25").await;
    let r = stdio_call(&mut s, 7, "echo", json!({"message": "hush-hush"})).await;
    assert_eq!(r["result"]["content"][0]["text"], "hush-hush");
    let r = stdio_call(&mut s, 8, "fail", json!({})).await;
    assert_eq!(r["result"]["isError"], true);
    s.close().await;
    let text = std::fs::read_to_string(log.path()).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("mcp request")).collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].contains("tools/call") && lines[0].contains("echo"),
        "{text}"
    );
    assert!(
        lines[0].contains("request_id=7") && lines[0].contains("outcome=ok"),
        "{text}"
    );
    assert!(lines[1].contains("outcome=tool_error"), "{text}");
    assert!(!text.contains("hush-hush"), "never the arguments: {text}");
}

#[tokio::test]
async fn a_gateways_readiness_and_metrics_follow_its_upstreams() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gateway.toml");
    let toml = format!(
        "heartbeat_ms = 200\n\n[[upstream]]\nname = \"good\"\ncommand = [{:?}, \"serve\", \"--stdio\"]\n\n\
         [[upstream]]\nname = \"broken\"\ncommand = [\"false\"]\n",
        oxmcp_tests::oxmcp()
    );
    std::fs::write(&config, toml).unwrap();
    let config = config.to_str().unwrap();
    let (_any, url) =
        oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0", "--config", config]).await;
    let ready = ready_becomes(&base(&url), 200).await;
    assert_eq!(ready["checks"]["upstreams"]["good"], true, "{ready}");
    assert_eq!(ready["checks"]["upstreams"]["broken"], false, "{ready}");
    let (_, text) = get(&base(&url), "/metrics").await;
    let up = "oxmcp_gateway_upstream_up";
    assert_eq!(
        sample(&text, up, &[r#"upstream="good""#]),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, up, &[r#"upstream="broken""#]),
        Some(0.0),
        "{text}"
    );

    let (_all, url) = oxmcp_tests::serve_http(&[
        "--listen",
        "127.0.0.1:0",
        "--config",
        config,
        "--ready-upstreams",
        "all",
    ])
    .await;
    let unready = ready_becomes(&base(&url), 503).await;
    assert_eq!(unready["checks"]["upstreams"]["good"], true, "{unready}");
}
