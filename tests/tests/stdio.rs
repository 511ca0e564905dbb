//! The protocol core over the real stdio transport: lifecycle, bad input, batches,
//! cancellation, progress, every server feature.
#![allow(clippy::type_complexity)]

use oxmcp_tests::{Raw, code};
use serde_json::{Value, json};

#[tokio::test]
async fn lifecycle_and_negotiation() {
    let mut s = Raw::spawn();
    // Ping is allowed before initialize; nothing else is.
    let r = s.request(1, "ping", json!({})).await;
    assert_eq!(r["result"], json!({}));
    let r = s.request(2, "tools/list", json!({})).await;
    assert_eq!(code(&r), -32600);
    // An unknown version is answered with our latest legacy version, not an error.
    let r = s
        .request(3, "initialize", json!({"protocolVersion":"1999-01-01","capabilities":{},"clientInfo":{"name":"t","version":"1"}}))
        .await;
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
    let caps = &r["result"]["capabilities"];
    assert!(caps["tools"].is_object() && caps["resources"]["subscribe"] == true);
    assert!(
        caps["prompts"].is_object()
            && caps["logging"].is_object()
            && caps["completions"].is_object()
    );
    assert_eq!(r["result"]["serverInfo"]["name"], "mcp-demo");
    s.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await;
    // A second initialize is refused.
    let r = s
        .request(4, "initialize", json!({"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}))
        .await;
    assert_eq!(code(&r), -32600);
    let r = s.request(5, "tools/list", json!({})).await;
    let names: Vec<&str> = r["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, oxmcp_tests::DEMO_TOOLS);
    s.close().await;
}

#[tokio::test]
async fn supported_versions_are_echoed() {
    for v in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let mut s = Raw::spawn();
        let r = s.initialize(v).await;
        assert_eq!(r["result"]["protocolVersion"], v);
        // completions did not exist as a capability in 2024-11-05.
        assert_eq!(
            r["result"]["capabilities"]["completions"].is_object(),
            v != "2024-11-05"
        );
        s.close().await;
    }
}

#[tokio::test]
async fn batches_only_on_2025_03_26() {
    let mut s = Raw::spawn();
    s.initialize("2025-03-26").await;
    s.send_bytes(b"[]").await;
    let r = s.recv().await;
    assert_eq!(code(&r), -32600);
    assert!(r["id"].is_null());
    s.send(json!([
        {"jsonrpc":"2.0","id":1,"method":"ping"},
        {"jsonrpc":"2.0","method":"notifications/initialized"},
        {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"b"}}},
        {"jsonrpc":"2.0","id":3,"method":"nope"},
        5
    ]))
    .await;
    let r = s.recv().await;
    let arr = r.as_array().expect("a batch answer is an array");
    assert_eq!(arr.len(), 4, "notifications get no response: {r}");
    let by_id = |id: i64| arr.iter().find(|m| m["id"] == id).cloned().unwrap();
    assert_eq!(by_id(1)["result"], json!({}));
    assert_eq!(by_id(2)["result"]["content"][0]["text"], "b");
    assert_eq!(code(&by_id(3)), -32601);
    assert!(arr.iter().any(|m| m["id"].is_null() && code(m) == -32600));
    // All notifications: no body at all (the next line is the ping's answer).
    s.send(json!([{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}])).await;
    s.send(json!({"jsonrpc":"2.0","id":9,"method":"ping"}))
        .await;
    assert_eq!(s.recv().await["id"], 9);
    s.close().await;

    let mut s = Raw::spawn();
    s.initialize("2025-06-18").await;
    s.send(json!([{"jsonrpc":"2.0","id":1,"method":"ping"}]))
        .await;
    let r = s.recv().await;
    assert_eq!(
        code(&r),
        -32600,
        "batches are refused on other versions: {r}"
    );
    s.close().await;
}

#[tokio::test]
async fn cancellation_aborts_the_handler() {
    let mut s = Raw::spawn();
    s.initialize("2025-11-25").await;
    s.send(json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{"steps":2,"delay_ms":300}}})).await;
    s.send(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"changed my mind"}})).await;
    // A longer call that starts after the cancel: when it answers, 7 would have answered too.
    let (r, before) = s
        .send_then(json!({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"slow","arguments":{"steps":1,"delay_ms":900}}}), 8)
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "done after 1 steps");
    assert!(
        before.iter().all(|m| m["id"] != 7),
        "a cancelled request gets no response: {before:?}"
    );
    // Unknown ids in cancellations are ignored.
    s.send(
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":12345}}),
    )
    .await;
    assert_eq!(s.request(9, "ping", json!({})).await["result"], json!({}));
    s.close().await;
}

