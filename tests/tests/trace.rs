//! The gateway passes the caller's W3C trace context (`_meta.traceparent`, `tracestate`) on
//! to the upstream: through `oxmcp serve -- CMD`, to a stdio server that reports the `_meta`
//! it was called with.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

/// A stdio server whose tool `meta` answers with the `_meta` of its call.
const REPORTER: &str = r#"
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
             "serverInfo": {"name": "reporter", "version": "1"}}
    elif m["method"] == "tools/list":
        r = {"tools": [{"name": "meta", "inputSchema": {"type": "object"}}]}
    elif m["method"] == "tools/call":
        meta = m["params"].get("_meta", {})
        r = {"content": [{"type": "text", "text": json.dumps(meta)}]}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"],
                          "error": {"code": -32601, "message": "no"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
"#;

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

async fn upstream_meta(session: &oxmcp_tests::HttpSession, meta: Value) -> Value {
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "meta", "arguments": {}, "_meta": meta}});
    let (status, messages) = session.post(call.to_string().as_bytes()).await;
    assert_eq!(status, 200);
    let answer = messages.iter().find(|m| m["id"] == 1).unwrap();
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    serde_json::from_str(text).unwrap()
}

#[tokio::test]
async fn the_gateway_passes_the_trace_context_on() {
    let (_child, url) =
        oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0", "--", "python3", "-c", REPORTER])
            .await;
    let session = oxmcp_tests::HttpSession::open(&url, "2025-11-25").await;
    let seen = upstream_meta(
        &session,
        json!({"traceparent": PARENT, "tracestate": "congo=t61rcWkgMzE"}),
    )
    .await;
    assert_eq!(seen["traceparent"], PARENT, "{seen}");
    assert_eq!(seen["tracestate"], "congo=t61rcWkgMzE", "{seen}");
    // A malformed traceparent is not passed on.
    let seen = upstream_meta(&session, json!({"traceparent": "00-nonsense"})).await;
    assert!(seen.get("traceparent").is_none(), "{seen}");
}
