//! Tasks over Streamable HTTP in both eras: a tool run as a task and followed to its result,
//! a task that asks the user something (2026-07-28: `input_required` and `tasks/update`;
//! 2025-11-25: a direct elicitation tied to the task), cancellation mid-run, a task that
//! outlives its client's connection, TTL expiry that leaves nothing behind, and the refusals
//! of each era.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use oxmcp::client::{CallError, Client, ClientConfig, ClientHandlers, EraChoice, ToolCall};
use oxmcp::engine::{Connection, Serve};
use oxmcp::remote::{Remote, connect};
use oxmcp::server::{Ctx, MemoryTaskStore, Server, TaskConfig, TaskStore};
use oxmcp::types::{ElicitAction, ElicitResult, JsonObject, TaskStatus, TaskSupport};
use serde_json::{Value, json};
use tokio::net::TcpListener;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Work {
    ms: u64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

/// What the server's tools saw.
#[derive(Default)]
struct Seen {
    cancelled: AtomicBool,
    asked_with_task: AtomicUsize,
}

/// Marks the work stopped when dropped before it finished.
struct Stopped(Arc<Seen>, bool);

impl Drop for Stopped {
    fn drop(&mut self) {
        if !self.1 {
            self.0.cancelled.store(true, Ordering::SeqCst);
        }
    }
}

fn server(seen: Arc<Seen>, store: Arc<MemoryTaskStore>, ttl: Duration) -> Server {
    let (s1, s2) = (seen.clone(), seen);
    Server::builder("tasks-test", "1")
        .tool("quick", "never a task", |_c: Ctx, _a: Nothing| async move {
            Ok::<_, String>("quick")
        })
        .task_tool(
            "work",
            "works ms milliseconds, reporting progress",
            TaskSupport::Optional,
            move |ctx: Ctx, a: Work| {
                let seen = s1.clone();
                async move {
                    // Stopped work is dropped: the guard tells.
                    let mut guard = Stopped(seen, false);
                    for step in 1..=10u32 {
                        tokio::time::sleep(Duration::from_millis(a.ms / 10)).await;
                        ctx.progress(f64::from(step), Some(10.0), Some("working".into()))
                            .await;
                    }
                    guard.1 = true;
                    Ok::<_, String>(format!("worked {} ms", a.ms))
                }
            },
        )
        .task_tool(
            "ask",
            "asks the user's name, only as a task",
            TaskSupport::Required,
            move |ctx: Ctx, _a: Nothing| {
                let seen = s2.clone();
                async move {
                    if ctx.task_id().is_some() {
                        seen.asked_with_task.fetch_add(1, Ordering::SeqCst);
                    }
                    let answer = ctx
                        .elicit(&oxmcp::types::ElicitParams::form(
                            "Your name?",
                            json!({"type": "object", "properties": {"name": {"type": "string"}}}),
                        ))
                        .await
                        .map_err(|e| e.to_string())?;
                    let name = answer
                        .content
                        .and_then(|c| c.get("name").cloned())
                        .unwrap_or(Value::Null);
                    Ok::<_, String>(format!("hello {}", name.as_str().unwrap_or("?")))
                }
            },
        )
        .task_tool(
            "crash",
            "fails with a JSON-RPC error",
            TaskSupport::Optional,
            |_c: Ctx, _a: Nothing| async move {
                Err::<String, _>(oxmcp::jsonrpc::ErrorObject::internal("crashed"))
            },
        )
        .tasks(
            TaskConfig::default()
                .default_ttl(ttl)
                .poll_interval(Duration::from_millis(50)),
        )
        .task_store(store)
        .build()
        .unwrap()
}

async fn serve(server: Server) -> String {
    let http = oxmcp::http::StreamableHttp::new(server, oxmcp::http::HttpConfig::default());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));
    format!("http://{addr}/mcp")
}

