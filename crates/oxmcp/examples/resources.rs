//! Run with: cargo run -p oxmcp --example resources
//!
//! Resources: a static one, an RFC 6570 template whose variables reach the reader, and a
//! subscription: the client subscribes to a URI (`resources/subscribe` in the legacy era,
//! `subscriptions/listen` in 2026-07-28), the server announces an update and the client sees it.

use std::collections::BTreeMap;
use std::time::Duration;

use oxmcp::client::{ClientConfig, ClientHandlers, EraChoice, ServerEvent};
use oxmcp::jsonrpc::ErrorObject;
use oxmcp::remote::{Remote, connect};
use oxmcp::server::{Ctx, Server};
use oxmcp::types::{ListenFilter, ReadResourceResult, ResourceContents, ResourceTemplate};
use tokio::sync::mpsc;

const README: &str = "file:///readme.txt";

async fn read_user(
    _: Ctx,
    uri: String,
    vars: BTreeMap<String, String>,
) -> Result<ReadResourceResult, ErrorObject> {
    let id = vars.get("id").map_or("?", String::as_str);
    let text = format!(
        "user {id}, profile {}",
        vars.get("tab").map_or("-", String::as_str)
    );
    Ok(
        ReadResourceResult::default().with_contents(vec![ResourceContents::text(
            uri,
            Some("text/plain"),
            text,
        )]),
    )
}

fn text(result: &ReadResourceResult) -> String {
    let texts = result.contents.iter().filter_map(|c| c.text.as_deref());
    texts.collect::<Vec<_>>().join("")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let template = ResourceTemplate::default()
        .with_uri_template("users://{id}/profile{?tab}".into())
        .with_name("user-profile".into());
    let server = Server::builder("resources-example", "1.0.0")
        .text_resource(
            README,
            "readme",
            "text/plain",
            "Hello from a static resource",
        )
        .resource_template(template, read_user)
        .build()?;
    let http = oxmcp::http::StreamableHttp::new(server.clone(), Default::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));

    for era in [EraChoice::Legacy, EraChoice::Modern] {
        // Notifications reach the client's event handler (legacy) or its listen stream.
        let (tx, mut events) = mpsc::unbounded_channel();
        let handlers = ClientHandlers::new().on_event(move |e| drop(tx.send(e)));
        let client = connect(&url, remote(era, handlers)).await?;

        let listed = client.list_resources(None).await?.resources;
        let templates = client
            .list_resource_templates(None)
            .await?
            .resource_templates;
        println!(
            "{era:?}: {} resource(s), {} template(s)",
            listed.len(),
            templates.len()
        );
        let readme = text(&client.read_resource(README).await?);
        let user = text(&client.read_resource("users://42/profile?tab=posts").await?);
        println!("{era:?}: {readme:?} / {user:?}");
        check(
            readme.starts_with("Hello") && user == "user 42, profile posts",
            "read",
        )?;

        let mut stream = None;
        if client.is_modern() {
            let filter =
                ListenFilter::default().with_resource_subscriptions(Some(vec![README.into()]));
            let mut sub = client.listen(filter)?;
            // The server acknowledges first; updates follow.
            let ack = tokio::time::timeout(Duration::from_secs(5), sub.next()).await?;
            let acked = matches!(&ack, Some(ServerEvent::Other { method, .. })
                if method == "notifications/subscriptions/acknowledged");
            check(acked, "listen")?;
            stream = Some(sub);
        } else {
            client.subscribe(README).await?;
        }
        server.notify_resource_updated(README);
        let event = match &mut stream {
            Some(sub) => tokio::time::timeout(Duration::from_secs(5), sub.next()).await?,
            None => tokio::time::timeout(Duration::from_secs(5), events.recv()).await?,
        };
        println!("{era:?}: got {event:?}");
        check(
            matches!(event, Some(ServerEvent::ResourceUpdated(u)) if u == README),
            "update",
        )?;
        drop(stream);
        client.close().await;
    }
    Ok(())
}

fn remote(era: EraChoice, handlers: ClientHandlers) -> Remote {
    let client = ClientConfig::default().era(era);
    Remote::default().handlers(handlers).client(client)
}

fn check(ok: bool, what: &str) -> Result<(), Box<dyn std::error::Error>> {
    if ok {
        Ok(())
    } else {
        Err(format!("unexpected {what} result").into())
    }
}
