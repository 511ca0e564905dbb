//! What the gateway lists: each upstream's tools, prompts, resources and templates as last
//! read (under their exposed names), kept in step with it, and merged into one
//! [`Snapshot`] that the gateway's handler answers from.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use oxmcp_client::{CallError, Client, RetryChoice, Status};
use oxmcp_server::Server;
use oxmcp_server::schema::CompiledSchema;
use oxmcp_server::uri_template::UriTemplate;
use oxmcp_types::{LoggingLevel, Prompt, Resource, ResourceTemplate, Tool};
use parking_lot::{Mutex, RwLock};
use tokio::sync::{mpsc, oneshot};

use super::{Kind, Link, MAX_PAGES, Pool, Upstream};

/// A tool as exposed, and how to call it upstream.
#[derive(Clone)]
pub(super) struct ToolRoute {
    /// The definition under its exposed name.
    pub(super) tool: Tool,
    pub(super) upstream: String,
    /// Its name upstream.
    pub(super) original: String,
    /// Whether a failed call may be repeated (the upstream says it is safe to).
    pub(super) retry: RetryChoice,
}

/// A prompt as exposed, and its upstream.
#[derive(Clone)]
pub(super) struct PromptRoute {
    pub(super) prompt: Prompt,
    pub(super) upstream: String,
    pub(super) original: String,
}

/// A resource template as exposed, parsed.
type Template = (ResourceTemplate, Arc<UriTemplate>);

/// One upstream's items, as exposed.
#[derive(Default, Clone)]
struct Items {
    tools: Vec<ToolRoute>,
    prompts: Vec<PromptRoute>,
    resources: Vec<Resource>,
    templates: Vec<Template>,
}

/// Every upstream's items merged, as the gateway lists them: tools, prompts and resources
/// ordered by exposed name (as a registry orders them), templates by upstream.
#[derive(Default)]
pub(super) struct Snapshot {
    pub(super) tools: BTreeMap<String, ToolRoute>,
    pub(super) tool_list: Vec<Tool>,
    pub(super) prompts: BTreeMap<String, PromptRoute>,
    pub(super) prompt_list: Vec<Prompt>,
    /// Exposed URI to its upstream.
    pub(super) resources: BTreeMap<String, String>,
    pub(super) resource_list: Vec<Resource>,
    /// Parsed templates with their upstream, in listing order.
    pub(super) templates: Vec<(Arc<UriTemplate>, String)>,
    pub(super) template_list: Vec<ResourceTemplate>,
}

impl Snapshot {
    /// The upstream that lists `uri` (an exposed URI): as a resource, else the first template
    /// that matches it.
    pub(super) fn owner(&self, uri: &str) -> Option<&str> {
        self.resources.get(uri).map(String::as_str).or_else(|| {
            self.templates
                .iter()
                .find(|(t, _)| t.matches(uri).is_some())
                .map(|(_, upstream)| upstream.as_str())
        })
    }
}

/// The gateway's lists, per upstream and merged.
#[derive(Default)]
pub(super) struct Catalog {
    items: Mutex<BTreeMap<String, Items>>,
    snapshot: RwLock<Arc<Snapshot>>,
}

/// Which lists an update changed (their clients hear `list_changed`).
#[derive(Default, Clone, Copy)]
pub(super) struct Changed {
    tools: bool,
    prompts: bool,
    resources: bool,
}

impl Catalog {
    /// The lists as they are now.
    pub(super) fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.read().clone()
    }

    /// Replaces what `lists` holds for `upstream` (`None`: a list left as it was). A list
    /// counts as changed unless it is exactly what it was (so a reconnection that finds the
    /// same items, a recycled connection say, tells clients nothing).
    fn update(&self, upstream: &str, lists: Lists) -> Changed {
        let mut all = self.items.lock();
        let items = all.entry(upstream.to_owned()).or_default();
        let mut changed = Changed::default();
        if let Some(tools) = lists.tools {
            changed.tools = !items
                .tools
                .iter()
                .map(|t| &t.tool)
                .eq(tools.iter().map(|t| &t.tool));
            items.tools = tools;
        }
        if let Some(prompts) = lists.prompts {
            let same = items.prompts.iter().map(|p| &p.prompt);
            changed.prompts = !same.eq(prompts.iter().map(|p| &p.prompt));
            items.prompts = prompts;
        }
        if let Some((resources, templates)) = lists.resources {
            let same_templates = items.templates.iter().map(|t| &t.0);
            changed.resources =
                items.resources != resources || !same_templates.eq(templates.iter().map(|t| &t.0));
            items.resources = resources;
            items.templates = templates;
        }
        *self.snapshot.write() = Arc::new(merge(&all));
        changed
    }

    /// The upstream is down: its items leave the lists until it is back.
    fn clear(&self, upstream: &str) -> Changed {
        self.update(
            upstream,
            Lists {
                tools: Some(Vec::new()),
                prompts: Some(Vec::new()),
                resources: Some((Vec::new(), Vec::new())),
            },
        )
    }

    /// The upstream left the gateway (a reload): its items leave the lists for good.
    pub(super) fn remove(&self, upstream: &str) -> Changed {
        let changed = self.clear(upstream);
        self.items.lock().remove(upstream);
        changed
    }

    /// How many items of each kind `upstream` has now.
    fn counts(&self, upstream: &str) -> [usize; 4] {
        let all = self.items.lock();
        let Some(i) = all.get(upstream) else {
            return [0; 4];
        };
        [
            i.tools.len(),
            i.prompts.len(),
            i.resources.len(),
            i.templates.len(),
        ]
    }
}

