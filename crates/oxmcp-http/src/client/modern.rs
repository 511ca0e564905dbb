//! 2026-07-28 requests: stateless POSTs with the standard headers (`MCP-Protocol-Version`,
//! `Mcp-Method`, `Mcp-Name`) and the `Mcp-Param-*` mirrors of tool arguments the server's
//! tool list asked for.

use std::sync::Arc;

use oxmcp_jsonrpc::{Inbound, Message};
use oxmcp_types::Tool;
use oxmcp_types::methods::{CallTool, GetPrompt, ListTools, ReadResource, Request as _};
use serde_json::Value;

use super::codec::Answer;
use super::failure::{Failure, is_sse, no_answer, read_success};
use super::{Posted, State};

/// The standard headers of a 2026-07-28 request.
pub(super) struct Standard {
    version: String,
    method: String,
    name: Option<String>,
}

/// The standard headers of an outgoing request whose `_meta` names a protocol version (the
/// 2026-07-28 era); `None` for a legacy message. Reads the params only to mirror them.
pub(super) fn headers_of(method: &str, line: &str) -> Option<Standard> {
    if !line.contains(oxmcp_types::meta_keys::PROTOCOL_VERSION) {
        return None;
    }
    let v: Value = serde_json::from_str(line).ok()?;
    let params = &v["params"];
    let version = params["_meta"][oxmcp_types::meta_keys::PROTOCOL_VERSION]
        .as_str()?
        .to_owned();
    let name = match method {
        CallTool::METHOD | GetPrompt::METHOD => params["name"].as_str().map(header_value),
        ReadResource::METHOD => params["uri"].as_str().map(header_value),
        // The tasks extension routes on the task (SEP-2663).
        "tasks/get" | "tasks/update" | "tasks/cancel" => {
            params["taskId"].as_str().map(header_value)
        }
        _ => None,
    };
    Some(Standard {
        version,
        method: method.to_owned(),
        name,
    })
}

/// A parameter value: like [`header_value`], but an empty string stays empty.
fn header_value_allow_empty(v: &str) -> String {
    if v.is_empty() {
        String::new()
    } else {
        header_value(v)
    }
}

/// `Mcp-Name` value: plain when header-safe, else the `=?base64?…?=` sentinel form.
fn header_value(v: &str) -> String {
    use base64::Engine;
    let sentinel_like = v.starts_with("=?base64?") && v.ends_with("?=");
    let plain = v.bytes().all(|b| (0x20..=0x7e).contains(&b));
    let padded = v.starts_with(' ') || v.ends_with(' ');
    let safe = !v.is_empty() && plain && !padded && !sentinel_like;
    if safe {
        v.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(v)
        )
    }
}

impl State {
    /// A 2026-07-28 request: stateless, with the standard headers; JSON or SSE answer.
    pub(super) async fn post_modern(self: &Arc<Self>, posted: &Posted, h: Standard) {
        let request = posted.request.clone();
        let mut tries = 0;
        let resp = loop {
            let resp = match self.modern_request(posted, &h).send().await {
                Ok(r) => r,
                Err(e) => return self.fail(request, no_answer(e)).await,
            };
            if self.refused_protobuf(resp.status()) {
                continue;
            }
            match self.answer_challenge(&resp, &mut tries).await {
                Ok(true) => continue,
                Ok(false) => break resp,
                Err(e) => return self.fail(request, e).await,
            }
        };
        let failure = Failure::of(&resp);
        if is_sse(&resp) {
            return self.consume_sse(resp, request, false).await;
        }
        let body = match read_success(resp, self.config.max_message).await {
            Ok(b) => b,
            Err(e) => return self.fail(request, e).await,
        };
        // Decoded once, here: the engine takes the message as it is.
        let (message, body) = match body {
            Answer::Decoded(m) => (Ok(m), String::new()),
            Answer::Text(body) => (Message::decode(body.as_bytes()), body),
        };
        if h.method == ListTools::METHOD
            && let Ok(Message::Response(oxmcp_jsonrpc::Response {
                outcome: Ok(result),
                ..
            })) = &message
        {
            self.learn_tools(result.get());
        }
        // Modern servers answer errors with a JSON-RPC body whatever the status (400, 404);
        // anything else (an empty 400 from a legacy server, say) fails the request.
        match message {
            // An error the server could not tie to an id (`"id": null`) answers this POST's
            // request: over HTTP we know which one it carried.
            Ok(Message::Response(oxmcp_jsonrpc::Response {
                id: None,
                outcome: Err(e),
            })) if request.is_some() => self.answer_error(request, e).await,
            Ok(m @ Message::Response(_)) => {
                let _ = self.to_engine.send(Inbound::decoded(m, None)).await;
            }
            _ if failure.status.is_success() && request.is_none() => {}
            _ => self.fail(request, failure.error(&body)).await,
        }
    }

    /// A 2026-07-28 POST with its standard headers.
    fn modern_request(&self, posted: &Posted, h: &Standard) -> reqwest::RequestBuilder {
        let mut req = self
            .body_of(self.http.post(&self.url), &posted.line)
            .header("mcp-protocol-version", &h.version)
            .header("mcp-method", &h.method);
        if let Some(n) = &h.name {
            req = req.header("mcp-name", n);
        }
        for (k, v) in self.param_headers(&h.method, &posted.line) {
            req = req.header(k, v);
        }
        self.credentials(req, "POST", &self.url)
    }

    /// Remembers which tool arguments are mirrored into `Mcp-Param-*` headers.
    fn learn_tools(&self, result: &str) {
        let Ok(list) = serde_json::from_str::<oxmcp_types::ListToolsResult>(result) else {
            return;
        };
        let mut map = self.tool_headers.lock();
        for t in &list.tools {
            map.insert(t.name.clone(), Tool::header_params(t));
        }
    }

    /// `Mcp-Param-{Name}` headers of a `tools/call` (values encoded as the spec says; null
    /// arguments are omitted).
    fn param_headers(&self, method: &str, line: &str) -> Vec<(String, String)> {
        if method != CallTool::METHOD {
            return Vec::new();
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            return Vec::new();
        };
        let Some(tool) = v["params"]["name"].as_str() else {
            return Vec::new();
        };
        let Some(headers) = self.tool_headers.lock().get(tool).cloned() else {
            return Vec::new();
        };
        headers
            .into_iter()
            .filter_map(|(h, prop)| {
                let value = match &v["params"]["arguments"][&prop] {
                    Value::Null => return None,
                    Value::String(s) => header_value_allow_empty(s),
                    Value::Bool(b) => b.to_string(),
                    Value::Number(n) => n.to_string(),
                    _ => return None,
                };
                Some((format!("Mcp-Param-{h}"), value))
            })
            .collect()
    }
}
