//! What the client commands offer the server: elicitation (asked on the terminal, see
//! [`crate::elicit`]), sampling through `--sampling-cmd` (run by [`crate::sampling`]), and the
//! roots of `--root`. The capabilities declared are exactly what is served: `sampling` only
//! with `--sampling-cmd`, `roots` only with `--root`; elicitation (form and URL) always,
//! declined without a terminal.

use std::path::PathBuf;

use anyhow::Context;
use oxmcp_client::ClientHandlers;
use oxmcp_types::{ListRootsResult, Root};

/// `--sampling-cmd` (and its limits) and `--root` of the client commands.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct ClientSide {
    /// Answer the server's sampling requests with this command (run with `sh -c`): it reads
    /// the `sampling/createMessage` params as JSON on stdin and writes a CreateMessageResult
    /// (`{"role":"assistant","content":{"type":"text","text":"..."},"model":"..."}`) on
    /// stdout. Without it sampling is not offered, and refused if asked.
    #[arg(long, value_name = "CMD")]
    pub(crate) sampling_cmd: Option<String>,
    /// The longest one run of --sampling-cmd may take, in seconds: past it the command and
    /// every process it started are killed and the server gets an error. A request also
    /// waits at most this long for a free slot (see --sampling-concurrency).
    #[arg(long, value_name = "SECS", default_value_t = 120,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub(crate) sampling_timeout: u64,
    /// How many --sampling-cmd commands run at once; further sampling requests wait for one
    /// to finish (at most --sampling-timeout, then they fail).
    #[arg(long, value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub(crate) sampling_concurrency: u32,
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
            let sampler = crate::sampling::Sampler::new(
                cmd.clone(),
                std::time::Duration::from_secs(self.sampling_timeout),
                self.sampling_concurrency,
            );
            handlers = handlers.sampling(move |params| {
                let sampler = sampler.clone();
                async move { sampler.sample(params).await }
            });
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

#[cfg(test)]
mod tests {
    use super::*;

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
