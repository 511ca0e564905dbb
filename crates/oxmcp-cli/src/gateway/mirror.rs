//! The gateway's copy of an upstream's lists, kept in step with it.

use std::future::Future;
use std::sync::Arc;

use oxmcp_client::{CallError, Client, RetryChoice, Status};
use oxmcp_server::{Edit, Server};
use oxmcp_types::LoggingLevel;
use tokio::sync::{mpsc, oneshot};

use super::*;

/// The names an upstream's items are registered under in the gateway.
#[derive(Default)]
pub(super) struct Registered {
    pub(super) tools: Vec<String>,
    pub(super) prompts: Vec<String>,
    pub(super) resources: Vec<String>,
    pub(super) templates: Vec<String>,
}

/// Keeps the gateway's copy of an upstream's tools, prompts, resources and templates in step.
pub(super) async fn mirror(
    server: Server,
    upstream: Upstream,
    pool: Arc<Pool>,
    mut changed: mpsc::Receiver<Kind>,
    ready: oneshot::Sender<()>,
) {
    let link = pool.link.clone();
    let mut status = pool.primary.watch();
    let mut ours = Registered::default();
    let mut ready = Some(ready);
    let mut kind = Kind::All;
    loop {
        let current = status.borrow_and_update().clone();
        // The first connection attempt is over once the status is anything but "connecting".
        let settled = !matches!(&current, Status::Restarting { attempt: 0, .. });
        match current {
            Status::Up { client, .. } => {
                if kind == Kind::All {
                    prepare(&client, &link).await;
                }
                refresh(&server, &upstream, &pool, &client, kind, &mut ours).await;
            }
            Status::Stopped => return,
            Status::Restarting { attempt: 0, .. } => {}
            other => {
                if !ours.tools.is_empty() || !ours.resources.is_empty() {
                    tracing::warn!(upstream = %upstream.name, "upstream down: {other:?}");
                }
                let gone = std::mem::take(&mut ours);
                server.edit(|e| unregister(e, &gone)).await;
            }
        }
        if settled {
            if let Some(r) = ready.take() {
                let _ = r.send(());
            }
        }
        tokio::select! {
            r = status.changed() => {
                if r.is_err() { return }
                kind = Kind::All;
            }
            Some(k) = changed.recv() => kind = k,
        }
    }
}

/// On each (re)connection: ask for every log message (clients filter by their own level).
/// Subscriptions are renewed by [`keep_subscribed`].
pub(super) async fn prepare(client: &Arc<Client>, link: &Link) {
    if client.server_capabilities().logging.is_some() {
        if let Err(e) = client.set_log_level(LoggingLevel::Debug).await {
            tracing::debug!(upstream = %link.name, "logging/setLevel: {e}");
        }
    }
}

pub(super) fn unregister(e: &mut Edit<'_>, gone: &Registered) {
    for n in &gone.tools {
        e.remove_tool(n);
    }
    for n in &gone.prompts {
        e.remove_prompt(n);
    }
    for u in &gone.resources {
        e.remove_resource(u);
    }
    for t in &gone.templates {
        e.remove_resource_template(t);
    }
}

/// Every page of a list, up to [`MAX_PAGES`] (an upstream that keeps giving a cursor, even
/// with empty pages, is cut off there with a warning).
pub(super) async fn all_pages<T, F, Fut>(mut page: F) -> Result<Vec<T>, CallError>
where
    F: FnMut(Option<String>) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, Option<String>), CallError>>,
{
    let mut items = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let (mut more, next) = page(cursor).await?;
        items.append(&mut more);
        cursor = next;
        if cursor.is_none() {
            return Ok(items);
        }
    }
    tracing::warn!("a list still had more pages after {MAX_PAGES}; using the first {MAX_PAGES}");
    Ok(items)
}

/// An upstream's lists, as read: `None` for a list not asked for or that could not be read.
struct Lists {
    tools: Option<Vec<oxmcp_types::Tool>>,
    prompts: Option<Vec<oxmcp_types::Prompt>>,
    resources: Option<(
        Vec<oxmcp_types::Resource>,
        Vec<oxmcp_types::ResourceTemplate>,
    )>,
}

/// Reads the upstream's lists (those `kind` covers) and registers them under gateway names.
pub(super) async fn refresh(
    server: &Server,
    upstream: &Upstream,
    pool: &Arc<Pool>,
    client: &Client,
    kind: Kind,
    ours: &mut Registered,
) {
    let lists = read_lists(upstream, client, kind).await;
    server
        .edit(|e| {
            if let Some(tools) = lists.tools {
                register_tools(e, upstream, pool, tools, ours);
            }
            if let Some(prompts) = lists.prompts {
                register_prompts(e, pool, prompts, ours);
            }
            if let Some((resources, templates)) = lists.resources {
                register_resources(e, pool, resources, templates, ours);
            }
        })
        .await;
    tracing::info!(
        upstream = %upstream.name,
        tools = ours.tools.len(),
        prompts = ours.prompts.len(),
        resources = ours.resources.len(),
        templates = ours.templates.len(),
        "upstream up"
    );
}