async fn client(url: &str, era: EraChoice, tasks: bool) -> Client {
    let mut handlers = ClientHandlers::new().elicitation(|_p| async move {
        let mut content = JsonObject::new();
        content.insert("name".into(), json!("Ada"));
        Ok(ElicitResult::cancel()
            .with_action(ElicitAction::Accept)
            .with_content(Some(content)))
    });
    if tasks {
        handlers = handlers.tasks();
    }
    let remote = Remote::default()
        .handlers(handlers)
        .client(ClientConfig::default().era(era));
    connect(url, remote).await.unwrap()
}

fn args(v: Value) -> JsonObject {
    v.as_object().cloned().unwrap()
}

fn fixture(ttl: Duration) -> (Arc<Seen>, Arc<MemoryTaskStore>, Server) {
    let seen = Arc::new(Seen::default());
    let store = MemoryTaskStore::new();
    let server = server(seen.clone(), store.clone(), ttl);
    (seen, store, server)
}

fn task_of(call: ToolCall) -> oxmcp::types::TaskInfo {
    match call {
        ToolCall::Task(t) => t,
        ToolCall::Done(r) => panic!("expected a task, got {r:?}"),
    }
}

fn text(r: &oxmcp::types::CallToolResult) -> String {
    serde_json::to_value(&r.content[0]).unwrap()["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn modern_tasks_run_ask_and_finish() {
    let (seen, _store, server) = fixture(Duration::from_secs(60));
    let url = serve(server).await;
    let c = client(&url, EraChoice::Modern, true).await;
    assert!(c.server_supports_tasks());

    // A plain call_tool of a tool that asks: the server answers with a task, the client
    // follows it, answers its input_required with tasks/update, and returns the result.
    let r = c.call_tool("ask", JsonObject::new()).await.unwrap();
    assert_eq!(text(&r), "hello Ada");
    assert_eq!(seen.asked_with_task.load(Ordering::SeqCst), 1);

    // Started as a task: its progress shows as the status message while it works.
    let task = task_of(
        c.call_tool_as_task("work", args(json!({"ms": 600})), None)
            .await
            .unwrap(),
    );
    assert_eq!(task.status, TaskStatus::Working);
    let mut messages = Vec::new();
    let r = c
        .wait_task(&task.task_id, |t| messages.extend(t.status_message.clone()))
        .await
        .unwrap();
    assert_eq!(text(&r), "worked 600 ms");
    assert!(
        messages.iter().any(|m| m.ends_with("/10: working")),
        "{messages:?}"
    );
    let done = c.get_task(&task.task_id).await.unwrap();
    assert_eq!(done.status, TaskStatus::Completed);

    // A JSON-RPC error in the work: failed, with the error inlined.
    let task = task_of(
        c.call_tool_as_task("crash", JsonObject::new(), None)
            .await
            .unwrap(),
    );
    let e = c.wait_task(&task.task_id, |_| {}).await.unwrap_err();
    assert!(
        matches!(&e, CallError::Rpc(o) if o.message == "crashed"),
        "{e}"
    );

    // A sync-only tool stays sync.
    let quick = c
        .call_tool_as_task("quick", JsonObject::new(), None)
        .await
        .unwrap();
    assert!(matches!(quick, ToolCall::Done(_)));
    c.close().await;
}

#[tokio::test]
async fn modern_cancel_mid_run_stops_the_work() {
    let (seen, _store, server) = fixture(Duration::from_secs(60));
    let url = serve(server).await;
    let c = client(&url, EraChoice::Modern, false).await;
    let task = task_of(
        c.call_tool_as_task("work", args(json!({"ms": 20_000})), None)
            .await
            .unwrap(),
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    c.cancel_task(&task.task_id).await.unwrap();
    let e = c.wait_task(&task.task_id, |_| {}).await.unwrap_err();
    assert!(matches!(e, CallError::Cancelled), "{e}");
    assert_eq!(
        c.get_task(&task.task_id).await.unwrap().status,
        TaskStatus::Cancelled
    );
    for _ in 0..100 {
        if seen.cancelled.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(seen.cancelled.load(Ordering::SeqCst), "the work went on");
    // Cancelling again is acknowledged (2026-07-28); an unknown task is -32602.
    c.cancel_task(&task.task_id).await.unwrap();
    let e = c.get_task("no-such-task").await.unwrap_err();
    assert!(matches!(&e, CallError::Rpc(o) if o.code.0 == -32602), "{e}");
    c.close().await;
}

#[tokio::test]
async fn modern_refusals_without_the_extension() {
    let (_seen, _store, server) = fixture(Duration::from_secs(60));
    let url = serve(server).await;
    let c = client(&url, EraChoice::Modern, false).await;
    // A tool that runs only as a task, asked by a client that did not declare tasks.
    let e = c.call_tool("ask", JsonObject::new()).await.unwrap_err();
    assert!(matches!(&e, CallError::Rpc(o) if o.code.0 == -32021), "{e}");
    // An optional one runs as a plain request.
    let r = c.call_tool("work", args(json!({"ms": 10}))).await.unwrap();
    assert_eq!(text(&r), "worked 10 ms");
    // tasks/get without the extension in the request: -32021.
    let e = c
        .request("tasks/get", json!({"taskId": "x"}))
        .await
        .unwrap_err();
    assert!(matches!(&e, CallError::Rpc(o) if o.code.0 == -32021), "{e}");
    c.close().await;
}

#[tokio::test]
async fn legacy_tasks_run_ask_list_and_refuse() {
    let (seen, _store, server) = fixture(Duration::from_secs(60));
    let url = serve(server).await;
    let c = client(&url, EraChoice::Legacy, false).await;
    assert!(c.server_supports_tasks());

    let task = task_of(
        c.call_tool_as_task(
            "work",
            args(json!({"ms": 300})),
            Some(Duration::from_secs(30)),
        )
        .await
        .unwrap(),
    );
    assert_eq!(task.ttl_ms, Some(30_000));
    let r = c.wait_task(&task.task_id, |_| {}).await.unwrap();
    assert_eq!(text(&r), "worked 300 ms");

    // The elicitation of a 2025-11-25 task goes to the client directly.
    let task = task_of(
        c.call_tool_as_task("ask", JsonObject::new(), None)
            .await
            .unwrap(),
    );
    let r = c.wait_task(&task.task_id, |_| {}).await.unwrap();
    assert_eq!(text(&r), "hello Ada");
    assert_eq!(seen.asked_with_task.load(Ordering::SeqCst), 1);

    // Nobody to list tasks for (no verified caller): no tasks/list (owners list theirs,
    // see a_task_is_its_owners_alone).
    assert!(c.server_capabilities().extra["tasks"].get("list").is_none());
    let e = c.list_tasks(None).await.unwrap_err();
    assert!(matches!(&e, CallError::Rpc(o) if o.code.0 == -32601), "{e}");
    // A tool that forbids tasks, once listed, is called plainly.
    c.list_tools().await.unwrap();
    let quick = c
        .call_tool_as_task("quick", JsonObject::new(), None)
        .await
        .unwrap();
    assert!(matches!(quick, ToolCall::Done(_)));
    // Cancelling a finished task is -32602 in 2025-11-25.
    let e = c.cancel_task(&task.task_id).await.unwrap_err();
    assert!(matches!(&e, CallError::Rpc(o) if o.code.0 == -32602), "{e}");
    // A tool that runs only as a task, called without one: -32601.
    let e = c.call_tool("ask", JsonObject::new()).await.unwrap_err();
    assert!(matches!(&e, CallError::Rpc(o) if o.code.0 == -32601), "{e}");
    // tasks/update does not exist in 2025-11-25.
    let e = c
        .request(
            "tasks/update",
            json!({"taskId": task.task_id, "inputResponses": {}}),
        )
        .await
        .unwrap_err();
    assert!(matches!(&e, CallError::Rpc(o) if o.code.0 == -32601), "{e}");
    c.close().await;
}

#[tokio::test]
async fn a_task_outlives_its_clients_connection() {
    let (_seen, _store, server) = fixture(Duration::from_secs(60));
    let url = serve(server).await;
    for era in [EraChoice::Modern, EraChoice::Legacy] {
        let first = client(&url, era, false).await;
        let task = task_of(
            first
                .call_tool_as_task("work", args(json!({"ms": 400})), None)
                .await
                .unwrap(),
        );
        first.close().await;
        let second = client(&url, era, false).await;
        let handle = second.task(&task.task_id);
        assert_eq!(handle.id(), task.task_id);
        let r = handle.result().await.unwrap();
        assert_eq!(handle.get().await.unwrap().status, TaskStatus::Completed);
        assert_eq!(text(&r), "worked 400 ms", "{era:?}");
        second.close().await;
    }
}

#[tokio::test]
async fn an_expired_task_leaves_nothing_behind() {
    let (seen, store, server) = fixture(Duration::from_millis(400));
    let url = serve(server).await;
    let c = client(&url, EraChoice::Modern, false).await;
    let task = task_of(
        c.call_tool_as_task("work", args(json!({"ms": 20_000})), None)
            .await
            .unwrap(),
    );
    assert_eq!(task.ttl_ms, Some(400));
    assert!(store.get(&task.task_id).await.unwrap().is_some());
    tokio::time::sleep(Duration::from_millis(900)).await;
    let e = c.get_task(&task.task_id).await.unwrap_err();
    assert!(matches!(&e, CallError::Rpc(o) if o.code.0 == -32602), "{e}");
    assert!(store.is_empty(), "the record stayed");
    assert!(seen.cancelled.load(Ordering::SeqCst), "the work went on");
    c.close().await;

    // A 2025-11-25 tasks/result waiting for a task that expires gets an answer then.
    let c = client(&url, EraChoice::Legacy, false).await;
    let task = task_of(
        c.call_tool_as_task("work", args(json!({"ms": 20_000})), None)
            .await
            .unwrap(),
    );
    let waited = tokio::time::timeout(
        Duration::from_secs(10),
        c.request("tasks/result", json!({"taskId": task.task_id})),
    )
    .await
    .expect("tasks/result is answered when the task expires");
    let e = waited.unwrap_err();
    assert!(
        matches!(&e, CallError::Rpc(o) if o.message.contains("expired")),
        "{e}"
    );
    c.close().await;
}

/// A client whose connection the transport verified as `principal`.
async fn client_as(server: &Server, principal: &str, era: EraChoice) -> Client {
    let (ours, theirs) = oxmcp::transport::duplex();
    let (s, who) = (server.clone(), principal.to_owned());
    tokio::spawn(async move {
        let connection = Connection {
            incoming: theirs.incoming,
            outgoing: theirs.outgoing,
            config: s.config().engine.clone(),
            principal: Some(who),
            direct: None,
            parking: None,
            session: None,
        };
        Serve::serve(&s, connection).await;
    });
    let config = ClientConfig::default().era(era);
    Client::connect(ours.incoming, ours.outgoing, ClientHandlers::new(), config)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_task_is_its_owners_alone() {
    let (_seen, _store, server) = fixture(Duration::from_secs(60));
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let alice = client_as(&server, "alice", era).await;
        let bob = client_as(&server, "bob", era).await;
        let task = task_of(
            alice
                .call_tool_as_task("work", args(json!({"ms": 5_000})), None)
                .await
                .unwrap(),
        );
        for e in [
            bob.get_task(&task.task_id).await.unwrap_err(),
            bob.cancel_task(&task.task_id).await.unwrap_err(),
        ] {
            assert!(
                matches!(&e, CallError::Rpc(o) if o.code.0 == -32602),
                "{era:?}: {e}"
            );
        }
        assert_eq!(
            alice.get_task(&task.task_id).await.unwrap().status,
            TaskStatus::Working
        );
        if era == EraChoice::Legacy {
            assert!(bob.list_tasks(None).await.unwrap().tasks.is_empty());
            assert_eq!(alice.list_tasks(None).await.unwrap().tasks.len(), 1);
        }
        alice.cancel_task(&task.task_id).await.unwrap();
    }
}
