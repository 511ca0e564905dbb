//! Client commands that look at a server: `resources`, `read`, `prompts`, `prompt`, `ping`.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::bail;
use oxmcp_types::{Content, Role};
use serde_json::json;

use crate::call_error;
use crate::target::{self, Connection, Target};

/// What every client command shares: the target and how to reach it.
#[derive(clap::Args, Debug)]
pub(crate) struct Reach {
    #[command(flatten)]
    pub(crate) auth: crate::auth::Auth,
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// The server command and its arguments (instead of a URL).
    #[arg(last = true)]
    pub(crate) server: Vec<String>,
}

impl Reach {
    /// Connects to the URL or the command after `--`, with the client side of the options.
    pub(crate) async fn connect(&self, url: Option<String>) -> anyhow::Result<Connection> {
        let target = Target::from_parts(url, self.server.clone())?;
        target::connect(&target, &self.auth).await
    }
}

/// Splits `[URL] WORD` positional words.
pub(crate) fn url_and_word(
    words: &[String],
    what: &str,
) -> anyhow::Result<(Option<String>, String)> {
    let (url, rest) = match words.first() {
        Some(w) if w.contains("://") && words.len() > 1 => (Some(w.clone()), &words[1..]),
        _ => (None, words),
    };
    match rest {
        [one] => Ok((url, one.clone())),
        [] => bail!("no {what} given"),
        _ => bail!("too many arguments: expected [URL] {}", what.to_uppercase()),
    }
}

pub(crate) fn print_json(v: &impl serde::Serialize) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

/// Runs `f` on a fresh connection and always closes it.
pub(crate) async fn with<T>(
    reach: &Reach,
    url: Option<String>,
    f: impl AsyncFnOnce(&oxmcp_client::Client) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let conn = reach.connect(url).await?;
    let r = f(&conn.client).await;
    conn.close().await;
    r
}

/// `oxmcp resources`: resources and resource templates.
pub(crate) async fn resources(url: Option<String>, reach: Reach) -> anyhow::Result<()> {
    let (resources, templates) = with(&reach, url, async |c| {
        if c.server_capabilities().resources.is_none() {
            bail!("the server has no resources");
        }
        let resources = c.list_all_resources().await.map_err(call_error)?;
        let templates = c.list_all_resource_templates().await.map_err(call_error)?;
        Ok((resources, templates))
    })
    .await?;
    if reach.json {
        return print_json(&json!({"resources": resources, "resourceTemplates": templates}));
    }
    let width = resources
        .iter()
        .map(|r| r.uri.len())
        .chain(templates.iter().map(|t| t.uri_template.len()))
        .max()
        .unwrap_or(0);
    for r in &resources {
        let mime = r.mime_type.as_deref().unwrap_or("");
        let about = r
            .description
            .as_deref()
            .or(r.title.as_deref())
            .unwrap_or(&r.name);
        println!("{:width$}  {mime:<16}  {about}", r.uri);
    }
    for t in &templates {
        let about = t
            .description
            .as_deref()
            .or(t.title.as_deref())
            .unwrap_or(&t.name);
        println!("{:width$}  {:<16}  {about}", t.uri_template, "(template)");
    }
    Ok(())
}

/// `oxmcp read`: one resource's contents.
pub(crate) async fn read(words: Vec<String>, reach: Reach) -> anyhow::Result<()> {
    let (url, uri) = url_and_word(&words, "uri")?;
    let result = with(&reach, url, async |c| {
        c.read_resource(&uri).await.map_err(call_error)
    })
    .await?;
    if reach.json {
        return print_json(&result);
    }
    for c in &result.contents {
        match (&c.text, &c.blob) {
            (Some(text), _) => println!("{text}"),
            (None, Some(blob)) => println!(
                "[binary, {} bytes base64, {}]",
                blob.len(),
                c.mime_type.as_deref().unwrap_or("unknown type")
            ),
            (None, None) => println!("[empty: {}]", c.uri),
        }
    }
    Ok(())
}

/// `oxmcp prompts`: the prompts and their arguments.
pub(crate) async fn prompts(url: Option<String>, reach: Reach) -> anyhow::Result<()> {
    let prompts = with(&reach, url, async |c| {
        if c.server_capabilities().prompts.is_none() {
            bail!("the server has no prompts");
        }
        c.list_all_prompts().await.map_err(call_error)
    })
    .await?;
    if reach.json {
        return print_json(&prompts);
    }
    let width = prompts.iter().map(|p| p.name.len()).max().unwrap_or(0);
    for p in &prompts {
        let args: Vec<String> = p
            .arguments
            .iter()
            .flatten()
            .map(|a| {
                if a.required == Some(true) {
                    a.name.clone()
                } else {
                    format!("[{}]", a.name)
                }
            })
            .collect();
        println!(
            "{:width$}  {:<24}  {}",
            p.name,
            args.join(" "),
            p.description.as_deref().unwrap_or("")
        );
    }
    Ok(())
}

/// `oxmcp prompt`: one prompt, filled in with `-a key=value` arguments.
pub(crate) async fn prompt(
    words: Vec<String>,
    args: Vec<String>,
    reach: Reach,
) -> anyhow::Result<()> {
    let (url, name) = url_and_word(&words, "name")?;
    let mut arguments = BTreeMap::new();
    for a in &args {
        let Some((k, v)) = a.split_once('=') else {
            bail!("--arg {a:?} is not key=value");
        };
        arguments.insert(k.to_owned(), v.to_owned());
    }
    let result = with(&reach, url, async |c| {
        c.get_prompt(&name, arguments).await.map_err(call_error)
    })
    .await?;
    if reach.json {
        return print_json(&result);
    }
    if let Some(d) = &result.description {
        println!("# {d}");
    }
    for m in &result.messages {
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        match &m.content {
            Content::Text(t) => println!("{role}: {}", t.text),
            other => println!("{role}: {}", serde_json::to_string(other)?),
        }
    }
    Ok(())
}

/// `oxmcp ping`: round-trip time of a `ping`.
pub(crate) async fn ping(url: Option<String>, reach: Reach) -> anyhow::Result<()> {
    let (ms, server, version) = with(&reach, url, async |c| {
        let start = Instant::now();
        c.ping().await.map_err(call_error)?;
        let ms = start.elapsed().as_secs_f64() * 1000.0;
        Ok((ms, c.server().server_info.clone(), c.protocol_version()))
    })
    .await?;
    if reach.json {
        return print_json(&json!({
            "ok": true,
            "ms": ms,
            "server": server,
            "protocolVersion": version.as_str(),
        }));
    }
    println!(
        "pong from {} {} ({}) in {ms:.2} ms",
        server.name,
        server.version,
        version.as_str()
    );
    Ok(())
}
