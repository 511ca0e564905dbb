//! Client commands about a server itself: `info` (who it is, what it speaks and offers) and
//! `complete` (argument completion).

use std::collections::BTreeMap;

use anyhow::bail;
use oxmcp_client::{Client, RequestOptions};
use oxmcp_jsonrpc::printable;
use oxmcp_types::{
    CompleteParams, CompletionArgument, CompletionContext, CompletionReference, DiscoverResult,
    JsonObject, ProtocolVersion, meta_keys,
};
use serde_json::{Value, json};

use crate::call_error;
use crate::inspect::{Reach, print_json, with};

/// `oxmcp info`: server info, protocol version and era, capabilities and instructions.
pub(crate) async fn info(url: Option<String>, reach: Reach) -> anyhow::Result<()> {
    let info = with(&reach, url, async |c| Ok(describe(c).await)).await?;
    if reach.json {
        return print_json(&info);
    }
    let server = &info["serverInfo"];
    let text = |v: &Value| printable(v.as_str().unwrap_or("")).into_owned();
    let mut line = format!(
        "server:       {} {}",
        text(&server["name"]),
        text(&server["version"])
    );
    if let Some(title) = server["title"].as_str() {
        line.push_str(&format!(" ({})", printable(title)));
    }
    println!("{line}");
    let how = match info["era"].as_str() {
        Some("modern") => "modern era: no handshake",
        _ => "legacy era: initialize handshake",
    };
    println!("protocol:     {} ({how})", text(&info["protocolVersion"]));
    if let Some(versions) = info["supportedVersions"].as_array() {
        let versions: Vec<String> = versions.iter().map(text).collect();
        println!("supports:     {}", versions.join(", "));
    }
    println!("capabilities: {}", capability_list(&info["capabilities"]));
    if let Some(instructions) = info["instructions"].as_str() {
        println!("instructions:");
        for l in instructions.lines() {
            println!("  {}", printable(l));
        }
    }
    Ok(())
}

/// What `oxmcp info` shows, as JSON.
pub(crate) async fn describe(c: &Client) -> Value {
    let init = c.server();
    let era = if c.is_modern() { "modern" } else { "legacy" };
    let mut info = json!({
        "serverInfo": init.server_info,
        "protocolVersion": c.protocol_version().as_str(),
        "era": era,
        "capabilities": init.capabilities,
    });
    if let Some(i) = &init.instructions {
        info["instructions"] = json!(i);
    }
    if c.is_modern() {
        match discover(c).await {
            Ok(d) => info["supportedVersions"] = json!(d.supported_versions),
            Err(e) => tracing::debug!("server/discover: {e}"),
        }
    }
    info
}

/// Asks a 2026-07-28 server again what it speaks (`server/discover`): the client keeps only
/// the capabilities and info of its probe.
async fn discover(c: &Client) -> Result<DiscoverResult, oxmcp_client::CallError> {
    let mut meta = JsonObject::new();
    meta.insert(
        meta_keys::PROTOCOL_VERSION.to_owned(),
        json!(ProtocolVersion::V2026_07_28.as_str()),
    );
    meta.insert(
        meta_keys::CLIENT_INFO.to_owned(),
        json!({"name": "oxmcp", "version": env!("CARGO_PKG_VERSION")}),
    );
    meta.insert(meta_keys::CLIENT_CAPABILITIES.to_owned(), json!({}));
    c.peer()
        .request_as(
            "server/discover",
            &json!({ "_meta": meta }),
            &RequestOptions::default(),
        )
        .await
}

/// `tools (listChanged), resources (subscribe, listChanged), logging`.
fn capability_list(caps: &Value) -> String {
    let Some(caps) = caps.as_object() else {
        return "none".into();
    };
    let items: Vec<String> = caps
        .iter()
        .map(|(name, v)| {
            let features: Vec<&str> = v
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(_, on)| on.as_bool() == Some(true) || on.is_object())
                .map(|(k, _)| k.as_str())
                .collect();
            if features.is_empty() {
                printable(name).into_owned()
            } else {
                format!("{} ({})", printable(name), printable(&features.join(", ")))
            }
        })
        .collect();
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

/// What `oxmcp complete` completes.
pub(crate) struct CompleteArgs {
    pub(crate) words: Vec<String>,
    pub(crate) prompt: Option<String>,
    pub(crate) resource: Option<String>,
    pub(crate) context: Vec<String>,
}

/// `oxmcp complete`: the values a server suggests for a prompt argument or a template variable.
pub(crate) async fn complete(args: CompleteArgs, reach: Reach) -> anyhow::Result<()> {
    let (url, name, value) = match args.words.as_slice() {
        [url, name, value] if url.contains("://") => (Some(url.clone()), name, value),
        [name, value] => (None, name, value),
        _ => bail!("expected [URL] ARG VALUE"),
    };
    let reference = match (args.prompt, args.resource) {
        (Some(name), None) => CompletionReference::Prompt { name },
        (None, Some(uri)) => CompletionReference::Resource { uri },
        _ => bail!("give one of --prompt NAME and --resource TEMPLATE_URI"),
    };
    let mut context = BTreeMap::new();
    for pair in &args.context {
        let Some((k, v)) = pair.split_once('=') else {
            bail!("--context {pair:?} is not key=value");
        };
        context.insert(k.to_owned(), v.to_owned());
    }
    let params = CompleteParams::new(
        reference,
        CompletionArgument::default()
            .with_name(name.clone())
            .with_value(value.clone()),
    )
    .with_context(
        (!context.is_empty()).then_some(CompletionContext::default().with_arguments(Some(context))),
    );
    let result = with(&reach, url, async |c| {
        c.complete(&params).await.map_err(call_error)
    })
    .await?;
    if reach.json {
        return print_json(&result);
    }
    for v in &result.completion.values {
        println!("{}", printable(v));
    }
    if result.completion.has_more == Some(true) {
        let total = result
            .completion
            .total
            .map(|t| format!(" ({t} in all)"))
            .unwrap_or_default();
        eprintln!("oxmcp: more values than these{total}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_read_as_a_list() {
        let caps = json!({"tools": {"listChanged": true}, "logging": {},
                          "resources": {"subscribe": true, "listChanged": false}});
        assert_eq!(
            capability_list(&caps),
            "logging, resources (subscribe), tools (listChanged)"
        );
        assert_eq!(capability_list(&json!({})), "none");
    }
}
