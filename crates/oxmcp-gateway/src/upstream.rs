//! Connections to one upstream: connecting, and passing its notifications on.

use std::sync::Arc;

use oxmcp_client::{CallError, Client, ClientConfig, ClientHandlers, ServerEvent};
use oxmcp_server::Server;
use oxmcp_types::LoggingLevel;
use tokio::sync::mpsc;

use super::{Event, Holder, Kind, Link, Upstream, open, relay_input};

/// Makes the supervised connection to `upstream` (its handlers read `holder`).
pub(super) fn connector(
    upstream: Upstream,
    link: Arc<Link>,
    holder: Arc<Holder>,
) -> oxmcp_client::supervisor::Connector {
    Arc::new(move || {
        let connecting = connect(upstream.clone(), link.clone(), holder.clone(), true);
        Box::pin(connecting)
    })
}

/// Connects to `upstream`. Sampling, elicitation and roots requests and log messages that arrive on
/// the connection go to the request `holder` names (requests are refused, log messages kept
/// to the gateway's own log, when none does; see [`Holder`] for a quarantined connection), and
/// `holder` hears of every message that may be about a request. List changes and resource
/// updates are taken from the `primary` (supervised) connection only. The client owns what its transport opened:
/// closing it ends a child, or an HTTP session with DELETE.
pub(super) async fn connect(
    upstream: Upstream,
    link: Arc<Link>,
    holder: Arc<Holder>,
    primary: bool,
) -> Result<Client, oxmcp_client::ConnectError> {
    let (sampling, elicitation, roots) = (holder.clone(), holder.clone(), holder.clone());
    let handlers = ClientHandlers::new()
        .on_event(move |e| match e {
            ServerEvent::Log(p) => link.send(Event::Log(holder.speaker(), p)),
            ServerEvent::ToolsChanged if primary => link.send(Event::Changed(Kind::Tools)),
            ServerEvent::PromptsChanged if primary => link.send(Event::Changed(Kind::Prompts)),
            ServerEvent::ResourcesChanged if primary => link.send(Event::Changed(Kind::Resources)),
            ServerEvent::ResourceUpdated(uri) if primary => link.send(Event::Updated(uri)),
            ServerEvent::ElicitationComplete(_) | ServerEvent::Other { .. } => holder.heard(),
            _ => {}
        })
        .sampling(move |params| {
            let call = sampling.asker();
            async move {
                let call = call?;
                relay_input(&call, call.ctx.create_message(&params).await)
            }
        })
        .elicitation(move |params| {
            let call = elicitation.asker();
            async move {
                let call = call?;
                relay_input(&call, call.ctx.elicit(&params).await)
            }
        })
        .url_elicitation()
        .roots(move || {
            let call = roots.asker();
            async move {
                let call = call?;
                relay_input(&call, call.ctx.list_roots().await)
            }
        });
    let mut env = oxmcp_client::ChildEnv::safe();
    for (k, v) in &upstream.env {
        env = env.var(k, v);
    }
    let config = ClientConfig::default()
        .child(oxmcp_client::ChildConfig::default().env(env))
        .era(upstream.era);
    let refused = |m: String| oxmcp_client::ConnectError::Initialize(CallError::Protocol(m));
    match &upstream.url {
        Some(url) => {
            let (channels, link) = open(&upstream, url).await.map_err(refused)?;
            Client::connect_over(channels, link, handlers, config).await
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
}

/// Passes an upstream's notifications on, in order, never waiting for a client: one that
/// reads slowly or not at all must not hold up the messages of other clients' requests (its
/// own are queued for it, and dropped if it falls too far behind).
pub(super) async fn pass_on(
    server: Server,
    link: Arc<Link>,
    mut events: mpsc::Receiver<Event>,
    changed: mpsc::Sender<Kind>,
) {
    while let Some(event) = events.recv().await {
        match event {
            Event::Log(call, p) => {
                let logger = match (&p.logger, link.bare) {
                    (l, true) => l.clone(),
                    (Some(l), false) => Some(format!("{}/{l}", link.name)),
                    (None, false) => Some(link.name.clone()),
                };
                match call {
                    // Sent on a connection lent to a request: that request's (and only its).
                    Some(call) => call.ctx.try_log(p.level, logger.as_deref(), p.data),
                    // Nobody's: an upstream's own line, or a late one about an earlier
                    // request. Passing it to every client could leak that request's data.
                    None if p.level >= LoggingLevel::Warning => {
                        tracing::warn!(upstream = %link.name, logger = ?logger, "upstream log ({:?}): {}", p.level, oxmcp_jsonrpc::printable(&p.data.to_string()));
                    }
                    None => {
                        tracing::debug!(upstream = %link.name, logger = ?logger, "upstream log ({:?}): {}", p.level, oxmcp_jsonrpc::printable(&p.data.to_string()));
                    }
                }
            }
            Event::Progress(ctx, p) => ctx.try_progress(p.progress, p.total, p.message),
            Event::Changed(kind) => {
                let _ = changed.try_send(kind);
            }
            Event::Updated(uri) => {
                server.notify_resource_updated(&link.exposed_uri(&uri));
            }
            Event::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}
