//! Several `oxmcp serve --store redis://...` instances behind a round-robin proxy, with a real
//! Redis: what a client sees is the same whichever instance it lands on. The tests named
//! `*_postgres` run the same against `--store postgres://...` and a real PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use oxmcp_tests::postgres::Postgres;
use oxmcp_tests::scale::Shared;
use oxmcp_tests::scale::{
    Instance, Proxy, Redis, SseReader, call, ended_within, open_session, post, result_text, tool,
};
use serde_json::{Value, json};

const V: &str = "2025-11-25";

async fn three(redis: &impl Shared, extra: &[&str]) -> Vec<Instance> {
    let mut v = Vec::new();
    for name in ["a", "b", "c"] {
        v.push(Instance::start(redis, name, extra).await);
    }
    v
}

/// Legacy sessions through the proxy: initialize on one instance, then calls land on all
/// three; DELETE on one ends the session on all of them.
async fn legacy_sessions_work_on_every_instance_on(redis: &impl Shared) {
    let all = three(redis, &[]).await;
    let proxy = Proxy::start(&all.iter().collect::<Vec<_>>()).await;
    let sid = open_session(&proxy.url, V).await;
    for i in 1..=9 {
        let (status, m) = call(
            &proxy.url,
            &sid,
            V,
            &tool(i, "echo", json!({"message": format!("m{i}")})),
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(m.len(), 1, "{m:?}");
        assert_eq!(m[0]["id"], i);
        assert_eq!(result_text(&m[0]), format!("m{i}"));
    }
    let hits = proxy.hits();
    assert!(
        hits.iter().all(|&h| h >= 3),
        "every instance served: {hits:?}"
    );
    // A log level set on one instance holds on the others.
    let set =
        json!({"jsonrpc":"2.0","id":20,"method":"logging/setLevel","params":{"level":"error"}});
    assert_eq!(call(&all[0].url, &sid, V, &set).await.0, 200);
    let (_, m) = call(
        &all[1].url,
        &sid,
        V,
        &tool(21, "log", json!({"level":"warning","message":"hidden"})),
    )
    .await;
    assert!(
        m.iter().all(|m| m["method"] != "notifications/message"),
        "below the level: {m:?}"
    );
    let (_, m) = call(
        &all[2].url,
        &sid,
        V,
        &tool(22, "log", json!({"level":"error","message":"shown"})),
    )
    .await;
    assert!(
        m.iter().any(|m| m["method"] == "notifications/message"),
        "at the level: {m:?}"
    );
    // DELETE on one instance: 404 on every instance (the others hear of it on the bus).
    assert_eq!(oxmcp_tests::scale::delete(&all[1].url, &sid, V).await, 200);
    for inst in &all {
        let status = ended_within(&inst.url, &sid, V, Duration::from_secs(5)).await;
        assert_eq!(
            status,
            Some(404),
            "{} still serves a deleted session",
            inst.name
        );
    }
    assert!(!redis.holds_session(&sid), "nothing of it is left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_sessions_work_on_every_instance() {
    legacy_sessions_work_on_every_instance_on(&Redis::start().await).await;
}

/// The same, with PostgreSQL as the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_sessions_work_on_every_instance_postgres() {
    legacy_sessions_work_on_every_instance_on(&Postgres::start().await).await;
}

/// 2026-07-28 requests have no session: any instance answers, and `requestState` made by
/// one instance is accepted by another (the key is shared through the store).
async fn modern_requests_and_request_state_cross_instances_on(redis: &impl Shared) {
    let all = three(redis, &[]).await;
    let modern = |url: &str, id: i64, method: &str, params: Value| {
        let mut params = params;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "m", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}
        });
        let name = params["name"].as_str().map(str::to_owned);
        let body = json!({"jsonrpc":"2.0","id":id,"method":method,"params":params});
        let mut r = reqwest::Client::new()
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .body(body.to_string());
        if let Some(n) = name {
            r = r.header("mcp-name", n);
        }
        r
    };
    for (i, inst) in all.iter().enumerate() {
        let r = modern(
            &inst.url,
            i as i64,
            "tools/call",
            json!({"name":"echo","arguments":{"message":"hi"}}),
        )
        .send()
        .await
        .unwrap();
        assert_eq!(r.status(), 200);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["result"]["content"][0]["text"], "hi", "{v}");
    }
    // `ask` needs the user's name: instance a answers input_required with a requestState...
    let r = modern(
        &all[0].url,
        10,
        "tools/call",
        json!({"name":"ask","arguments":{}}),
    )
    .send()
    .await
    .unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["result"]["resultType"], "input_required", "{v}");
    let state = v["result"]["requestState"].clone();
    let key = v["result"]["inputRequests"]
        .as_object()
        .and_then(|o| o.keys().next().cloned())
        .unwrap_or_else(|| panic!("an input request: {v}"));
    // ...and instance c continues it.
    let again = json!({
        "name": "ask", "arguments": {}, "requestState": state,
        "inputResponses": { key: {"action": "accept", "content": {"name": "Ada"}} }
    });
    let r = modern(&all[2].url, 11, "tools/call", again)
        .send()
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert!(
        v["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Ada")),
        "continued on another instance: {v}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_requests_and_request_state_cross_instances() {
    modern_requests_and_request_state_cross_instances_on(&Redis::start().await).await;
}

