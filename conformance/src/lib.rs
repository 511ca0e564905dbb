//! The conformance fixtures: the "everything" server the official suite expects (tool,
//! resource and prompt names are the suite's contract), built on the public API.

pub mod skills;
mod tasks;

use std::collections::BTreeMap;
use std::time::Duration;

use oxmcp_jsonrpc::ErrorObject;
use oxmcp_server::{Ctx, Server, ToolFn};
use oxmcp_types::{
    CallToolResult, CompleteResult, Completion, Content, CreateMessageParams, ElicitParams,
    EmbeddedResource, GetPromptResult, InputRequest, InputRequests, JsonObject, LoggingLevel,
    MediaContent, OneOrMany, Prompt, PromptArgument, PromptMessage, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, Role, SamplingMessage, Tool,
};
use serde_json::{Value, json};

/// A 1×1 PNG.
pub const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
/// A WAV header with no samples.
pub const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEARKwAAIhYAQACABAAZGF0YQAAAAA=";

fn obj(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

fn tool(name: &str, description: &str, schema: Value) -> Tool {
    Tool::default()
        .with_name(name.to_owned())
        .with_description(Some(description.to_owned()))
        .with_input_schema(obj(schema))
}

fn no_args() -> Value {
    json!({"type": "object", "properties": {}})
}

fn handler<F, Fut>(f: F) -> ToolFn
where
    F: Fn(Ctx, JsonObject) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<CallToolResult, ErrorObject>> + Send + 'static,
{
    std::sync::Arc::new(move |ctx, args| Box::pin(f(ctx, args)))
}

fn image() -> Content {
    Content::Image(
        MediaContent::default()
            .with_data(PNG.into())
            .with_mime_type("image/png".into()),
    )
}

fn embedded(uri: &str, mime: &str, text: &str) -> Content {
    Content::Resource(EmbeddedResource {
        resource: ResourceContents::text(uri, Some(mime), text),
        annotations: None,
        meta: None,
        extra: JsonObject::new(),
    })
}

fn arg(args: &JsonObject, name: &str) -> String {
    args.get(name)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

async fn elicit(ctx: &Ctx, message: &str, schema: Value) -> Result<CallToolResult, ErrorObject> {
    let params = ElicitParams::default()
        .with_message(message.to_owned())
        .with_requested_schema(Some(obj(schema)));
    Ok(match ctx.elicit(&params).await {
        Ok(r) => CallToolResult::text(format!(
            "User response: action={}, content={}",
            serde_json::to_value(r.action)
                .unwrap_or(Value::Null)
                .as_str()
                .unwrap_or(""),
            Value::Object(r.content.unwrap_or_default())
        )),
        Err(e) => CallToolResult::error(format!("Elicitation failed: {e}")),
    })
}

fn tools(b: oxmcp_server::ServerBuilder) -> oxmcp_server::ServerBuilder {
    b.raw_tool(
        tool("test_simple_text", "Returns simple text content", no_args()),
        handler(|_, _| async { Ok(CallToolResult::text("This is a simple text response for testing.")) }),
    )
    .raw_tool(
        tool("test_image_content", "Returns image content", no_args()),
        handler(|_, _| async { Ok(CallToolResult::success(vec![image()])) }),
    )
    .raw_tool(
        tool("test_audio_content", "Returns audio content", no_args()),
        handler(|_, _| async {
            let audio = MediaContent::default().with_data(WAV.into()).with_mime_type("audio/wav".into());
            Ok(CallToolResult::success(vec![Content::Audio(audio)]))
        }),
    )
    .raw_tool(
        tool("test_embedded_resource", "Returns an embedded resource", no_args()),
        handler(|_, _| async {
            Ok(CallToolResult::success(vec![embedded(
                "test://embedded-resource",
                "text/plain",
                "This is an embedded resource content.",
            )]))
        }),
    )
    .raw_tool(
        tool("test_multiple_content_types", "Returns text, image and resource content", no_args()),
        handler(|_, _| async {
            Ok(CallToolResult::success(vec![
                Content::text("Multiple content types test:"),
                image(),
                embedded("test://mixed-content-resource", "application/json", r#"{"test":"data","value":123}"#),
            ]))
        }),
    )
    .raw_tool(
        tool("test_tool_with_logging", "Sends log messages while running", no_args()),
        handler(|ctx, _| async move {
            for (i, msg) in ["Tool execution started", "Tool processing data", "Tool execution completed"].iter().enumerate() {
                if i > 0 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                ctx.log(LoggingLevel::Info, Some("conformance"), json!(msg)).await;
            }
            Ok(CallToolResult::text("Tool with logging executed successfully"))
        }),
    )
    .raw_tool(
        tool("test_tool_with_progress", "Reports progress while running", no_args()),
        handler(|ctx, _| async move {
            for (i, p) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                if i > 0 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                ctx.progress(p, Some(100.0), None).await;
            }
            Ok(CallToolResult::text("Tool with progress executed successfully"))
        }),
    )
    .raw_tool(
        tool("test_error_handling", "Always fails with isError", no_args()),
        handler(|_, _| async { Ok(CallToolResult::error("This tool intentionally returns an error for testing")) }),
    )
    .raw_tool(
        tool(
            "test_sampling",
            "Asks the client's model",
            json!({"type":"object","properties":{"prompt":{"type":"string","description":"The prompt"}},"required":["prompt"]}),
        ),
        handler(|ctx, args| async move {
            let params = CreateMessageParams {
                messages: vec![SamplingMessage::new(Role::User, OneOrMany::One(Content::text(arg(&args, "prompt"))))],
                model_preferences: None,
                system_prompt: None,
                include_context: None,
                temperature: None,
                max_tokens: 100,
                stop_sequences: None,
                metadata: None,
                tools: None,
                tool_choice: None,
                meta: None,
                extra: JsonObject::new(),
            };
            Ok(match ctx.create_message(&params).await {
                Ok(r) => {
                    let text = match &r.content {
                        OneOrMany::One(c) => c.as_text().unwrap_or_default().to_owned(),
                        OneOrMany::Many(cs) => cs.iter().filter_map(Content::as_text).collect::<Vec<_>>().join(""),
                    };
                    CallToolResult::text(format!("LLM response: {text}"))
                }
                Err(e) => CallToolResult::error(format!("Sampling failed: {e}")),
            })
        }),
    )
    .raw_tool(
        tool(
            "test_elicitation",
            "Asks the user for input",
            json!({"type":"object","properties":{"message":{"type":"string","description":"What to ask"}},"required":["message"]}),
        ),
        handler(|ctx, args| async move {
            let schema = json!({"type":"object","properties":{
                "username":{"type":"string","description":"User's response"},
                "email":{"type":"string","description":"User's email address"}},
                "required":["username","email"]});
            elicit(&ctx, &arg(&args, "message"), schema).await
        }),
    )
    .raw_tool(
        tool("test_elicitation_sep1034_defaults", "Elicitation with default values (SEP-1034)", no_args()),
        handler(|ctx, _| async move {
            let schema = json!({"type":"object","properties":{
                "name":{"type":"string","description":"User name","default":"John Doe"},
                "age":{"type":"integer","description":"User age","default":30},
                "score":{"type":"number","description":"User score","default":95.5},
                "status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},
                "verified":{"type":"boolean","description":"Verification status","default":true}},
                "required":[]});
            elicit(&ctx, "Please review and update the form fields with defaults", schema).await
        }),
    )
    .raw_tool(
        tool("test_elicitation_sep1330_enums", "Elicitation with enum schemas (SEP-1330)", no_args()),
        handler(|ctx, _| async move {
            let schema = json!({"type":"object","properties":{
                "untitledSingle":{"type":"string","description":"Untitled single-select","enum":["option1","option2","option3"]},
                "titledSingle":{"type":"string","description":"Titled single-select","oneOf":[
                    {"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
                "legacyEnum":{"type":"string","description":"Legacy titled enum","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
                "untitledMulti":{"type":"array","description":"Untitled multi-select","items":{"type":"string","enum":["option1","option2","option3"]}},
                "titledMulti":{"type":"array","description":"Titled multi-select","items":{"anyOf":[
                    {"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}},
                "required":[]});
            elicit(&ctx, "Please select options from the enum fields", schema).await
        }),
    )
    .raw_tool(
        tool(
            "json_schema_2020_12_tool",
            "Tool with a JSON Schema 2020-12 input schema",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"},
                    "email": {"type": "string"}
                },
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false
            }),
        ),
        handler(|_, args| async move { Ok(CallToolResult::text(format!("Received: {}", Value::Object(args)))) }),
    )
    .raw_tool(
        tool("test_reconnection", "Closes its SSE stream mid-call; the result arrives after the client reconnects", no_args()),
        handler(|ctx, _| async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            ctx.peer().close_stream().await;
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok(CallToolResult::text("Reconnection test completed successfully"))
        }),
    )
}

fn elicit_request(message: &str, field: &str, kind: &str) -> InputRequest {
    InputRequest {
        method: "elicitation/create".into(),
        params: Some(json!({"message": message, "requestedSchema": {
            "type": "object", "properties": {field: {"type": kind}}, "required": [field]}})),
    }
}

fn sample_request(text: &str, max_tokens: u64) -> InputRequest {
    InputRequest {
        method: "sampling/createMessage".into(),
        params: Some(
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": text}}], "maxTokens": max_tokens}),
        ),
    }
}

fn roots_request() -> InputRequest {
    InputRequest {
        method: "roots/list".into(),
        params: Some(json!({})),
    }
}

/// Runs `request_inputs`; `Err` carries the tool result for the failure (the router answers
/// `input_required` or the capability error instead when that is what happened).
async fn inputs(
    ctx: &Ctx,
    requests: Vec<(&str, InputRequest)>,
) -> Result<JsonObject, CallToolResult> {
    let map: InputRequests = requests
        .into_iter()
        .map(|(k, r)| (k.to_owned(), r))
        .collect();
    ctx.request_inputs(map)
        .await
        .map_err(|e| CallToolResult::error(e.to_string()))
}

fn sampled_text(v: &Value) -> String {
    v["content"]["text"].as_str().unwrap_or_default().to_owned()
}

/// Tools of the 2026-07-28 suite: multi round-trip requests and diagnostics.
fn modern_tools(b: oxmcp_server::ServerBuilder) -> oxmcp_server::ServerBuilder {
    let t = |name: &str, desc: &str| tool(name, desc, no_args());
    b.raw_tool(
        t("test_input_required_result_elicitation", "Asks for a name (multi round-trip)"),
        handler(|ctx, _| async move {
            let a = match inputs(&ctx, vec![("user_name", elicit_request("What is your name?", "name", "string"))]).await {
                Ok(a) => a,
                Err(r) => return Ok(r),
            };
            let name = a["user_name"]["content"]["name"].as_str().unwrap_or("stranger").to_owned();
            Ok(CallToolResult::text(format!("Hello, {name}!")))
        }),
    )
    .raw_tool(
        t("test_input_required_result_sampling", "Asks the model a question (multi round-trip)"),
        handler(|ctx, _| async move {
            match inputs(&ctx, vec![("capital_question", sample_request("What is the capital of France?", 100))]).await {
                Ok(a) => Ok(CallToolResult::text(format!("The model said: {}", sampled_text(&a["capital_question"])))),
                Err(r) => Ok(r),
            }
        }),
    )
    .raw_tool(
        t("test_input_required_result_list_roots", "Asks for the client's roots (multi round-trip)"),
        handler(|ctx, _| async move {
            match inputs(&ctx, vec![("client_roots", roots_request())]).await {
                Ok(a) => {
                    let roots: Vec<&str> = a["client_roots"]["roots"].as_array().map(|r| r.iter().filter_map(|r| r["uri"].as_str()).collect()).unwrap_or_default();
                    Ok(CallToolResult::text(format!("Roots: {}", roots.join(", "))))
                }
                Err(r) => Ok(r),
            }
        }),
    )
    .raw_tool(
        t("test_input_required_result_request_state", "Round-trips requestState (multi round-trip)"),
        handler(|ctx, _| async move {
            match inputs(&ctx, vec![("confirm", elicit_request("Please confirm", "ok", "boolean"))]).await {
                // requestState is verified (HMAC) before the handler runs again.
                Ok(a) => Ok(CallToolResult::text(format!("state-ok: confirmed={}", a["confirm"]["content"]["ok"]))),
                Err(r) => Ok(r),
            }
        }),
    )
    .raw_tool(
        t("test_input_required_result_multiple_inputs", "Asks for three inputs at once (multi round-trip)"),
        handler(|ctx, _| async move {
            let asked = vec![
                ("user_name", elicit_request("What is your name?", "name", "string")),
                ("greeting", sample_request("Generate a greeting", 50)),
                ("client_roots", roots_request()),
            ];
            match inputs(&ctx, asked).await {
                Ok(a) => Ok(CallToolResult::text(format!(
                    "name={} greeting={} roots={}",
                    a["user_name"]["content"]["name"],
                    sampled_text(&a["greeting"]),
                    a["client_roots"]["roots"].as_array().map_or(0, Vec::len)
                ))),
                Err(r) => Ok(r),
            }
        }),
    )
    .raw_tool(
        t("test_input_required_result_multi_round", "Asks in two rounds (multi round-trip)"),
        handler(|ctx, _| async move {
            let a = match inputs(&ctx, vec![("step1", elicit_request("Step 1: What is your name?", "name", "string"))]).await {
                Ok(a) => a,
                Err(r) => return Ok(r),
            };
            let b = match inputs(&ctx, vec![("step2", elicit_request("Step 2: What is your favorite color?", "color", "string"))]).await {
                Ok(b) => b,
                Err(r) => return Ok(r),
            };
            Ok(CallToolResult::text(format!(
                "name={} color={}",
                a["step1"]["content"]["name"], b["step2"]["content"]["color"]
            )))
        }),
    )
    .raw_tool(
        t("test_input_required_result_tampered_state", "Signs its requestState (multi round-trip)"),
        handler(|ctx, _| async move {
            match inputs(&ctx, vec![("confirm", elicit_request("Please confirm", "ok", "boolean"))]).await {
                Ok(_) => Ok(CallToolResult::text("state-ok")),
                Err(r) => Ok(r),
            }
        }),
    )
    .raw_tool(
        t("test_input_required_result_capabilities", "Asks only for what the client supports"),
        handler(|ctx, _| async move {
            let caps = ctx.client_capabilities();
            let mut asked = Vec::new();
            if caps.sampling.is_some() {
                asked.push(("capital_question", sample_request("What is the capital of France?", 100)));
            }
            if caps.elicitation.is_some() {
                asked.push(("user_name", elicit_request("What is your name?", "name", "string")));
            }
            if caps.roots.is_some() {
                asked.push(("client_roots", roots_request()));
            }
            if asked.is_empty() {
                return Ok(CallToolResult::text("no input capabilities declared"));
            }
            match inputs(&ctx, asked).await {
                Ok(a) => Ok(CallToolResult::text(format!("answered: {}", a.len()))),
                Err(r) => Ok(r),
            }
        }),
    )
    .raw_tool(
        t("test_missing_capability", "Needs sampling; a client without it gets -32021"),
        handler(|ctx, _| async move {
            match inputs(&ctx, vec![("sample", sample_request("Hello", 10))]).await {
                Ok(a) => Ok(CallToolResult::text(sampled_text(&a["sample"]))),
                Err(r) => Ok(r),
            }
        }),
    )
    .raw_tool(
        t("test_streaming_elicitation", "Reports progress, then asks for input"),
        handler(|ctx, _| async move {
            ctx.progress(1.0, Some(2.0), Some("asking".into())).await;
            match inputs(&ctx, vec![("answer", elicit_request("Anything to add?", "text", "string"))]).await {
                Ok(_) => Ok(CallToolResult::text("thanks")),
                Err(r) => Ok(r),
            }
        }),
    )
    .raw_tool(
        tool(
            "test_custom_header",
            "Echoes a region that is mirrored in the Mcp-Param-Region header",
            json!({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}, "required": ["region"]}),
        ),
        handler(|_, args| async move { Ok(CallToolResult::text(format!("region={}", arg(&args, "region")))) }),
    )
    .raw_tool(
        t("test_trigger_tool_change", "Adds a tool, so subscribers hear tools/list_changed"),
        handler(|ctx, _| async move {
            let added = tool("test_dynamic_tool", "Added at run time", no_args());
            let echo = handler(|_, _| async { Ok(CallToolResult::text("dynamic")) });
            ctx.server().add_tool(added, echo).map_err(|e| ErrorObject::internal(e.to_string()))?;
            Ok(CallToolResult::text("tool list changed"))
        }),
    )
    .raw_tool(
        t("test_trigger_prompt_change", "Adds a prompt, so subscribers hear prompts/list_changed"),
        handler(|ctx, _| async move {
            let p = prompt("test_dynamic_prompt", "Added at run time", &[]);
            let render: oxmcp_server::PromptFn = std::sync::Arc::new(|_, _| {
                Box::pin(async { Ok(messages(vec![PromptMessage::text(Role::User, "dynamic")])) })
            });
            ctx.server().add_prompt(p, render);
            Ok(CallToolResult::text("prompt list changed"))
        }),
    )
    .raw_tool(
        t("test_logging_tool", "Logs at info (only sent when the request asks for logs)"),
        handler(|ctx, _| async move {
            ctx.log(LoggingLevel::Info, Some("conformance"), json!("a log message")).await;
            Ok(CallToolResult::text("logged"))
        }),
    )
}

fn text_contents(uri: String, mime: &str, text: String) -> ReadResourceResult {
    ReadResourceResult::default().with_contents(vec![ResourceContents::text(uri, Some(mime), text)])
}

fn resource(uri: &str, name: &str, description: &str, mime: &str) -> Resource {
    Resource::default()
        .with_uri(uri.into())
        .with_name(name.into())
        .with_description(Some(description.into()))
        .with_mime_type(Some(mime.into()))
}

fn resources(b: oxmcp_server::ServerBuilder) -> oxmcp_server::ServerBuilder {
    b.resource(
        resource(
            "test://static-text",
            "Static Text Resource",
            "A static text resource for testing",
            "text/plain",
        ),
        |_, uri| async move {
            Ok(text_contents(
                uri,
                "text/plain",
                "This is the content of the static text resource.".into(),
            ))
        },
    )
    .resource(
        resource(
            "test://static-binary",
            "Static Binary Resource",
            "A static binary resource (image) for testing",
            "image/png",
        ),
        |_, uri| async move {
            Ok(ReadResourceResult::default().with_contents(vec![
                ResourceContents::default()
                    .with_uri(uri)
                    .with_mime_type(Some("image/png".into()))
                    .with_blob(Some(PNG.into())),
            ]))
        },
    )
    .resource(
        resource(
            "test://watched-resource",
            "Watched Resource",
            "A resource that can be subscribed to",
            "text/plain",
        ),
        |_, uri| async move {
            Ok(text_contents(
                uri,
                "text/plain",
                "Watched resource content".into(),
            ))
        },
    )
    .resource_template(
        ResourceTemplate::default()
            .with_uri_template("test://template/{id}/data".into())
            .with_name("Resource Template".into())
            .with_description(Some("A resource template with a parameter".into()))
            .with_mime_type(Some("application/json".into())),
        |_, uri, vars: BTreeMap<String, String>| async move {
            let id = vars.get("id").cloned().unwrap_or_default();
            let body =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            Ok(text_contents(uri, "application/json", body.to_string()))
        },
    )
}

fn prompt(name: &str, description: &str, args: &[&str]) -> Prompt {
    Prompt::default()
        .with_name(name.into())
        .with_description(Some(description.into()))
        .with_arguments((!args.is_empty()).then(|| {
            args.iter()
                .map(|a| {
                    PromptArgument::default()
                        .with_name((*a).into())
                        .with_description(Some(format!("Argument {a}")))
                        .with_required(Some(true))
                })
                .collect()
        }))
}

fn messages(messages: Vec<PromptMessage>) -> GetPromptResult {
    GetPromptResult::default().with_messages(messages)
}

fn prompts(b: oxmcp_server::ServerBuilder) -> oxmcp_server::ServerBuilder {
    b.prompt(
        prompt(
            "test_simple_prompt",
            "A simple prompt without arguments",
            &[],
        ),
        |_, _| async {
            Ok(messages(vec![PromptMessage::text(
                Role::User,
                "This is a simple prompt for testing.",
            )]))
        },
    )
    .prompt(
        prompt(
            "test_prompt_with_arguments",
            "A prompt with required arguments",
            &["arg1", "arg2"],
        ),
        |_, args| async move {
            let get = |k: &str| args.get(k).cloned().unwrap_or_default();
            Ok(messages(vec![PromptMessage::text(
                Role::User,
                format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    get("arg1"),
                    get("arg2")
                ),
            )]))
        },
    )
    .prompt(
        prompt(
            "test_prompt_with_embedded_resource",
            "A prompt with an embedded resource",
            &["resourceUri"],
        ),
        |_, args| async move {
            let uri = args.get("resourceUri").cloned().unwrap_or_default();
            Ok(messages(vec![
                PromptMessage {
                    role: Role::User,
                    content: embedded(&uri, "text/plain", "Embedded resource content for testing."),
                    extra: JsonObject::new(),
                },
                PromptMessage::text(Role::User, "Please process the embedded resource above."),
            ]))
        },
    )
    .prompt(
        prompt(
            "test_input_required_result_prompt",
            "A prompt that asks for context (multi round-trip)",
            &[],
        ),
        |ctx, _| async move {
            let asked: InputRequests = [(
                "user_context".to_owned(),
                elicit_request("What context should the prompt use?", "context", "string"),
            )]
            .into();
            match ctx.request_inputs(asked).await {
                Ok(a) => {
                    let context = a["user_context"]["content"]["context"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    Ok(messages(vec![PromptMessage::text(
                        Role::User,
                        format!("Use this context: {context}"),
                    )]))
                }
                // The router answers input_required (or the capability error) instead.
                Err(e) => Err(ErrorObject::internal(e.to_string())),
            }
        },
    )
    .prompt(
        prompt("test_prompt_with_image", "A prompt with an image", &[]),
        |_, _| async {
            Ok(messages(vec![
                PromptMessage {
                    role: Role::User,
                    content: image(),
                    extra: JsonObject::new(),
                },
                PromptMessage::text(Role::User, "Please analyze the image above."),
            ]))
        },
    )
}

/// The fixture server.
///
/// # Errors
/// Only if a fixture definition is invalid (a bug caught by the tests).
pub fn server() -> Result<Server, oxmcp_server::BuildError> {
    let b = Server::builder("mcp-conformance-test-server", "1.0.0");
    tasks::tools(skills::add(prompts(resources(modern_tools(tools(b))))))
        .completion(|_, _| async {
            Ok::<_, ErrorObject>(
                CompleteResult::default().with_completion(
                    Completion::default()
                        .with_values(Vec::new())
                        .with_total(Some(0))
                        .with_has_more(Some(false)),
                ),
            )
        })
        .build()
}
