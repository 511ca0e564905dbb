//! The connection to one upstream: connecting, and passing its notifications on.

use std::sync::Arc;

use mcp_client::{CallError, Client, ClientConfig, ClientHandlers, EraChoice, ServerEvent};
use mcp_server::Server;
use tokio::sync::mpsc;

use super::*;

pub(super) fn connector(upstream: Upstream, link: Arc<Link>) -> mcp_client::supervisor::Connector {
    Arc::new(move || {
        let upstream = upstream.clone();
        let link = link.clone();
        Box::pin(async move {
            let (events, sampling, elicitation) = (link.clone(), link.clone(), link.clone());
            let handlers = ClientHandlers::new()
                .on_event(move |e| match e {
                    ServerEvent::Log(p) => events.send(Event::Log(p)),
                    ServerEvent::ToolsChanged => events.send(Event::Changed(Kind::Tools)),
                    ServerEvent::PromptsChanged => events.send(Event::Changed(Kind::Prompts)),
                    ServerEvent::ResourcesChanged => events.send(Event::Changed(Kind::Resources)),
                    ServerEvent::ResourceUpdated(uri) => events.send(Event::Updated(uri)),
                    _ => {}
                })
                .sampling(move |params| {
                    let call = owner(&sampling);
                    async move {
                        let call = call.ok_or_else(no_request)?;
                        relay_input(&call, call.ctx.create_message(&params).await)
                    }
                })
                .elicitation(move |params| {
                    let call = owner(&elicitation);
                    async move {
                        let call = call.ok_or_else(no_request)?;
                        relay_input(&call, call.ctx.elicit(&params).await)
                    }
                })
                .url_elicitation();
            let mut env = mcp_client::ChildEnv::safe();
            for (k, v) in &upstream.env {
                env = env.var(k, v);
            }
            let config = ClientConfig {
                child: mcp_client::ChildConfig {
                    env,
                    ..Default::default()
                },
                era: match upstream.era {
                    UpstreamEra::Auto => EraChoice::Auto,
                    UpstreamEra::Legacy => EraChoice::Legacy,
                    UpstreamEra::Modern => EraChoice::Modern,
                },
                ..ClientConfig::default()
            };
            match &upstream.url {
                Some(url) => {
                    let t = mcp_http::client::connect(
                        url,
                        mcp_http::HttpClientConfig {
                            headers: upstream.headers.clone().into_iter().collect(),
                            ..Default::default()
                        },
                    )
                    .map_err(|e| {
                        mcp_client::ConnectError::Initialize(CallError::Protocol(e.to_string()))
                    })?;
                    Client::connect(t.incoming, t.outgoing, handlers, config).await
                }
                None => {
                    let (program, args) = upstream
                        .command
                        .split_first()
                        .map(|(p, a)| (p.clone(), a.to_vec()))
                        .unwrap_or_default();
                    Client::spawn(&program, &args, handlers, config).await
                }
            }
        })
    })
}

/// Passes an upstream's notifications on, in order.
pub(super) async fn pass_on(
    server: Server,
    link: Arc<Link>,
    mut events: mpsc::Receiver<Event>,
    changed: mpsc::Sender<Kind>,
) {
    while let Some(event) = events.recv().await {
        match event {
            Event::Log(p) => {
                tracing::debug!(upstream = %link.name, "log message: {:?}", p.data);
                let logger = match &p.logger {
                    Some(l) => format!("{}/{l}", link.name),
                    None => link.name.clone(),
                };
                // A message sent while a request runs belongs to it (and its stream).
                match link.calls.newest() {
                    Some(call) => call.ctx.log(p.level, Some(&logger), p.data).await,
                    None => server.log(p.level, Some(&logger), p.data).await,
                }
            }
            Event::Progress(ctx, p) => ctx.progress(p.progress, p.total, p.message).await,
            Event::Changed(kind) => {
                let _ = changed.try_send(kind);
            }
            Event::Updated(uri) => {
                server
                    .notify_resource_updated(&link.exposed_uri(&uri))
                    .await
            }
            Event::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}
