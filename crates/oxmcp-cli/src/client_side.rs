//! What the client commands offer the server: elicitation (asked on the terminal, see
//! [`crate::elicit`]), sampling through `--sampling-cmd`, and the roots of `--root`. The
//! capabilities declared are exactly what is served: `sampling` only with `--sampling-cmd`,
//! `roots` only with `--root`; elicitation (form and URL) always, declined without a terminal.

use std::path::PathBuf;
use std::process::Stdio;

use anyhow::Context;
use oxmcp_client::ClientHandlers;
use oxmcp_jsonrpc::{ErrorObject, printable};
use oxmcp_types::{CreateMessageParams, CreateMessageResult, ListRootsResult, Root};
use tokio::io::AsyncWriteExt;

/// `--sampling-cmd` and `--root` of the client commands.
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct ClientSide {
    /// Answer the server's sampling requests with this command (run with `sh -c`): it reads
    /// the `sampling/createMessage` params as JSON on stdin and writes a CreateMessageResult
    /// (`{"role":"assistant","content":{"type":"text","text":"..."},"model":"..."}`) on
    /// stdout. Without it sampling is not offered, and refused if asked.
    #[arg(long, value_name = "CMD")]
    pub(crate) sampling_cmd: Option<String>,
    /// Offer this directory to the server as a root (`roots/list` answers its file:// URI);
    /// repeatable.
    #[arg(long = "root", value_name = "PATH")]
    pub(crate) roots: Vec<PathBuf>,
}

impl ClientSide {
    /// The handlers (and so the capabilities) these options make.
    ///
    /// # Errors
    /// A `--root` that does not exist or cannot be a file:// URI.
    pub(crate) fn handlers(&self) -> anyhow::Result<ClientHandlers> {
        let mut handlers = ClientHandlers::new()
            .elicitation(|params| async move { Ok(crate::elicit::answer(params).await) })
            .url_elicitation();
        if let Some(cmd) = &self.sampling_cmd {
            let cmd = cmd.clone();
            handlers = handlers.sampling(move |params| sample(cmd.clone(), params));
        }
        if !self.roots.is_empty() {
            let roots = roots(&self.roots)?;
            handlers = handlers.roots(move || {
                let roots = roots.clone();
                async move { Ok(ListRootsResult::default().with_roots(roots)) }
            });
        }
        Ok(handlers)
    }
}

/// The roots of `--root` paths: canonical `file://` URIs named by their last component.
pub(crate) fn roots(paths: &[PathBuf]) -> anyhow::Result<Vec<Root>> {
    paths
        .iter()
        .map(|p| {
            let path = std::fs::canonicalize(p)
                .with_context(|| format!("--root {}: no such directory", p.display()))?;
            let uri = url::Url::from_file_path(&path)
                .map_err(|()| anyhow::anyhow!("--root {}: cannot be a file:// URI", p.display()))?;
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| path.display().to_string());
            Ok(Root::default()
                .with_uri(uri.to_string())
                .with_name(Some(name)))
        })
        .collect()
}

/// Runs the sampling command: the params on its stdin, its stdout the result.
async fn sample(
    cmd: String,
    params: CreateMessageParams,
) -> Result<CreateMessageResult, ErrorObject> {
    let failed = |why: String| ErrorObject::internal(format!("the sampling command {why}"));
    let input = serde_json::to_vec(&params)
        .map_err(|e| failed(format!("could not be given the request: {e}")))?;
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(&cmd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| failed(format!("could not be started: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its input is not an error in itself: its answer is.
        let _ = stdin.write_all(&input).await;
        drop(stdin);
    }
    let out = child
        .wait_with_output()
        .await
        .map_err(|e| failed(format!("failed: {e}")))?;
    if !out.status.success() {
        return Err(failed(format!("exited with {}", out.status)));
    }
    parse_result(&out.stdout).map_err(failed)
}

/// A sampling command's answer, checked.
pub(crate) fn parse_result(stdout: &[u8]) -> Result<CreateMessageResult, String> {
    let text = String::from_utf8_lossy(stdout);
    let result: CreateMessageResult = serde_json::from_str(text.trim()).map_err(|e| {
        let shown: String = text.trim().chars().take(200).collect();
        format!(
            "did not answer with a CreateMessageResult ({e}): {}",
            printable(&shown)
        )
    })?;
    if result.role != oxmcp_types::Role::Assistant {
        return Err("answered with role user; a sampling result is the assistant's".into());
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_answers_are_checked() {
        let good = br#"{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}"#;
        let r = parse_result(good).expect("a good answer");
        assert_eq!(r.model, "m");
        assert!(parse_result(b"not json").is_err());
        assert!(parse_result(br#"{"role":"assistant"}"#).is_err());
        let user = br#"{"role":"user","content":{"type":"text","text":"hi"},"model":"m"}"#;
        assert!(parse_result(user).unwrap_err().contains("role user"));
    }

    #[test]
    fn roots_are_canonical_file_uris_named_by_their_last_component() {
        let dir = std::env::temp_dir().join(format!("mcp-roots-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("a b")).expect("dir");
        let r = roots(&[dir.join("a b").join("..").join("a b")]).expect("roots");
        let canonical = std::fs::canonicalize(dir.join("a b")).expect("canonical");
        assert_eq!(r[0].name.as_deref(), Some("a b"));
        assert!(r[0].uri.starts_with("file:///"), "{}", r[0].uri);
        assert!(r[0].uri.ends_with("/a%20b"), "{}", r[0].uri);
        let back = url::Url::parse(&r[0].uri)
            .expect("url")
            .to_file_path()
            .expect("path");
        assert_eq!(back, canonical);
        assert!(roots(&[dir.join("missing")]).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
