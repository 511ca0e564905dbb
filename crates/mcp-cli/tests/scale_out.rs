//! Several `mcp serve --store redis://...` instances behind a round-robin proxy, with a real
//! Redis: what a client sees is the same whichever instance it lands on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod scale;

use std::time::Duration;

use scale::{Cluster, Instance, Proxy, Redis, SseReader, call, open_session, post, tool};
use serde_json::{Value, json};

const V: &str = "2025-11-25";

async fn three(redis: &Redis, extra: &[&str]) -> Vec<Instance> {
    let mut v = Vec::new();
    for name in ["a", "b", "c"] {
        v.push(Instance::start(redis, name, extra).await);
    }
    v
}

fn result_text(m: &Value) -> String {
    m["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a tool result, got {m}"))
        .to_owned()
}

/// Legacy sessions through the proxy: initialize on one instance, then calls land on all
/// three; DELETE on one ends the session on all of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_sessions_work_on_every_instance() {
    let redis = Redis::start().await;
    let all = three(&redis, &[]).await;
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
    // DELETE on one instance: 404 on every instance.
    assert_eq!(scale::delete(&all[1].url, &sid, V).await, 200);
    for inst in &all {
        let (status, _) = call(
            &inst.url,
            &sid,
            V,
            &tool(30, "echo", json!({"message":"x"})),
        )
        .await;
        assert_eq!(status, 404, "{} still serves a deleted session", inst.name);
    }
    assert!(
        redis.keys(&format!("mcp:{{{sid}}}:*")).is_empty(),
        "nothing of it is left"
    );
}

/// 2026-07-28 requests have no session: any instance answers, and `requestState` made by
/// one instance is accepted by another (the key is shared through the store).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_requests_and_request_state_cross_instances() {
    let redis = Redis::start().await;
    let all = three(&redis, &[]).await;
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

/// A stream written on one instance resumes on another (nothing missed, nothing twice); a
/// tool on one instance asks for sampling and the client answers on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resumption_and_sampling_cross_instances() {
    let redis = Redis::start().await;
    let all = three(&redis, &[]).await;
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
    let resumed = scale::resume(&all[2].url, &sid, V, &last_id)
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
    let answer = scale::sampled(&ask, "the model's answer");
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
    let answer = scale::sampled(&ask2, "second");
    assert_eq!(call(&all[0].url, &sid, V, &answer).await.0, 202);
    let done = sse.next_message(10).await.unwrap().data.unwrap();
    assert!(result_text(&done).contains("second"), "{done}");
}

/// A resource update made on one instance reaches a legacy GET stream held on another (the
/// subscription made on a third), and a 2026-07-28 `subscriptions/listen` on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_updates_fan_out_across_instances() {
    let redis = Redis::start().await;
    let all = three(&redis, &[]).await;
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

/// The same on a Redis Cluster: a session's keys share one slot (`{sid}`), so its pipelines
/// work; calls, sampling and resumption cross instances; DELETE leaves nothing on any node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn works_on_a_redis_cluster() {
    let cluster = Cluster::start().await;
    let url = cluster.url();
    let a = Instance::start_url(&url, "a", &[]).await;
    let b = Instance::start_url(&url, "b", &[]).await;
    let sid = open_session(&a.url, V).await;
    let (status, m) = call(&b.url, &sid, V, &tool(1, "echo", json!({"message": "c"}))).await;
    assert_eq!(status, 200);
    assert_eq!(result_text(&m[0]), "c");
    let r = post(&b.url, &sid, V, &tool(2, "sample", json!({"prompt": "p"})))
        .send()
        .await
        .unwrap();
    let mut sse = SseReader::new(r);
    let ask = sse.next_message(10).await.unwrap();
    let ask_id = ask.id.clone().unwrap();
    let ask = ask.data.unwrap();
    drop(sse);
    let answer = scale::sampled(&ask, "clustered");
    assert_eq!(call(&a.url, &sid, V, &answer).await.0, 202);
    // The client left b's stream; it resumes on a and gets the result.
    let resumed = scale::resume(&a.url, &sid, V, &ask_id)
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), 200);
    let mut sse = SseReader::new(resumed);
    let done = sse.next_message(10).await.unwrap().data.unwrap();
    assert_eq!(done["id"], 2);
    assert!(result_text(&done).contains("clustered"), "{done}");
    assert!(!cluster.keys(&format!("mcp:{{{sid}}}:*")).is_empty());
    assert_eq!(scale::delete(&b.url, &sid, V).await, 200);
    assert_eq!(
        call(&a.url, &sid, V, &tool(3, "echo", json!({"message": "x"})))
            .await
            .0,
        404
    );
    assert!(
        cluster.keys(&format!("mcp:{{{sid}}}:*")).is_empty(),
        "nothing left on any node"
    );
}

