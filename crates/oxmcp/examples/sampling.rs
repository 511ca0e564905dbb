//! Run with: cargo run -p oxmcp --example sampling
//!
//! Sampling: a tool asks the client's model for a completion with `ctx.create_message`;
//! the client's sampling handler (a stand-in for a real model here) answers. In the legacy
//! era that is a server-to-client request; in 2026-07-28 an `input_required` round that the
//! client answers and retries by itself. The tool's code is the same for both.

use oxmcp::client::{ClientConfig, ClientHandlers, EraChoice};
use oxmcp::remote::{Remote, connect};
use oxmcp::server::{Ctx, Server};
use oxmcp::types::{
    Content, CreateMessageParams, CreateMessageResult, JsonObject, OneOrMany, Role, SamplingMessage,
};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Summarize {
    /// The text to summarize.
    text: String,
}

fn first_text(content: &OneOrMany<Content>) -> String {
    let first = match content {
        OneOrMany::One(c) => Some(c),
        OneOrMany::Many(cs) => cs.first(),
    };
    first
        .and_then(Content::as_text)
        .unwrap_or_default()
        .to_owned()
}

async fn summarize(ctx: Ctx, a: Summarize) -> Result<String, String> {
    let params = CreateMessageParams {
        messages: vec![SamplingMessage::new(
            Role::User,
            OneOrMany::One(Content::text(format!("Summarize: {}", a.text))),
        )],
        model_preferences: None,
        system_prompt: Some("You write one-line summaries.".into()),
        include_context: None,
        temperature: None,
        max_tokens: 50,
        stop_sequences: None,
        metadata: None,
        tools: None,
        tool_choice: None,
        meta: None,
        extra: JsonObject::new(),
    };
    let answer = ctx
        .create_message(&params)
        .await
        .map_err(|e| e.to_string())?;
    Ok(format!(
        "{} says: {}",
        answer.model,
        first_text(&answer.content)
    ))
}

/// The client's "model": echoes the words of the request, capitalized.
async fn model(p: CreateMessageParams) -> Result<CreateMessageResult, oxmcp::jsonrpc::ErrorObject> {
    let asked = p
        .messages
        .first()
        .map(|m| first_text(&m.content))
        .unwrap_or_default();
    println!(
        "  the client is asked to sample {asked:?} (max {} tokens)",
        p.max_tokens
    );
    let reply = asked.trim_start_matches("Summarize: ").to_uppercase();
    Ok(
        CreateMessageResult::new("shouty-1", OneOrMany::One(Content::text(reply)))
            .with_role(Role::Assistant)
            .with_stop_reason(Some("endTurn".into())),
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("sampling-example", "1.0.0")
        .tool(
            "summarize",
            "Summarizes text with the client's model",
            summarize,
        )
        .build()?;
    let http = oxmcp::http::StreamableHttp::new(server, Default::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));

    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let handlers = ClientHandlers::new().sampling(model);
        let client = ClientConfig::default().era(era);
        let client = connect(&url, Remote::default().handlers(handlers).client(client)).await?;
        let mut args = JsonObject::new();
        args.insert("text".into(), "the meeting moved to friday".into());
        let result = client.call_tool("summarize", args).await?;
        let text = result
            .content
            .first()
            .and_then(Content::as_text)
            .unwrap_or_default();
        println!("{era:?}: {text}");
        if text != "shouty-1 says: THE MEETING MOVED TO FRIDAY" {
            return Err(format!("{era:?}: unexpected result {result:?}").into());
        }
        client.close().await;
    }
    Ok(())
}
