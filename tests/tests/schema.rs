//! What our server and client put on the wire validates against the `schema.json` of the
//! protocol version in use.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use oxmcp_client::{Client, ClientConfig, ClientHandlers};
use oxmcp_tests::Raw;
use oxmcp_types::{JsonObject, ProtocolVersion};
use serde_json::{Value, json};

struct SpecSchema {
    doc: Value,
    defs_key: &'static str,
}

impl SpecSchema {
    fn load(version: &str) -> Self {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../spec")
            .join(version)
            .join("schema/schema.json");
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let defs_key = if doc.get("$defs").is_some() {
            "$defs"
        } else {
            "definitions"
        };
        SpecSchema { doc, defs_key }
    }

    fn check(&self, def: &str, instance: &Value) {
        assert!(
            self.doc[self.defs_key].get(def).is_some(),
            "no definition {def}"
        );
        let mut schema = self.doc.clone();
        schema["$ref"] = json!(format!("#/{}/{def}", self.defs_key));
        let v = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = v
            .iter_errors(instance)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{def} does not validate: {errors:?}\n{instance}"
        );
    }
}

#[tokio::test]
async fn server_output_validates_for_every_legacy_version() {
    for version in ProtocolVersion::LEGACY {
        let schema = SpecSchema::load(version.as_str());
        let mut s = Raw::spawn();
        let init = s.initialize(version.as_str()).await;
        schema.check("InitializeResult", &init["result"]);
        let mut id = 10;
        let mut call = |method: &'static str, params: Value, def: &'static str| {
            id += 1;
            (id, method, params, def)
        };
        let requests = vec![
            call("ping", json!({}), "EmptyResult"),
            call("tools/list", json!({}), "ListToolsResult"),
            call(
                "tools/call",
                json!({"name":"echo","arguments":{"message":"hi"}}),
                "CallToolResult",
            ),
            call(
                "tools/call",
                json!({"name":"fail","arguments":{}}),
                "CallToolResult",
            ),
            call(
                "tools/call",
                json!({"name":"echo","arguments":{}}),
                "CallToolResult",
            ),
            call("resources/list", json!({}), "ListResourcesResult"),
            call(
                "resources/templates/list",
                json!({}),
                "ListResourceTemplatesResult",
            ),
            call(
                "resources/read",
                json!({"uri":"demo://readme"}),
                "ReadResourceResult",
            ),
            call(
                "resources/read",
                json!({"uri":"demo://greeting/x"}),
                "ReadResourceResult",
            ),
            call(
                "resources/subscribe",
                json!({"uri":"demo://readme"}),
                "EmptyResult",
            ),
            call("prompts/list", json!({}), "ListPromptsResult"),
            call(
                "prompts/get",
                json!({"name":"greet","arguments":{"name":"x"}}),
                "GetPromptResult",
            ),
            call(
                "completion/complete",
                json!({"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"a"}}),
                "CompleteResult",
            ),
            call("logging/setLevel", json!({"level":"debug"}), "EmptyResult"),
        ];
        for (id, method, params, def) in requests {
            let r = s.request(id, method, params).await;
            assert!(r.get("result").is_some(), "{version} {method}: {r}");
            schema.check(def, &r["result"]);
        }
        if version.has(oxmcp_types::Feature::StructuredOutput) {
            let r = s
                .request(
                    50,
                    "tools/call",
                    json!({"name":"add","arguments":{"a":1,"b":2}}),
                )
                .await;
            schema.check("CallToolResult", &r["result"]);
        }
        s.send(json!({"jsonrpc":"2.0","id":60,"method":"tools/call","params":{"name":"slow","arguments":{"steps":1,"delay_ms":1},"_meta":{"progressToken":1}}})).await;
        let (_, notes) = s.recv_id(json!(60)).await;
        schema.check("ProgressNotification", &notes[0]);
        s.send(json!({"jsonrpc":"2.0","id":61,"method":"tools/call","params":{"name":"log","arguments":{"message":"m"}}})).await;
        let (_, notes) = s.recv_id(json!(61)).await;
        schema.check("LoggingMessageNotification", &notes[0]);
        let r = s.request(62, "nope", json!({})).await;
        let error_def = if schema.doc[schema.defs_key].get("JSONRPCError").is_some() {
            "JSONRPCError"
        } else {
            "JSONRPCErrorResponse"
        };
        schema.check(error_def, &r);
        s.close().await;
    }
}

#[tokio::test]
async fn client_output_validates() {
    use tokio::sync::mpsc;
    for version in ProtocolVersion::LEGACY {
        let schema = SpecSchema::load(version.as_str());
        let (to_client, client_in) = mpsc::channel::<oxmcp_jsonrpc::Inbound>(16);
        let (client_out, mut from_client) = mpsc::channel::<oxmcp_jsonrpc::Outbound>(16);
        let config = ClientConfig::default().protocol_version(version);
        let handlers = ClientHandlers::new()
            .roots(|| async { Ok(Default::default()) })
            .sampling(|_| async { Err(oxmcp_jsonrpc::ErrorObject::internal("no model")) });
        let connect = tokio::spawn(Client::connect(client_in, client_out, handlers, config));
        let init: Value =
            serde_json::from_str(from_client.recv().await.unwrap().line().unwrap()).unwrap();
        schema.check("InitializeRequest", &init);
        let reply = json!({"jsonrpc":"2.0","id":init["id"],"result":{
            "protocolVersion": version.as_str(), "capabilities": {"tools":{}},
            "serverInfo": {"name":"fake","version":"1"}}});
        to_client
            .send(reply.to_string().into_bytes().into())
            .await
            .unwrap();
        let initialized: Value =
            serde_json::from_str(from_client.recv().await.unwrap().line().unwrap()).unwrap();
        schema.check("InitializedNotification", &initialized);
        let client = connect.await.unwrap().unwrap();
        let call = tokio::spawn(async move {
            let mut args = JsonObject::new();
            args.insert("message".into(), json!("x"));
            client.call_tool("echo", args).await.map(|_| client)
        });
        let req: Value =
            serde_json::from_str(from_client.recv().await.unwrap().line().unwrap()).unwrap();
        schema.check("CallToolRequest", &req);
        let reply = json!({"jsonrpc":"2.0","id":req["id"],"result":{"content":[{"type":"text","text":"x"}]}});
        to_client
            .send(reply.to_string().into_bytes().into())
            .await
            .unwrap();
        call.await.unwrap().unwrap();
        // A server-to-client request: the client's answer validates too.
        to_client
            .send(
                json!({"jsonrpc":"2.0","id":"r1","method":"roots/list"})
                    .to_string()
                    .into_bytes()
                    .into(),
            )
            .await
            .unwrap();
        let answer: Value =
            serde_json::from_str(from_client.recv().await.unwrap().line().unwrap()).unwrap();
        schema.check("ListRootsResult", &answer["result"]);
    }
}

fn modern_params(extra: Value) -> Value {
    let mut p = json!({"_meta":{
        "io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientInfo":{"name":"modern","version":"1"},
        "io.modelcontextprotocol/clientCapabilities":{},
        "io.modelcontextprotocol/logLevel":"debug",
        "progressToken":"p"}});
    if let (Value::Object(p), Value::Object(e)) = (&mut p, extra) {
        p.extend(e);
    }
    p
}

#[tokio::test]
async fn modern_server_output_validates_against_2026_07_28() {
    let schema = SpecSchema::load("2026-07-28");
    let mut s = Raw::spawn();
    let cases = [
        ("server/discover", json!({}), "DiscoverResult"),
        ("tools/list", json!({}), "ListToolsResult"),
        (
            "tools/call",
            json!({"name":"echo","arguments":{"message":"hi"}}),
            "CallToolResult",
        ),
        (
            "tools/call",
            json!({"name":"add","arguments":{"a":1,"b":2}}),
            "CallToolResult",
        ),
        (
            "tools/call",
            json!({"name":"fail","arguments":{}}),
            "CallToolResult",
        ),
        ("resources/list", json!({}), "ListResourcesResult"),
        (
            "resources/templates/list",
            json!({}),
            "ListResourceTemplatesResult",
        ),
        (
            "resources/read",
            json!({"uri":"demo://readme"}),
            "ReadResourceResult",
        ),
        ("prompts/list", json!({}), "ListPromptsResult"),
        (
            "prompts/get",
            json!({"name":"greet","arguments":{"name":"x"}}),
            "GetPromptResult",
        ),
        (
            "completion/complete",
            json!({"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"a"}}),
            "CompleteResult",
        ),
    ];
    for (i, (method, params, def)) in cases.into_iter().enumerate() {
        let r = s
            .request(100 + i as i64, method, modern_params(params))
            .await;
        assert!(r.get("result").is_some(), "{method}: {r}");
        schema.check(def, &r["result"]);
    }
    s.send(json!({"jsonrpc":"2.0","id":200,"method":"tools/call","params":modern_params(json!({"name":"slow","arguments":{"steps":1,"delay_ms":1}}))})).await;
    let (_, notes) = s.recv_id(json!(200)).await;
    schema.check("ProgressNotification", &notes[0]);
    s.send(json!({"jsonrpc":"2.0","id":201,"method":"tools/call","params":modern_params(json!({"name":"log","arguments":{"message":"m"}}))})).await;
    let (_, notes) = s.recv_id(json!(201)).await;
    schema.check("LoggingMessageNotification", &notes[0]);
    let r = s
        .request(
            202,
            "tools/list",
            json!({"_meta":{"io.modelcontextprotocol/protocolVersion":"1900-01-01"}}),
        )
        .await;
    schema.check("UnsupportedProtocolVersionError", &r);
    s.close().await;
}