/// Every upstream's items as one snapshot.
fn merge(all: &BTreeMap<String, Items>) -> Snapshot {
    let mut s = Snapshot::default();
    for (name, items) in all {
        for t in &items.tools {
            s.tools.insert(t.tool.name.clone(), t.clone());
        }
        for p in &items.prompts {
            s.prompts.insert(p.prompt.name.clone(), p.clone());
        }
        for r in &items.resources {
            s.resources.insert(r.uri.clone(), name.clone());
        }
        s.resource_list.extend(items.resources.iter().cloned());
        for (t, parsed) in &items.templates {
            s.templates.push((parsed.clone(), name.clone()));
            s.template_list.push(t.clone());
        }
    }
    s.tool_list = s.tools.values().map(|t| t.tool.clone()).collect();
    s.prompt_list = s.prompts.values().map(|p| p.prompt.clone()).collect();
    s.resource_list.sort_by(|a, b| a.uri.cmp(&b.uri));
    s.resource_list.dedup_by(|a, b| a.uri == b.uri);
    s
}

/// Keeps the catalog's copy of an upstream's lists in step with it, telling the gateway's
/// clients of each change.
pub(super) async fn track(
    server: Server,
    catalog: Arc<Catalog>,
    upstream: Upstream,
    pool: Arc<Pool>,
    mut changed: mpsc::Receiver<Kind>,
    ready: oneshot::Sender<()>,
) {
    let link = pool.link.clone();
    let mut status = pool.primary.watch();
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
                let lists = read_lists(&upstream, &link, &client, kind).await;
                announce(&server, catalog.update(&upstream.name, lists));
                let [tools, prompts, resources, templates] = catalog.counts(&upstream.name);
                tracing::info!(upstream = %upstream.name, tools, prompts, resources, templates, "upstream up");
            }
            Status::Stopped => return,
            Status::Restarting { attempt: 0, .. } => {}
            other => {
                let [tools, _, resources, _] = catalog.counts(&upstream.name);
                if tools > 0 || resources > 0 {
                    tracing::warn!(upstream = %upstream.name, "upstream down: {other:?}");
                }
                announce(&server, catalog.clear(&upstream.name));
            }
        }
        if settled && let Some(r) = ready.take() {
            let _ = r.send(());
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

/// Tells the gateway's clients which lists changed (without waiting for any).
pub(super) fn announce(server: &Server, changed: Changed) {
    if changed.tools {
        server.notify_tool_list_changed();
    }
    if changed.prompts {
        server.notify_prompt_list_changed();
    }
    if changed.resources {
        server.notify_resource_list_changed();
    }
}

/// On each (re)connection: ask for every log message (clients filter by their own level).
/// Subscriptions are renewed by [`keep_subscribed`].
pub(super) async fn prepare(client: &Arc<Client>, link: &Link) {
    if client.server_capabilities().logging.is_some()
        && let Err(e) = client.set_log_level(LoggingLevel::Debug).await
    {
        tracing::debug!(upstream = %link.name, "logging/setLevel: {e}");
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

/// An upstream's lists, as read and exposed: `None` for a list not asked for or that could
/// not be read.
struct Lists {
    tools: Option<Vec<ToolRoute>>,
    prompts: Option<Vec<PromptRoute>>,
    resources: Option<(Vec<Resource>, Vec<Template>)>,
}

/// The lists `kind` covers, every page of each, under their exposed names.
async fn read_lists(upstream: &Upstream, link: &Link, client: &Client, kind: Kind) -> Lists {
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
        .map(|tools| expose_tools(upstream, link, tools)),
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
        .ok()
        .map(|prompts| expose_prompts(upstream, link, prompts)),
    };
    let resources = match (want(Kind::Resources), caps.resources.is_some()) {
        (false, _) => None,
        (true, false) => Some((Vec::new(), Vec::new())),
        (true, true) => match read_resources(client).await {
            Ok((r, t)) => Some(expose_resources(link, r, t)),
            Err(e) => {
                warn("resources", e);
                None
            }
        },
    };
    Lists {
        tools,
        prompts,
        resources,
    }
}

/// Every page of the resources and of the templates.
async fn read_resources(
    client: &Client,
) -> Result<(Vec<Resource>, Vec<ResourceTemplate>), CallError> {
    let r = all_pages(|c| async move {
        client
            .list_resources(c)
            .await
            .map(|p| (p.resources, p.next_cursor))
    })
    .await?;
    let t = all_pages(|c| async move {
        client
            .list_resource_templates(c)
            .await
            .map(|p| (p.resource_templates, p.next_cursor))
    })
    .await?;
    Ok((r, t))
}

/// The upstream's tools as `UPSTREAM__NAME`: those the configuration allows, whose
/// `x-mcp-header` annotations are valid, whose exposed name is usable and whose schemas
/// compile (the gateway validates arguments against them).
fn expose_tools(upstream: &Upstream, link: &Link, tools: Vec<Tool>) -> Vec<ToolRoute> {
    let mut out = Vec::new();
    for tool in tools.into_iter().filter(|t| upstream.allows(&t.name)) {
        if let Some(why) = oxmcp_client::invalid_header_annotation(&tool) {
            tracing::warn!(upstream = %upstream.name, tool = ?tool.name, "skipping a tool with an invalid x-mcp-header: {why}");
            continue;
        }
        let exposed = link.exposed_name(&tool.name);
        if let Some(why) = unusable(&exposed, &tool) {
            tracing::warn!("skipping upstream tool {exposed:?}: {why}");
            continue;
        }
        // Repeated after a failure only when the upstream says it is safe to.
        let retry = match tool.annotations.as_ref() {
            Some(a) if a.read_only_hint == Some(true) || a.idempotent_hint == Some(true) => {
                RetryChoice::Always
            }
            _ => RetryChoice::Never,
        };
        out.push(ToolRoute {
            original: tool.name.clone(),
            tool: tool.with_name(exposed),
            upstream: upstream.name.clone(),
            retry,
        });
    }
    out
}

/// Why a tool cannot be served under `exposed`, if it cannot.
fn unusable(exposed: &str, tool: &Tool) -> Option<String> {
    if let Some(why) = oxmcp_types::tools::tool_name_problem(exposed) {
        return Some(why);
    }
    let schemas = std::iter::once(&tool.input_schema).chain(tool.output_schema.as_ref());
    for schema in schemas {
        if let Err(e) = CompiledSchema::compile(schema) {
            return Some(e.to_string());
        }
    }
    None
}

/// The upstream's prompts as `UPSTREAM__NAME`.
fn expose_prompts(upstream: &Upstream, link: &Link, prompts: Vec<Prompt>) -> Vec<PromptRoute> {
    prompts
        .into_iter()
        .map(|prompt| PromptRoute {
            original: prompt.name.clone(),
            prompt: {
                let exposed = link.exposed_name(&prompt.name);
                prompt.with_name(exposed)
            },
            upstream: upstream.name.clone(),
        })
        .collect()
}

/// The upstream's resources and templates under `gateway://UPSTREAM/...` (templates that do
/// not parse are left out).
fn expose_resources(
    link: &Link,
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
) -> (Vec<Resource>, Vec<Template>) {
    let resources = resources
        .into_iter()
        .map(|r| {
            let exposed = link.exposed_uri(&r.uri);
            r.with_uri(exposed)
        })
        .collect();
    let mut parsed = Vec::new();
    for template in templates {
        let exposed = link.exposed_uri(&template.uri_template);
        match UriTemplate::parse(&exposed) {
            Ok(p) => parsed.push((template.with_uri_template(exposed), Arc::new(p))),
            Err(err) => tracing::warn!("skipping upstream template {exposed:?}: {err}"),
        }
    }
    (resources, parsed)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn route(upstream: &str, name: &str) -> ToolRoute {
        ToolRoute {
            tool: Tool::default().with_name(format!("{upstream}__{name}")),
            upstream: upstream.to_owned(),
            original: name.to_owned(),
            retry: RetryChoice::Never,
        }
    }

    fn tools(list: Vec<ToolRoute>) -> Lists {
        Lists {
            tools: Some(list),
            prompts: None,
            resources: None,
        }
    }

    #[test]
    fn lists_merge_in_name_order_and_only_changes_are_told() {
        let c = Catalog::default();
        let changed = c.update("b", tools(vec![route("b", "x")]));
        assert!(changed.tools && !changed.prompts && !changed.resources);
        // The same list again (a reconnection): nothing to tell.
        assert!(!c.update("b", tools(vec![route("b", "x")])).tools);
        c.update("a-b", tools(vec![route("a-b", "y")]));
        c.update("a", tools(vec![route("a", "z")]));
        let names: Vec<String> = c
            .snapshot()
            .tool_list
            .iter()
            .map(|t| t.name.clone())
            .collect();
        assert_eq!(
            names,
            ["a-b__y", "a__z", "b__x"],
            "as a registry orders them"
        );
        assert_eq!(c.snapshot().tools["b__x"].original, "x");
        // Down: its items go (a change); down again: nothing more to tell.
        let gone = c.clear("b");
        assert!(gone.tools && !gone.prompts && !gone.resources);
        assert!(!c.clear("b").tools);
        assert!(!c.snapshot().tools.contains_key("b__x"));
        assert_eq!(c.counts("a"), [1, 0, 0, 0]);
    }
}
