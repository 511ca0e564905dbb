//! The one answer of the floors (`bare_echo`, `bare_http`, `bare_ws`, `bare_grpc`): a
//! JSON-RPC result echoing the request id, good for both `initialize` and `tools/call`, its
//! text the request's `params.arguments.message` (or "hello"). No MCP machinery, no
//! sessions.

/// The answer to one JSON-RPC message; `None` for a notification. `Err` for bytes that
/// are not JSON.
pub(crate) fn answer(body: &[u8]) -> Result<Option<String>, ()> {
    let msg = serde_json::from_slice::<serde_json::Value>(body).map_err(|_| ())?;
    let Some(id) = msg.get("id") else {
        return Ok(None);
    };
    let text = msg["params"]["arguments"]["message"]
        .as_str()
        .unwrap_or("hello");
    let reply = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "bare", "version": "0"},
        "content": [{"type": "text", "text": text}],
    }});
    Ok(Some(reply.to_string()))
}