/// The same, with PostgreSQL as the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_requests_and_request_state_cross_instances_postgres() {
    modern_requests_and_request_state_cross_instances_on(&Postgres::start().await).await;
}

/// A stream written on one instance resumes on another (nothing missed, nothing twice); a
/// tool on one instance asks for sampling and the client answers on another.
async fn resumption_and_sampling_cross_instances_on(redis: &impl Shared) {
    let all = three(redis, &[]).await;
    let sid = open_session(&all[0].url, V).await;
    // `slow` on b: progress events, then the result. The client leaves after the first...
    let mut slow = tool(1, "slow", json!({"steps": 6, "delay_ms": 150}));
    slow["params"]["_meta"] = json!({"progressToken": "p"});
    let r = post(&all[1].url, &sid, V, &slow).send().await.unwrap();
    let mut sse = SseReader::new(r);
    let first = sse.next_message(10).await.unwrap();
    assert_eq!(
        first.data.as_ref().unwrap()["method"],
        "notifications/progress"
    );
    let last_id = first
        .id
        .clone()
        .unwrap_or_else(|| panic!("an event id: {first:?}"));
    drop(sse);
    // ...and resumes on c.
    let resumed = oxmcp_tests::scale::resume(&all[2].url, &sid, V, &last_id)
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), 200);
    let mut sse = SseReader::new(resumed);
    let mut seen = vec![first.data.unwrap()];
    while let Some(e) = sse.next_message(10).await {
        seen.push(e.data.unwrap());
    }
    let progress: Vec<f64> = seen
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"]["progress"].as_f64().unwrap())
        .collect();
    let mut sorted = progress.clone();
    sorted.dedup();
    assert_eq!(progress, sorted, "no progress twice: {progress:?}");
    assert_eq!(progress.len(), 6, "none missed: {seen:?}");
    let results: Vec<&Value> = seen.iter().filter(|m| m["id"] == 1).collect();
    assert_eq!(results.len(), 1, "the result exactly once: {seen:?}");
    assert!(results[0]["result"].is_object());

    // A cancellation sent to a reaches the request running on b: its stream ends at once,
    // without a result.
    let mut long = tool(9, "slow", json!({"steps": 50, "delay_ms": 200}));
    long["params"]["_meta"] = json!({"progressToken": "long"});
    let r = post(&all[1].url, &sid, V, &long).send().await.unwrap();
    let mut sse = SseReader::new(r);
    sse.next_message(10).await.unwrap();
    let t0 = std::time::Instant::now();
    let cancel = json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,"reason":"test"}});
    assert_eq!(call(&all[0].url, &sid, V, &cancel).await.0, 202);
    while let Some(e) = sse.next_message(10).await {
        assert_ne!(
            e.data.unwrap()["id"],
            9,
            "a cancelled request gets no result"
        );
    }
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "cancelled, not run to its end (10 s)"
    );

    // Sampling: the tool runs on b, the client's answer goes to c.
    let r = post(
        &all[1].url,
        &sid,
        V,
        &tool(2, "sample", json!({"prompt": "hello"})),
    )
    .send()
    .await
    .unwrap();
    let mut sse = SseReader::new(r);
    let ask = sse.next_message(10).await.unwrap().data.unwrap();
    assert_eq!(ask["method"], "sampling/createMessage", "{ask}");
    let answer = oxmcp_tests::scale::sampled(&ask, "the model's answer");
    let (status, _) = call(&all[2].url, &sid, V, &answer).await;
    assert_eq!(status, 202);
    let done = sse.next_message(10).await.unwrap().data.unwrap();
    assert_eq!(done["id"], 2);
    assert!(result_text(&done).contains("the model's answer"), "{done}");
    // Another instance of the same session numbers its requests apart: c's sampling id
    // differs from b's.
    let r = post(
        &all[2].url,
        &sid,
        V,
        &tool(3, "sample", json!({"prompt": "again"})),
    )
    .send()
    .await
    .unwrap();
    let mut sse = SseReader::new(r);
    let ask2 = sse.next_message(10).await.unwrap().data.unwrap();
    assert_ne!(ask2["id"], ask["id"]);
    let answer = oxmcp_tests::scale::sampled(&ask2, "second");
    assert_eq!(call(&all[0].url, &sid, V, &answer).await.0, 202);
    let done = sse.next_message(10).await.unwrap().data.unwrap();
    assert!(result_text(&done).contains("second"), "{done}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resumption_and_sampling_cross_instances() {
    resumption_and_sampling_cross_instances_on(&Redis::start().await).await;
}

