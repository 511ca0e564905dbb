//! The demo server's stateful tools: `cd`, `pwd` and `ls` over a small read-only tree, which
//! remember each session's working directory, and a notebook per user (`note`, `notes`).
//! Both keep their state where the server keeps handlers' state: in memory, or in the shared
//! store given with `--store`, so every instance behind a load balancer sees it.

use oxmcp_server::{Ctx, ServerBuilder, StateError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The tree: every directory, then its entries (a trailing `/` marks a directory).
const TREE: &[(&str, &[&str])] = &[
    ("/", &["docs/", "src/", "notes.txt"]),
    ("/docs", &["guide.md", "readme.md"]),
    ("/src", &["bin/", "lib.rs", "main.rs"]),
    ("/src/bin", &["tool.rs"]),
];

/// The session state key of the working directory.
const CWD: &str = "demo.cwd";
/// The user state key of the notebook.
const NOTEBOOK: &str = "demo.notebook";
/// Notes one notebook holds at most (the oldest go first).
const MAX_NOTES: usize = 100;
/// The longest note, in characters.
const MAX_NOTE: usize = 500;
/// The most a notebook takes as JSON (under the default value limit of 64 KiB): the oldest
/// notes go first.
const MAX_BOOK_BYTES: usize = 60 * 1024;

#[derive(Deserialize, JsonSchema)]
struct CdArgs {
    /// The directory to change to: absolute, or relative to the current one (`..` goes up).
    path: String,
}

#[derive(Deserialize, JsonSchema)]
struct LsArgs {
    /// The directory to list (default: the current one).
    #[serde(default)]
    path: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct NoteArgs {
    /// What to write down (at most 500 characters).
    text: String,
}

/// One note of a notebook.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Note {
    text: String,
    at_ms: u64,
}

/// `path` resolved against `cwd`: an absolute, normalised path (`.` and `..` resolved; `..`
/// at the root stays at the root).
fn resolve(cwd: &str, path: &str) -> String {
    let mut parts: Vec<&str> = if path.starts_with('/') {
        Vec::new()
    } else {
        cwd.split('/').filter(|p| !p.is_empty()).collect()
    };
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

fn entries(dir: &str) -> Option<&'static [&'static str]> {
    TREE.iter().find(|(d, _)| *d == dir).map(|(_, e)| *e)
}

async fn cwd(ctx: &Ctx) -> Result<String, StateError> {
    let cwd: Option<String> = ctx.session_state()?.get(CWD).await?;
    Ok(cwd.unwrap_or_else(|| "/".to_owned()))
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// cd, pwd, ls, note, notes.
pub(crate) fn state_tools(builder: ServerBuilder) -> ServerBuilder {
    builder
        .tool(
            "cd",
            "Changes this session's working directory in the demo tree (remembered between calls)",
            |ctx: Ctx, a: CdArgs| async move {
                let here = cwd(&ctx).await.map_err(|e| e.to_string())?;
                let there = resolve(&here, &a.path);
                if entries(&there).is_none() {
                    return Err(format!("no such directory: {there}"));
                }
                let state = ctx.session_state().map_err(|e| e.to_string())?;
                state.set(CWD, &there).await.map_err(|e| e.to_string())?;
                Ok(there)
            },
        )
        .tool(
            "pwd",
            "This session's working directory in the demo tree",
            |ctx: Ctx, _: serde_json::Value| async move {
                cwd(&ctx).await.map_err(|e| e.to_string())
            },
        )
        .tool(
            "ls",
            "Lists a directory of the demo tree (the working directory by default), one entry per line",
            |ctx: Ctx, a: LsArgs| async move {
                let here = cwd(&ctx).await.map_err(|e| e.to_string())?;
                let dir = resolve(&here, a.path.as_deref().unwrap_or("."));
                entries(&dir)
                    .map(|e| e.join("\n"))
                    .ok_or_else(|| format!("no such directory: {dir}"))
            },
        )
        .tool(
            "note",
            "Adds a note to the caller's own notebook, kept across sessions (needs an authenticated caller); returns how many notes it holds",
            |ctx: Ctx, a: NoteArgs| async move {
                if a.text.chars().count() > MAX_NOTE {
                    return Err(format!("a note holds at most {MAX_NOTE} characters"));
                }
                let state = ctx.user_state().map_err(|e| e.to_string())?;
                let note = Note {
                    text: a.text,
                    at_ms: now_ms(),
                };
                let book = state
                    .update(NOTEBOOK, |book: Option<Vec<Note>>| {
                        let mut book = book.unwrap_or_default();
                        book.push(note.clone());
                        let over = book.len().saturating_sub(MAX_NOTES);
                        book.drain(..over);
                        while book.len() > 1
                            && serde_json::to_string(&book).map_or(0, |j| j.len()) > MAX_BOOK_BYTES
                        {
                            book.remove(0);
                        }
                        Some(book)
                    })
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(format!("{} notes", book.map_or(0, |b| b.len())))
            },
        )
        .tool(
            "notes",
            "The caller's notebook, oldest first, one note per line",
            |ctx: Ctx, _: serde_json::Value| async move {
                let state = ctx.user_state().map_err(|e| e.to_string())?;
                let book: Option<Vec<Note>> = state.get(NOTEBOOK).await.map_err(|e| e.to_string())?;
                Ok::<_, String>(
                    book.unwrap_or_default()
                        .iter()
                        .map(|n| n.text.as_str())
                        .collect::<Vec<_>>()
                        .join("\n"),
                )
            },
        )
}

#[cfg(test)]
mod tests {
    use super::resolve;

    #[test]
    fn paths_resolve_within_the_tree() {
        assert_eq!(resolve("/", "docs"), "/docs");
        assert_eq!(resolve("/src", "bin"), "/src/bin");
        assert_eq!(resolve("/src/bin", ".."), "/src");
        assert_eq!(resolve("/src/bin", "../../docs/./"), "/docs");
        assert_eq!(resolve("/docs", "/src"), "/src");
        assert_eq!(resolve("/", "../../.."), "/");
        assert_eq!(resolve("/docs", ""), "/docs");
    }
}
