//! Run with: cargo run -p oxmcp --example completion
//!
//! `completion/complete`: the server suggests values for a prompt argument and for a
//! resource template variable (using the other arguments already filled in as context),
//! and the client asks for both, in each protocol era, over Streamable HTTP.

use std::collections::BTreeMap;

use oxmcp::client::{ClientConfig, EraChoice};
use oxmcp::jsonrpc::ErrorObject;
use oxmcp::remote::{Remote, connect};
use oxmcp::server::{Ctx, Server};
use oxmcp::types::{
    CompleteParams, CompleteResult, Completion, CompletionArgument, CompletionContext,
    CompletionReference as Ref, GetPromptResult, Prompt, PromptArgument, ReadResourceResult,
    ResourceTemplate,
};

const LANGUAGES: &[&str] = &["python", "perl", "php", "rust", "ruby"];
const TEMPLATE: &str = "repo://{owner}/{name}";

async fn complete(_: Ctx, p: CompleteParams) -> Result<CompleteResult, ErrorObject> {
    let prefix = p.argument.value.as_str();
    let values: Vec<String> = match (&p.reference, p.argument.name.as_str()) {
        (Ref::Prompt { name }, "language") if name == "explain" => LANGUAGES
            .iter()
            .filter(|l| l.starts_with(prefix))
            .map(|l| (*l).to_owned())
            .collect(),
        (Ref::Resource { uri }, "name") if uri == TEMPLATE => {
            // The variables already chosen come as context.
            let context = p.context.and_then(|c| c.arguments).unwrap_or_default();
            let owner = context.get("owner").map_or("anyone", String::as_str);
            ["tools", "toolbox", "web"]
                .iter()
                .filter(|n| n.starts_with(prefix))
                .map(|n| format!("{owner}-{n}"))
                .collect()
        }
        _ => Vec::new(),
    };
    let completion = Completion::default()
        .with_total(Some(values.len() as u64))
        .with_values(values)
        .with_has_more(Some(false));
    Ok(CompleteResult::default().with_completion(completion))
}

fn ask(reference: Ref, name: &str, value: &str, context: &[(&str, &str)]) -> CompleteParams {
    let arguments: BTreeMap<_, _> = context
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    CompleteParams::new(
        reference,
        CompletionArgument::default()
            .with_name(name.into())
            .with_value(value.into()),
    )
    .with_context(Some(
        CompletionContext::default().with_arguments(Some(arguments)),
    ))
    .with_extra(Default::default())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let prompt = Prompt::default()
        .with_name("explain".into())
        .with_arguments(Some(vec![
            PromptArgument::default().with_name("language".into()),
        ]));
    let template = ResourceTemplate::default()
        .with_uri_template(TEMPLATE.into())
        .with_name("repo".into());
    let server = Server::builder("completion-example", "1.0.0")
        .prompt(prompt, |_, _| async { Ok(GetPromptResult::default()) })
        .resource_template(template, |_, _, _| async {
            Ok(ReadResourceResult::default())
        })
        .completion(complete)
        .build()?;
    let http = oxmcp::http::StreamableHttp::new(server, Default::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));

    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let client = ClientConfig::default().era(era);
        let client = connect(&url, Remote::default().client(client)).await?;
        let prompt = Ref::Prompt {
            name: "explain".into(),
        };
        let got = client
            .complete(&ask(prompt, "language", "p", &[]))
            .await?
            .completion;
        println!("{era:?}: language \"p...\" -> {:?}", got.values);
        let repo = Ref::Resource {
            uri: TEMPLATE.into(),
        };
        let params = ask(repo, "name", "tool", &[("owner", "octo")]);
        let names = client.complete(&params).await?.completion;
        println!(
            "{era:?}: repo name \"tool...\" (owner octo) -> {:?}",
            names.values
        );
        if got.values != ["python", "perl", "php"] || names.values != ["octo-tools", "octo-toolbox"]
        {
            return Err("unexpected completions".into());
        }
        client.close().await;
    }
    Ok(())
}