/// The same, with PostgreSQL as the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resumption_and_sampling_cross_instances_postgres() {
    resumption_and_sampling_cross_instances_on(&Postgres::start().await).await;
}

/// A resource update made on one instance reaches a legacy GET stream held on another (the
/// subscription made on a third), and a 2026-07-28 `subscriptions/listen` on another.
async fn resource_updates_fan_out_across_instances_on(redis: &impl Shared) {
    let all = three(redis, &[]).await;
    let sid = open_session(&all[0].url, V).await;
    let get = reqwest::Client::new()
        .get(&all[0].url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", V)
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 200);
    let mut stream = SseReader::new(get);
    let sub = json!({"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"demo://readme"}});
    assert_eq!(call(&all[1].url, &sid, V, &sub).await.0, 200);
    // The modern listener, on b.
    let listen = json!({"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{
    "notifications": {"resourceSubscriptions": ["demo://readme"]},
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "m", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    }}});
    let l = reqwest::Client::new()
        .post(&all[1].url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(listen.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(l.status(), 200);
    let mut listener = SseReader::new(l);
    let ack = listener.next_message(10).await.unwrap().data.unwrap();
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    // Give the subscription's bus event time to reach a (it is applied in bus order anyway).
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (status, _) = call(
        &all[2].url,
        &sid,
        V,
        &tool(2, "touch", json!({"uri":"demo://readme"})),
    )
    .await;
    assert_eq!(status, 200);
    let n = stream.next_message(10).await.unwrap().data.unwrap();
    assert_eq!(n["method"], "notifications/resources/updated", "{n}");
    assert_eq!(n["params"]["uri"], "demo://readme");
    let n = listener.next_message(10).await.unwrap().data.unwrap();
    assert_eq!(n["method"], "notifications/resources/updated", "{n}");
    assert_eq!(n["params"]["uri"], "demo://readme");
    // Exactly once on the GET stream: no second copy from b or c.
    let extra = tokio::time::timeout(Duration::from_millis(500), stream.next_message(1)).await;
    assert!(extra.is_err(), "one notification, not several: {extra:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_updates_fan_out_across_instances() {
    resource_updates_fan_out_across_instances_on(&Redis::start().await).await;
}

/// The same, with PostgreSQL as the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_updates_fan_out_across_instances_postgres() {
    resource_updates_fan_out_across_instances_on(&Postgres::start().await).await;
}

/// The gateway scales out the same way: `store` in its config file; a session opened on one
/// gateway instance calls an upstream tool through another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateways_share_sessions_through_the_config_file_store() {
    let redis = Redis::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut gateways = Vec::new();
    for name in ["g1", "g2"] {
        let file = dir.path().join(format!("{name}.toml"));
        let config = format!(
            "store = \"{}\"\ninstance_id = \"{name}\"\n\n[[upstream]]\nname = \"demo\"\ncommand = [\"{}\", \"serve\", \"--stdio\"]\n",
            redis.url(),
            oxmcp_tests::oxmcp()
        );
        std::fs::write(&file, config).unwrap();
        let (child, url) = oxmcp_tests::serve_http(&[
            "--listen",
            "127.0.0.1:0",
            "--config",
            file.to_str().unwrap(),
        ])
        .await;
        gateways.push((child, url));
    }
    let sid = open_session(&gateways[0].1, V).await;
    let (status, m) = call(
        &gateways[1].1,
        &sid,
        V,
        &tool(1, "demo__echo", json!({"message": "via g2"})),
    )
    .await;
    assert_eq!(status, 200, "{m:?}");
    assert_eq!(result_text(&m[0]), "via g2");
    assert!(
        redis.cli(&["EXISTS", "mcp:node:g2"]) == "1",
        "g2 is the instance id of the file"
    );
}

/// A request on an instance that restores the session is a use of it like any other: the
/// session's keys in the store live on from it (idle timeout 4 s; a first request on each of
/// B, then C, 2.5 s apart, keeps the session alive).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restoring_instance_keeps_the_session_alive() {
    let redis = Redis::start().await;
    let all = three(&redis, &["--session-idle-timeout", "4s"]).await;
    let sid = open_session(&all[0].url, V).await;
    for i in [1, 2] {
        tokio::time::sleep(Duration::from_millis(2500)).await;
        let (status, m) = call(
            &all[i].url,
            &sid,
            V,
            &tool(i as i64, "echo", json!({"message":"x"})),
        )
        .await;
        assert_eq!(status, 200, "on instance {i}: {m:?}");
    }
}