#[tokio::test]
async fn initialize_cannot_be_cancelled() {
    let mut s = Raw::spawn();
    s.send(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}})).await;
    s.send(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}))
        .await;
    let (r, _) = s.recv_id(json!(1)).await;
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
    s.close().await;
}

#[tokio::test]
async fn progress_and_logging_notifications() {
    let mut s = Raw::spawn();
    s.initialize("2025-11-25").await;
    s.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"steps":3,"delay_ms":1},"_meta":{"progressToken":"tok"}}})).await;
    let (r, before) = s.recv_id(json!(1)).await;
    assert_eq!(r["result"]["content"][0]["text"], "done after 3 steps");
    let progress: Vec<f64> = before
        .iter()
        .filter(|m| {
            m["method"] == "notifications/progress" && m["params"]["progressToken"] == "tok"
        })
        .map(|m| m["params"]["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(progress, [1.0, 2.0, 3.0]);
    // Without a token, no progress is sent.
    let (_, before) = s
        .send_then(json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{"steps":2,"delay_ms":1}}}), 2)
        .await;
    assert!(before.is_empty());
    // Logging honours the level.
    let (_, before) = s
        .send_then(json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"log","arguments":{"message":"dbg","level":"debug"}}}), 3)
        .await;
    assert!(before.is_empty(), "debug is below the default level");
    assert_eq!(
        s.request(4, "logging/setLevel", json!({"level":"debug"}))
            .await["result"],
        json!({})
    );
    let (_, before) = s
        .send_then(json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"log","arguments":{"message":"dbg","level":"debug"}}}), 5)
        .await;
    assert_eq!(before[0]["method"], "notifications/message");
    assert_eq!(before[0]["params"]["data"], "dbg");
    assert_eq!(
        s.request(6, "logging/setLevel", json!({"level":"loud"}))
            .await["error"]["code"],
        -32602
    );
    s.close().await;
}

