//! `oxmcp skills`: a server's skills (SEP-2640), listed, or one loaded verified and printed or
//! written to a folder; and the folder `oxmcp serve --skills DIR` publishes.

use std::path::{Component, Path, PathBuf};

use anyhow::{Context, bail};
use oxmcp_client::skills::{LoadedSkill, SkillsError};
use oxmcp_types::skills::SkillEntry;
use serde_json::json;

use crate::commands::call_error;
use crate::inspect::Reach;
use crate::target;

/// The arguments of `oxmcp skills`.
#[derive(Debug, clap::Args)]
pub(crate) struct SkillsArgs {
    /// [URL] [NAME]: the server's URL (or a stdio command after --), and the skill to load,
    /// by name or `skill://` URI. Without NAME, the skills are listed.
    #[arg(num_args = 0..=2)]
    pub(crate) words: Vec<String>,
    /// Write the loaded skill's files into this folder (created if needed) instead of
    /// printing its SKILL.md.
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) reach: Reach,
}

/// Splits `[URL] [NAME]`.
fn url_and_name(words: &[String]) -> anyhow::Result<(Option<String>, Option<String>)> {
    let (url, rest) = match words.first() {
        Some(w) if w.contains("://") && !w.starts_with("skill://") => {
            (Some(w.clone()), &words[1..])
        }
        _ => (None, words),
    };
    match rest {
        [] => Ok((url, None)),
        [name] => Ok((url, Some(name.clone()))),
        _ => bail!("too many arguments: expected [URL] [NAME]"),
    }
}

/// Runs `oxmcp skills`.
pub(crate) async fn run(args: SkillsArgs) -> anyhow::Result<()> {
    let (url, name) = url_and_name(&args.words)?;
    if args.out.is_some() && name.is_none() {
        bail!("--out needs the NAME of the skill to load");
    }
    let reach = &args.reach;
    let target = target::Target::from_parts(url, reach.server.clone())?;
    let conn = target::connect(&target, &reach.auth).await?;
    let skills = conn.client.skills();
    let outcome = match &name {
        None => skills.list().await.map(Err),
        Some(n) => {
            let uri = if n.contains("://") {
                n.clone()
            } else {
                oxmcp_types::skills::skill_md_uri(n)
            };
            skills.load_uri(&uri).await.map(Ok)
        }
    };
    conn.close().await;
    match outcome.map_err(skills_error)? {
        Err(list) => print_list(&list, reach.json),
        Ok(skill) => match &args.out {
            Some(dir) => write_out(&skill, dir),
            None if reach.json => print_loaded_json(&skill),
            None => {
                print!("{}", skill.skill_md());
                Ok(())
            }
        },
    }
}

fn skills_error(e: SkillsError) -> anyhow::Error {
    match e {
        SkillsError::Call(c) => call_error(c),
        SkillsError::NotDeclared => anyhow::anyhow!("the server publishes no skills"),
        other => anyhow::anyhow!("refused: {other}"),
    }
}

/// Files and bytes an entry lists (`None` for a dynamic skill).
fn files_and_size(e: &SkillEntry) -> Option<(usize, u64)> {
    e.files().map(|f| (f.len(), f.iter().map(|r| r.size).sum()))
}

fn print_list(list: &[SkillEntry], json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(list)?);
        return Ok(());
    }
    let width = list
        .iter()
        .map(|e| e.name().map_or(0, str::len))
        .max()
        .unwrap_or(0);
    for e in list {
        let files = match files_and_size(e) {
            Some((n, bytes)) => format!("{n} files, {bytes} bytes"),
            None => "dynamic".to_owned(),
        };
        println!(
            "{:width$}  {}  ({files})\n{:width$}  {}",
            e.name().unwrap_or("?"),
            e.uri,
            "",
            oxmcp_jsonrpc::printable(e.description().unwrap_or(""))
        );
    }
    Ok(())
}

fn print_loaded_json(skill: &LoadedSkill) -> anyhow::Result<()> {
    let files: Vec<_> = skill
        .files
        .iter()
        .map(|f| json!({"uri": f.uri, "path": f.path, "mimeType": f.mime_type, "size": f.bytes.len()}))
        .collect();
    let v = json!({"skill": skill.entry, "files": files, "skillMd": skill.skill_md()});
    println!("{}", serde_json::to_string_pretty(&v)?);
    Ok(())
}

/// A file's path under `dir`, refusing anything that would leave it.
fn safe_join(dir: &Path, rel: &str) -> anyhow::Result<PathBuf> {
    let rel_path = Path::new(rel);
    let plain = !rel.is_empty()
        && !rel.contains('\\')
        && rel_path
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
    if !plain {
        bail!("refused to write {rel:?}: not a plain relative path");
    }
    Ok(dir.join(rel_path))
}

/// Writes the skill's files under `dir`, never through a symlink found there (see
/// [`crate::nofollow`]).
fn write_out(skill: &LoadedSkill, dir: &Path) -> anyhow::Result<()> {
    let mut targets = Vec::new();
    for f in &skill.files {
        safe_join(dir, &f.path)?;
        targets.push((Path::new(&f.path), &f.bytes));
    }
    let out = crate::nofollow::OutDir::create(dir)?;
    for (rel, bytes) in targets {
        out.write(rel, bytes)?;
    }
    eprintln!(
        "{}: {} files written to {}",
        skill.entry.name().unwrap_or("skill"),
        skill.files.len(),
        dir.display()
    );
    Ok(())
}

/// The skills of `oxmcp serve --skills DIR`, published on the demo server's builder.
pub(crate) fn publish(
    builder: oxmcp_server::ServerBuilder,
    dir: Option<&Path>,
) -> anyhow::Result<oxmcp_server::ServerBuilder> {
    let Some(dir) = dir else {
        return Ok(builder);
    };
    let skills = oxmcp_server::skills::Skills::from_dir(dir)
        .with_context(|| format!("--skills {}", dir.display()))?;
    Ok(builder.skills(skills))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_into_url_and_name() {
        let w = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let (u, n) = url_and_name(&w(&["http://h/mcp", "pdf"])).unwrap();
        assert_eq!(
            (u.as_deref(), n.as_deref()),
            (Some("http://h/mcp"), Some("pdf"))
        );
        let (u, n) = url_and_name(&w(&["skill://pdf/SKILL.md"])).unwrap();
        assert_eq!((u, n.as_deref()), (None, Some("skill://pdf/SKILL.md")));
        assert!(url_and_name(&w(&["a", "b"])).is_err());
    }

    #[test]
    fn only_plain_relative_paths_are_written() {
        let d = Path::new("/tmp/out");
        assert!(safe_join(d, "references/FORMS.md").is_ok());
        for bad in ["../x", "/etc/passwd", "a/../../x", "", "a\\b", "./a"] {
            assert!(safe_join(d, bad).is_err(), "{bad}");
        }
    }
}