/// The lists `kind` covers, every page of each; tools with invalid `x-mcp-header`
/// annotations are left out.
async fn read_lists(upstream: &Upstream, client: &Client, kind: Kind) -> Lists {
    let caps = client.server_capabilities().clone();
    let want = |k: Kind| kind == Kind::All || kind == k;
    let warn = |what: &str, e: CallError| {
        tracing::warn!(upstream = %upstream.name, "listing {what} failed: {e}");
    };
    let tools = match (want(Kind::Tools), caps.tools.is_some()) {
        (false, _) => None,
        (true, false) => Some(Vec::new()),
        (true, true) => all_pages(|c| async move {
            client
                .list_tools_page(c)
                .await
                .map(|p| (p.tools, p.next_cursor))
        })
        .await
        .map_err(|e| warn("tools", e))
        .ok()
        .map(|tools| {
            tools
                .into_iter()
                .filter(|t| match oxmcp_client::invalid_header_annotation(t) {
                    Some(why) => {
                        tracing::warn!(upstream = %upstream.name, tool = ?t.name, "skipping a tool with an invalid x-mcp-header: {why}");
                        false
                    }
                    None => true,
                })
                .collect()
        }),
    };
    let prompts = match (want(Kind::Prompts), caps.prompts.is_some()) {
        (false, _) => None,
        (true, false) => Some(Vec::new()),
        (true, true) => all_pages(|c| async move {
            client
                .list_prompts(c)
                .await
                .map(|p| (p.prompts, p.next_cursor))
        })
        .await
        .map_err(|e| warn("prompts", e))
        .ok(),
    };
    let resources = match (want(Kind::Resources), caps.resources.is_some()) {
        (false, _) => None,
        (true, false) => Some((Vec::new(), Vec::new())),
        (true, true) => {
            let r = all_pages(|c| async move {
                client
                    .list_resources(c)
                    .await
                    .map(|p| (p.resources, p.next_cursor))
            })
            .await;
            let t = all_pages(|c| async move {
                client
                    .list_resource_templates(c)
                    .await
                    .map(|p| (p.resource_templates, p.next_cursor))
            })
            .await;
            match (r, t) {
                (Ok(r), Ok(t)) => Some((r, t)),
                (Err(e), _) | (_, Err(e)) => {
                    warn("resources", e);
                    None
                }
            }
        }
    };
    Lists {
        tools,
        prompts,
        resources,
    }
}

/// Registers the upstream's tools as `UPSTREAM__NAME`, dropping those no longer listed.
fn register_tools(
    e: &mut oxmcp_server::Edit<'_>,
    upstream: &Upstream,
    pool: &Arc<Pool>,
    tools: Vec<oxmcp_types::Tool>,
    ours: &mut Registered,
) {
    let mut next = Vec::new();
    for tool in tools.into_iter().filter(|t| upstream.allows(&t.name)) {
        let exposed = pool.link.exposed_name(&tool.name);
        // Repeated after a failure only when the upstream says it is safe to.
        let retry = match tool.annotations.as_ref() {
            Some(a) if a.read_only_hint == Some(true) || a.idempotent_hint == Some(true) => {
                RetryChoice::Always
            }
            _ => RetryChoice::Never,
        };
        let handler = tool_fn(pool.clone(), tool.name.clone(), retry);
        let tool = tool.with_name(exposed.clone());
        match e.add_tool(tool, handler) {
            Ok(()) => next.push(exposed),
            Err(err) => tracing::warn!("skipping upstream tool {exposed:?}: {err}"),
        }
    }
    replace(&mut ours.tools, next, |n| {
        e.remove_tool(n);
    });
}

/// Registers the upstream's prompts as `UPSTREAM__NAME`, dropping those no longer listed.
fn register_prompts(
    e: &mut oxmcp_server::Edit<'_>,
    pool: &Arc<Pool>,
    prompts: Vec<oxmcp_types::Prompt>,
    ours: &mut Registered,
) {
    let mut next = Vec::new();
    for prompt in prompts {
        let exposed = pool.link.exposed_name(&prompt.name);
        let handler = prompt_fn(pool.clone(), prompt.name.clone());
        let prompt = prompt.with_name(exposed.clone());
        e.add_prompt(prompt, handler);
        next.push(exposed);
    }
    replace(&mut ours.prompts, next, |n| {
        e.remove_prompt(n);
    });
}

/// Registers the upstream's resources and templates under `gateway://UPSTREAM/...`.
fn register_resources(
    e: &mut oxmcp_server::Edit<'_>,
    pool: &Arc<Pool>,
    resources: Vec<oxmcp_types::Resource>,
    templates: Vec<oxmcp_types::ResourceTemplate>,
    ours: &mut Registered,
) {
    let link = &pool.link;
    let mut next = Vec::new();
    for resource in resources {
        let exposed = link.exposed_uri(&resource.uri);
        let resource = resource.with_uri(exposed.clone());
        e.add_resource(resource, resource_fn(pool.clone()));
        next.push(exposed);
    }
    replace(&mut ours.resources, next, |u| {
        e.remove_resource(u);
    });
    let mut next = Vec::new();
    for template in templates {
        let exposed = link.exposed_uri(&template.uri_template);
        let template = template.with_uri_template(exposed.clone());
        match e.add_resource_template(template, template_fn(pool.clone())) {
            Ok(()) => next.push(exposed),
            Err(err) => tracing::warn!("skipping upstream template {exposed:?}: {err}"),
        }
    }
    replace(&mut ours.templates, next, |t| {
        e.remove_resource_template(t);
    });
}

/// Makes `next` the registered set, removing what is no longer there.
pub(super) fn replace(ours: &mut Vec<String>, next: Vec<String>, mut remove: impl FnMut(&str)) {
    for gone in ours.iter().filter(|n| !next.contains(n)) {
        remove(gone);
    }
    *ours = next;
}
