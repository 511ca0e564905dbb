//! Tasks with `oxmcp serve`'s demo (`slow` runs as a task when asked): raw JSON-RPC over
//! stdio in both eras, `oxmcp call --task` and `oxmcp tasks list|get|cancel|wait` over HTTP,
//! a task outliving the client that started it, tasks shared by two instances through
//! Redis (read on one, cancelled from the other), tasks that outlive every instance with
//! PostgreSQL, and the task of a dead instance reported failed by another.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use oxmcp_tests::mcp;

use oxmcp_tests::oxmcp;
const TASKS: &str = "io.modelcontextprotocol/tasks";

/// `oxmcp call URL slow --task` running in the background, and the id of its task (from the
/// first line it prints on stderr).
async fn started_task(url: &str, era: &str, steps: u32) -> (Child, String) {
    let args = json!({"steps": steps, "delay_ms": 200}).to_string();
    let mut child = Command::new(oxmcp())
        .args(["call", url, "slow", &args, "--task", "--era", era])
        .env("MCP_LOG", "off")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the call prints its task")
        .unwrap()
        .expect("a line");
    let id = first
        .strip_prefix("task ")
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("not a task line: {first}"))
        .to_owned();
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, id)
}

fn modern_meta(tasks: bool) -> Value {
    let mut caps = json!({});
    if tasks {
        caps["extensions"] = json!({ TASKS: {} });
    }
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": caps,
    })
}