#[tokio::test]
async fn tools_resources_prompts_completion() {
    let mut s = Raw::spawn();
    s.initialize("2025-06-18").await;
    let r = s
        .request(
            1,
            "tools/call",
            json!({"name":"add","arguments":{"a":2,"b":40}}),
        )
        .await;
    assert_eq!(r["result"]["structuredContent"], json!({"sum":42.0}));
    let r = s
        .request(
            2,
            "tools/call",
            json!({"name":"add","arguments":{"a":"2","b":40}}),
        )
        .await;
    assert_eq!(
        r["result"]["isError"], true,
        "schema violations are tool errors: {r}"
    );
    let r = s
        .request(
            3,
            "tools/call",
            json!({"name":"fail","arguments":{"reason":"nope"}}),
        )
        .await;
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(r["result"]["content"][0]["text"], "nope");
    let r = s.request(4, "tools/call", json!({"name":"missing"})).await;
    assert_eq!(code(&r), -32602);

    let r = s.request(5, "resources/list", json!({})).await;
    assert_eq!(r["result"]["resources"].as_array().unwrap().len(), 3);
    let r = s.request(6, "resources/templates/list", json!({})).await;
    assert_eq!(
        r["result"]["resourceTemplates"][0]["uriTemplate"],
        "demo://greeting/{name}"
    );
    let r = s
        .request(
            7,
            "resources/read",
            json!({"uri":"demo://greeting/Ada%20L"}),
        )
        .await;
    assert_eq!(r["result"]["contents"][0]["text"], "Hello, Ada L!");
    let r = s
        .request(8, "resources/read", json!({"uri":"demo://readme"}))
        .await;
    assert_eq!(r["result"]["contents"][0]["mimeType"], "text/plain");
    let r = s
        .request(9, "resources/read", json!({"uri":"demo://nothing/here"}))
        .await;
    assert_eq!(code(&r), -32002);
    assert_eq!(
        s.request(10, "resources/subscribe", json!({"uri":"demo://readme"}))
            .await["result"],
        json!({})
    );
    assert_eq!(
        s.request(11, "resources/unsubscribe", json!({"uri":"demo://readme"}))
            .await["result"],
        json!({})
    );

    let r = s.request(12, "prompts/list", json!({})).await;
    assert_eq!(r["result"]["prompts"].as_array().unwrap().len(), 2);
    let r = s
        .request(
            13,
            "prompts/get",
            json!({"name":"greet","arguments":{"name":"Grace"}}),
        )
        .await;
    assert_eq!(
        r["result"]["messages"][0]["content"]["text"],
        "Please greet Grace warmly."
    );
    let r = s.request(14, "prompts/get", json!({"name":"greet"})).await;
    assert_eq!(code(&r), -32602);
    let r = s.request(15, "completion/complete", json!({"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"g"}})).await;
    assert_eq!(r["result"]["completion"]["values"], json!(["Grace"]));
    let r = s.request(16, "tools/list", json!({"cursor":"bogus"})).await;
    assert_eq!(code(&r), -32602);
    s.close().await;
}

fn modern(extra: Value) -> Value {
    let mut params = json!({"_meta":{
        "io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientInfo":{"name":"modern","version":"1"},
        "io.modelcontextprotocol/clientCapabilities":{}}});
    if let (Value::Object(p), Value::Object(e)) = (&mut params, extra) {
        for (k, v) in e {
            if k == "_meta" {
                if let (Some(Value::Object(m)), Value::Object(add)) = (p.get_mut("_meta"), v) {
                    m.extend(add);
                }
            } else {
                p.insert(k, v);
            }
        }
    }
    params
}

#[tokio::test]
async fn modern_requests_without_a_handshake() {
    let mut s = Raw::spawn();
    let d = s.request(1, "server/discover", modern(json!({}))).await;
    assert_eq!(d["result"]["resultType"], "complete");
    assert_eq!(d["result"]["supportedVersions"][0], "2026-07-28");
    assert!(
        d["result"]["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2025-11-25"))
    );
    assert_eq!(
        d["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "mcp-demo"
    );
    let r = s
        .request(
            2,
            "tools/call",
            modern(json!({"name":"echo","arguments":{"message":"m"}})),
        )
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "m");
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(
        r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["version"],
        env!("CARGO_PKG_VERSION")
    );
    let r = s.request(3, "tools/list", modern(json!({}))).await;
    assert!(r["result"]["ttlMs"].as_u64().is_some());
    assert_eq!(r["result"]["cacheScope"], "public");
    // Errors of the new revision.
    let r = s
        .request(
            4,
            "tools/list",
            json!({"_meta":{"io.modelcontextprotocol/protocolVersion":"1900-01-01"}}),
        )
        .await;
    assert_eq!(code(&r), -32022);
    assert_eq!(r["error"]["data"]["requested"], "1900-01-01");
    let r = s
        .request(5, "resources/read", modern(json!({"uri":"demo://missing"})))
        .await;
    assert_eq!(
        code(&r),
        -32602,
        "resource not found is -32602 from 2026-07-28"
    );
    for (id, method) in [
        (6, "ping"),
        (7, "logging/setLevel"),
        (8, "resources/subscribe"),
    ] {
        let r = s
            .request(
                id,
                method,
                modern(json!({"uri":"demo://readme","level":"info"})),
            )
            .await;
        assert_eq!(code(&r), -32601, "{method} was removed in 2026-07-28");
    }
    // Log messages only for requests that ask, at their level.
    let (_, before) = s.send_then(json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":modern(json!({"name":"log","arguments":{"message":"x"}}))}), 9).await;
    assert!(before.is_empty());
    let (_, before) = s
        .send_then(json!({"jsonrpc":"2.0","id":10,"method":"tools/call","params":modern(json!({"name":"log","arguments":{"message":"x","level":"info"},"_meta":{"io.modelcontextprotocol/logLevel":"debug"}}))}), 10)
        .await;
    assert_eq!(before[0]["method"], "notifications/message");
    s.close().await;
}

#[tokio::test]
async fn one_process_serves_both_eras_at_once() {
    let mut s = Raw::spawn();
    // A legacy session on the connection...
    let init = s.initialize("2025-06-18").await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    // ...and modern requests interleaved with legacy ones, each answered in its own era.
    s.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"legacy"}}})).await;
    s.send(json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":modern(json!({"name":"echo","arguments":{"message":"modern"}}))})).await;
    let (a, _) = s.recv_id(json!(1)).await;
    let (b, _) = s.recv_id(json!(2)).await;
    assert_eq!(a["result"]["content"][0]["text"], "legacy");
    assert!(
        a["result"].get("resultType").is_none(),
        "legacy results keep the legacy shape"
    );
    assert_eq!(b["result"]["content"][0]["text"], "modern");
    assert_eq!(b["result"]["resultType"], "complete");
    let r = s
        .request(3, "resources/read", json!({"uri":"demo://missing"}))
        .await;
    assert_eq!(
        code(&r),
        -32002,
        "legacy resource-not-found code on the legacy session"
    );
    s.close().await;
}

