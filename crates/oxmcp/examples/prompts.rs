//! Run with: cargo run -p oxmcp --example prompts
//!
//! Prompts with a required and an optional argument: the client lists them and gets one
//! with and without the optional argument; a get missing the required one is refused by
//! the server before the renderer runs. Both protocol eras, over Streamable HTTP.

use std::collections::BTreeMap;

use oxmcp::client::{ClientConfig, EraChoice};
use oxmcp::jsonrpc::ErrorObject;
use oxmcp::remote::{Remote, connect};
use oxmcp::server::{Ctx, Server};
use oxmcp::types::{GetPromptResult, Prompt, PromptArgument, PromptMessage, Role};

fn argument(name: &str, required: bool) -> PromptArgument {
    PromptArgument::default()
        .with_name(name.into())
        .with_required(Some(required))
}

async fn review(_: Ctx, args: BTreeMap<String, String>) -> Result<GetPromptResult, ErrorObject> {
    let code = args.get("code").map_or("", String::as_str);
    let style = args.get("style").map_or("friendly", String::as_str);
    Ok(GetPromptResult::default()
        .with_description(Some("A code review request".into()))
        .with_messages(vec![PromptMessage::text(
            Role::User,
            format!("Review this code in a {style} tone:\n{code}"),
        )]))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let prompt = Prompt::default()
        .with_name("code_review".into())
        .with_description(Some("Asks for a review of some code".into()))
        .with_arguments(Some(vec![argument("code", true), argument("style", false)]));
    let server = Server::builder("prompts-example", "1.0.0")
        .prompt(prompt, review)
        .build()?;
    let http = oxmcp::http::StreamableHttp::new(server, Default::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));

    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let client = ClientConfig::default().era(era);
        let client = connect(&url, Remote::default().client(client)).await?;
        for p in client.list_prompts(None).await?.prompts {
            let args = p.arguments.unwrap_or_default().into_iter();
            let args: Vec<_> = args.map(|a| (a.name, a.required == Some(true))).collect();
            println!(
                "{era:?}: prompt {} with arguments (name, required) {args:?}",
                p.name
            );
        }
        let mut args = BTreeMap::from([("code".to_owned(), "fn main() {}".to_owned())]);
        let plain = client.get_prompt("code_review", args.clone()).await?;
        args.insert("style".into(), "terse".into());
        let terse = client.get_prompt("code_review", args).await?;
        for got in [&plain, &terse] {
            let text = got.messages.first().and_then(|m| m.content.as_text());
            println!("{era:?}: {:?}", text.unwrap_or_default());
        }
        let said = |r: &GetPromptResult, what: &str| {
            r.messages
                .first()
                .and_then(|m| m.content.as_text())
                .is_some_and(|t| t.contains(what))
        };
        if !said(&plain, "friendly") || !said(&terse, "terse") {
            return Err("the prompt did not use its arguments".into());
        }
        match client.get_prompt("code_review", BTreeMap::new()).await {
            Ok(r) => return Err(format!("a get without `code` succeeded: {r:?}").into()),
            Err(e) => println!("{era:?}: without `code`: {e}"),
        }
        client.close().await;
    }
    Ok(())
}