#[tokio::test]
async fn tasks_over_stdio_in_both_eras() {
    // 2025-11-25: asked for with `task`, followed with tasks/get and tasks/result.
    let mut s = oxmcp_tests::Raw::spawn();
    let init = s.initialize("2025-11-25").await;
    assert!(
        init["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"].is_object(),
        "{init}"
    );
    let created = s
        .request(
            1,
            "tools/call",
            json!({"name": "slow", "arguments": {"steps": 2, "delay_ms": 50}, "task": {"ttl": 60000}}),
        )
        .await;
    let task = &created["result"]["task"];
    assert_eq!(task["status"], "working", "{created}");
    assert_eq!(task["ttl"], 60000);
    let id = task["taskId"].as_str().unwrap().to_owned();
    s.send(json!({"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId": id}}))
        .await;
    let (result, before) = s.recv_id(json!(2)).await;
    assert_eq!(result["result"]["content"][0]["text"], "done after 2 steps");
    // The end was announced (notifications/tasks/status) before the result came.
    assert!(
        before
            .iter()
            .any(|m| m["method"] == "notifications/tasks/status"
                && m["params"]["taskId"] == id.as_str()
                && m["params"]["status"] == "completed"),
        "{before:?}"
    );
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str()
    );
    let got = s.request(3, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["result"]["status"], "completed", "{got}");
    s.close().await;

    // 2026-07-28: the server makes a task for a client that declares the extension.
    let mut s = oxmcp_tests::Raw::spawn();
    let created = s
        .request(
            1,
            "tools/call",
            json!({"name": "slow", "arguments": {"steps": 2, "delay_ms": 50}, "_meta": modern_meta(true)}),
        )
        .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let mut status = Value::Null;
    for n in 0..200 {
        let got = s
            .request(
                10 + n,
                "tasks/get",
                json!({"taskId": id, "_meta": modern_meta(true)}),
            )
            .await;
        status = got["result"].clone();
        if status["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(status["status"], "completed", "{status}");
    assert_eq!(status["result"]["content"][0]["text"], "done after 2 steps");
    // Without the extension the same call is a plain request.
    let plain = s
        .request(
            500,
            "tools/call",
            json!({"name": "slow", "arguments": {"steps": 1, "delay_ms": 1}, "_meta": modern_meta(false)}),
        )
        .await;
    assert_eq!(plain["result"]["content"][0]["text"], "done after 1 steps");
    s.close().await;
}

#[tokio::test]
async fn the_cli_runs_and_manages_tasks() {
    let (_server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    for era in ["legacy", "modern"] {
        let args = json!({"steps": 3, "delay_ms": 50}).to_string();
        let (ok, out, err) = mcp(&["call", &url, "slow", &args, "--task", "--era", era]).await;
        assert!(ok, "{era}: {err}");
        assert_eq!(out, "done after 3 steps\n", "{era}");
        assert!(err.starts_with("task "), "{era}: {err}");

        // A long one: seen working, cancelled from another command.
        let (mut call, id) = started_task(&url, era, 100).await;
        let (ok, out, err) = mcp(&["tasks", "get", &url, &id, "--era", era]).await;
        assert!(ok, "{era}: {err}");
        assert!(out.contains(&id) && out.contains("working"), "{era}: {out}");
        let (ok, _, err) = mcp(&["tasks", "cancel", &url, &id, "--era", era]).await;
        assert!(ok, "{era}: {err}");
        let status = tokio::time::timeout(Duration::from_secs(30), call.wait())
            .await
            .unwrap()
            .unwrap();
        assert!(!status.success(), "{era}: the cancelled call fails");
        let (ok, out, _) = mcp(&["tasks", "get", &url, &id, "--json", "--era", era]).await;
        assert!(ok);
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["status"], "cancelled", "{era}: {v}");
    }
    // Without authentication there is nobody to list tasks for.
    let (ok, _, err) = mcp(&["tasks", "list", &url]).await;
    assert!(!ok && err.contains("authenticated caller"), "{err}");
    // Unknown ids are refused.
    let (ok, _, err) = mcp(&["tasks", "get", &url, "nope"]).await;
    assert!(!ok && err.contains("-32602"), "{err}");
}

#[tokio::test]
async fn a_task_outlives_the_client_that_started_it() {
    let (_server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    for era in ["legacy", "modern"] {
        let (mut call, id) = started_task(&url, era, 5).await;
        // The client dies; its task goes on.
        call.kill().await.unwrap();
        let (ok, out, err) = mcp(&["tasks", "wait", &url, &id, "--era", era]).await;
        assert!(ok, "{era}: {err}");
        assert_eq!(out, "done after 5 steps\n", "{era}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_share_tasks_through_redis() {
    let redis = oxmcp_tests::scale::Redis::start().await;
    let a = oxmcp_tests::scale::Instance::start(&redis, "a", &[]).await;
    let b = oxmcp_tests::scale::Instance::start(&redis, "b", &[]).await;
    for era in ["legacy", "modern"] {
        // Started on a, read on b.
        let (mut call, id) = started_task(&a.url, era, 100).await;
        let (ok, out, err) = mcp(&["tasks", "get", &b.url, &id, "--json", "--era", era]).await;
        assert!(ok, "{era}: {err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["status"], "working", "{era}: {v}");
        assert!(redis.keys("mcp:task:*").iter().any(|k| k.ends_with(&id)));
        // Cancelled through b: a hears of it over the bus and stops the work.
        let (ok, _, err) = mcp(&["tasks", "cancel", &b.url, &id, "--era", era]).await;
        assert!(ok, "{era}: {err}");
        let status = tokio::time::timeout(Duration::from_secs(30), call.wait())
            .await
            .unwrap()
            .unwrap();
        assert!(!status.success(), "{era}: the call ends cancelled");
        let (ok, out, _) = mcp(&["tasks", "get", &a.url, &id, "--json", "--era", era]).await;
        assert!(ok);
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["status"], "cancelled", "{era}: {v}");
    }
}

/// `oxmcp tasks get URL ID --json` (legacy era): the task as JSON.
async fn task_at(url: &str, id: &str) -> Value {
    let (ok, out, err) = mcp(&["tasks", "get", url, id, "--json", "--era", "legacy"]).await;
    assert!(ok, "{err}");
    serde_json::from_str(&out).unwrap()
}

/// With PostgreSQL as the store, a finished task outlives the instance that ran it and a
/// restart of every instance: started on a, fetched on b after both were killed and started
/// again, it is still there, with its result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_survive_a_restart_of_every_instance_on_postgres() {
    let pg = oxmcp_tests::postgres::Postgres::start().await;
    let mut a = oxmcp_tests::scale::Instance::start(&pg, "a", &[]).await;
    let mut b = oxmcp_tests::scale::Instance::start(&pg, "b", &[]).await;
    let (mut call, id) = started_task(&a.url, "legacy", 2).await;
    let status = tokio::time::timeout(Duration::from_secs(30), call.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
    assert_eq!(task_at(&b.url, &id).await["status"], "completed");
    a.kill().await;
    b.kill().await;
    // Both started again (new processes, same names): the task is fetched on b.
    let _a = oxmcp_tests::scale::Instance::start(&pg, "a", &[]).await;
    let b = oxmcp_tests::scale::Instance::start(&pg, "b", &[]).await;
    assert_eq!(task_at(&b.url, &id).await["status"], "completed");
    let (ok, out, err) = mcp(&["tasks", "wait", &b.url, &id, "--era", "legacy"]).await;
    assert!(ok, "{err}");
    assert!(out.contains("done after 2 steps"), "{out}");
}

/// A task whose instance died (SIGKILL) is reported `failed` by another instance once the
/// dead one's heartbeats stop (three missed, 6 s by default), instead of `working` until
/// its TTL; waiting for its result gets that failure. With Redis and with PostgreSQL.
async fn a_task_of_a_dead_instance_fails_on(store: &impl oxmcp_tests::scale::Shared) {
    let mut a = oxmcp_tests::scale::Instance::start(store, "a", &[]).await;
    let b = oxmcp_tests::scale::Instance::start(store, "b", &[]).await;
    let (_call, id) = started_task(&a.url, "legacy", 200).await;
    assert_eq!(task_at(&b.url, &id).await["status"], "working");
    a.kill().await;
    let t0 = std::time::Instant::now();
    let failed = loop {
        let v = task_at(&b.url, &id).await;
        if v["status"] != "working" {
            break v;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "still working 20 s after its instance died: {v}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(
        failed["statusMessage"]
            .as_str()
            .is_some_and(|m| m.contains("(a) stopped")),
        "{failed}"
    );
    let (ok, _, err) = mcp(&["tasks", "wait", &b.url, &id, "--era", "legacy"]).await;
    assert!(!ok, "waiting for a failed task fails");
    assert!(err.contains("stopped before it finished"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_of_a_dead_instance_fails_redis() {
    a_task_of_a_dead_instance_fails_on(&oxmcp_tests::scale::Redis::start().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_of_a_dead_instance_fails_postgres() {
    a_task_of_a_dead_instance_fails_on(&oxmcp_tests::postgres::Postgres::start().await).await;
}