/// A session holds at most 1,000 resource subscriptions (the default `max_subscriptions`); one
/// more is refused with -32602 and not stored. A `subscriptions/listen` names at most as many.
/// A resource the server does not serve is not subscribed to at all.
#[tokio::test]
async fn subscriptions_per_session_are_capped() {
    let mut s = Raw::spawn();
    s.initialize("2025-06-18").await;
    let r = s
        .request(9999, "resources/subscribe", json!({"uri":"nowhere://junk"}))
        .await;
    assert_eq!(code(&r), -32002, "{r}");
    for i in 0..1000 {
        s.send(json!({"jsonrpc":"2.0","id":i + 1,"method":"resources/subscribe","params":{"uri":format!("demo://greeting/many-{i}")}}))
            .await;
    }
    for _ in 0..1000 {
        let r = s.recv().await;
        assert_eq!(r["result"], json!({}), "{r}");
    }
    let over = json!({"uri":"demo://greeting/many-1000"});
    let r = s.request(2001, "resources/subscribe", over.clone()).await;
    assert_eq!(code(&r), -32602, "{r}");
    assert_eq!(r["error"]["data"]["limit"], 1000, "{r}");
    // Held already: not one more.
    let r = s
        .request(
            2002,
            "resources/subscribe",
            json!({"uri":"demo://greeting/many-0"}),
        )
        .await;
    assert_eq!(r["result"], json!({}), "{r}");
    // One released: room for one.
    let r = s
        .request(
            2003,
            "resources/unsubscribe",
            json!({"uri":"demo://greeting/many-0"}),
        )
        .await;
    assert_eq!(r["result"], json!({}), "{r}");
    let r = s.request(2004, "resources/subscribe", over.clone()).await;
    assert_eq!(r["result"], json!({}), "{r}");
    let r = s
        .request(
            2005,
            "resources/subscribe",
            json!({"uri":"demo://greeting/many-0"}),
        )
        .await;
    assert_eq!(code(&r), -32602, "{r}");

    let uris: Vec<String> = (0..1001).map(|i| format!("demo://listen/{i}")).collect();
    let r = s
        .request(
            2006,
            "subscriptions/listen",
            modern(json!({"notifications":{"resourceSubscriptions":uris}})),
        )
        .await;
    assert_eq!(code(&r), -32602, "{r}");
    s.close().await;
}
