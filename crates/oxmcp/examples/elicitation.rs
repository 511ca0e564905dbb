//! Run with: cargo run -p oxmcp --example elicitation
//!
//! Elicitation (form mode): a tool asks the user for structured input with `ctx.elicit`
//! and a JSON schema; the client's elicitation handler answers, accepting with content the
//! first time and declining the second. Both protocol eras, over Streamable HTTP.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use oxmcp::client::{ClientConfig, ClientHandlers, EraChoice};
use oxmcp::jsonrpc::ErrorObject;
use oxmcp::remote::{Remote, connect};
use oxmcp::server::{Ctx, Server};
use oxmcp::types::{Content, ElicitAction, ElicitParams, ElicitResult, JsonObject};
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Book {
    /// What to book.
    what: String,
}

async fn book(ctx: Ctx, a: Book) -> Result<String, String> {
    let schema = json!({
        "type": "object",
        "properties": {
            "date": { "type": "string", "format": "date", "description": "Which day" },
            "guests": { "type": "integer", "minimum": 1, "default": 2 }
        },
        "required": ["date"]
    });
    let ask = ElicitParams::form(format!("When should I book the {}?", a.what), schema);
    let answer = ctx.elicit(&ask).await.map_err(|e| e.to_string())?;
    Ok(match (answer.action, answer.content) {
        (ElicitAction::Accept, Some(c)) => {
            format!("booked the {} on {} for {}", a.what, c["date"], c["guests"])
        }
        (action, _) => format!("not booked ({action:?})"),
    })
}

/// The client's "user": accepts once (leaving `guests` to its default), then declines.
fn user(
    answered: Arc<AtomicBool>,
) -> impl Fn(ElicitParams) -> std::future::Ready<Result<ElicitResult, ErrorObject>> {
    move |p: ElicitParams| {
        println!("  the user is asked: {:?}", p.message);
        let declines = answered.swap(true, Ordering::SeqCst);
        let mut content = JsonObject::new();
        content.insert("date".into(), "2026-12-24".into());
        std::future::ready(Ok(ElicitResult::cancel()
            .with_action(if declines {
                ElicitAction::Decline
            } else {
                ElicitAction::Accept
            })
            .with_content((!declines).then_some(content))))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("elicitation-example", "1.0.0")
        .tool("book", "Books a table, asking for the details", book)
        .build()?;
    let http = oxmcp::http::StreamableHttp::new(server, Default::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));

    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let handlers = ClientHandlers::new().elicitation(user(Arc::default()));
        let client = ClientConfig::default().era(era);
        let client = connect(&url, Remote::default().handlers(handlers).client(client)).await?;
        let mut answers = Vec::new();
        for _ in 0..2 {
            let mut args = JsonObject::new();
            args.insert("what".into(), "table".into());
            let result = client.call_tool("book", args).await?;
            let text = result
                .content
                .first()
                .and_then(Content::as_text)
                .unwrap_or_default();
            println!("{era:?}: {text}");
            answers.push(text.to_owned());
        }
        // The schema's default filled in `guests`.
        if answers
            != [
                r#"booked the table on "2026-12-24" for 2"#,
                "not booked (Decline)",
            ]
        {
            return Err(format!("{era:?}: unexpected answers {answers:?}").into());
        }
        client.close().await;
    }
    Ok(())
}