/// An ACL user in the URL works (the user may only touch `mcp:*` keys); the bearer token a
/// client sends is never stored in Redis; a store that cannot be reached at start is one
/// line on stderr and a non-zero exit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_users_no_tokens_at_rest_and_unreachable_store() {
    let port = scale::free_port();
    let redis = Redis::start_with(
        port,
        &["--user", "mcp", "on", ">s3cret-pw", "~mcp:*", "&*", "+@all"],
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let token = "tok-7f3a9c2e5b1d4e8f9a0b";
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, token).unwrap();
    let url = format!("redis://mcp:s3cret-pw@127.0.0.1:{port}");
    let tf = token_file.to_str().unwrap();
    let a = Instance::start_url(&url, "a", &["--auth-token-file", tf]).await;
    let b = Instance::start_url(&url, "b", &["--auth-token-file", tf]).await;
    let bearer = format!("Bearer {token}");
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":V,"capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let r = reqwest::Client::new()
        .post(&a.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", &bearer)
        .body(init.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let r = post(&b.url, &sid, V, &tool(1, "echo", json!({"message":"m"})))
        .header("authorization", &bearer)
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        200,
        "the session works on b, through the ACL user"
    );
    // Without the token: 401, on either instance.
    assert_eq!(
        call(&b.url, &sid, V, &tool(2, "echo", json!({"message":"m"})))
            .await
            .0,
        401
    );
    // Everything in Redis, read back: no token anywhere.
    let keys = redis.keys("*");
    assert!(!keys.is_empty());
    for k in &keys {
        let dump = match redis.cli(&["TYPE", k]).as_str() {
            "hash" => redis.cli(&["HGETALL", k]),
            "set" => redis.cli(&["SMEMBERS", k]),
            "stream" => redis.cli(&["XRANGE", k, "-", "+"]),
            _ => redis.cli(&["GET", k]),
        };
        assert!(!dump.contains(token), "{k} holds the access token: {dump}");
        assert!(k.starts_with("mcp:"), "{k}");
    }
    // A wrong password, and a port where nothing listens: one line, non-zero exit.
    for bad in [
        format!("redis://mcp:wrong@127.0.0.1:{port}"),
        format!("redis://127.0.0.1:{}", scale::free_port()),
    ] {
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp"))
            .args(["serve", "--listen", "127.0.0.1:0", "--store", &bad])
            .env("MCP_LOG", "off")
            .output()
            .await
            .unwrap();
        assert!(!out.status.success(), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        assert!(err.contains("cannot reach Redis"), "{err}");
        assert!(!err.contains("wrong"), "no password shown: {err}");
    }
}

/// `rediss://` with a private CA (`--store-ca`): sessions cross instances over TLS; without
/// the CA the certificate is refused at start, in one line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_to_redis_with_a_private_ca() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(d)
            .output()
            .expect("openssl runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=test-ca",
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "srv.key",
        "-out",
        "srv.csr",
        "-subj",
        "/CN=localhost",
    ]);
    std::fs::write(d.join("ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost").unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "srv.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "srv.crt",
        "-days",
        "2",
        "-extfile",
        "ext",
    ]);
    let tls_port = scale::free_port();
    let path = |f: &str| d.join(f).to_str().unwrap().to_owned();
    let (cert, key, ca) = (path("srv.crt"), path("srv.key"), path("ca.crt"));
    let tls = tls_port.to_string();
    let _redis = Redis::start_with(
        scale::free_port(),
        &[
            "--tls-port",
            &tls,
            "--tls-cert-file",
            &cert,
            "--tls-key-file",
            &key,
            "--tls-ca-cert-file",
            &ca,
            "--tls-auth-clients",
            "no",
        ],
    )
    .await;
    let url = format!("rediss://127.0.0.1:{tls_port}");
    let a = Instance::start_url(&url, "a", &["--store-ca", &ca]).await;
    let b = Instance::start_url(&url, "b", &["--store-ca", &ca]).await;
    let sid = open_session(&a.url, V).await;
    let (status, m) = call(&b.url, &sid, V, &tool(1, "echo", json!({"message": "tls"}))).await;
    assert_eq!(status, 200);
    assert_eq!(result_text(&m[0]), "tls");
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp"))
        .args(["serve", "--listen", "127.0.0.1:0", "--store", &url])
        .env("MCP_LOG", "off")
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("certificate"), "{err}");
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
            env!("CARGO_BIN_EXE_mcp")
        );
        std::fs::write(&file, config).unwrap();
        let (child, url) = common::serve_http(&[
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
