//! The Skills extension (SEP-2640) on the client: list a server's skills, and load one only
//! when asked, verified before anything is returned.
//!
//! Nothing is fetched ahead of need: [`Skills::list`] reads `skills/list` only (no file), and
//! [`Skills::load`] reads `SKILL.md` first, checks its size, digest and front matter against
//! the entry, and only then reads the other files, each checked the same way. The first
//! mismatch stops the load with a typed [`SkillsError`]; no unverified byte is returned.
//!
//! ```no_run
//! # async fn run(client: &oxmcp_client::Client) -> Result<(), oxmcp_client::skills::SkillsError> {
//! let skills = oxmcp_client::skills::Skills::new(client);
//! for entry in skills.list().await? {
//!     println!("{}: {}", entry.name().unwrap_or("?"), entry.description().unwrap_or(""));
//! }
//! let skill = skills.load_uri("skill://pdf-processing/SKILL.md").await?;
//! println!("{}", skill.skill_md());
//! # Ok(()) }
//! ```

use std::collections::BTreeSet;

use base64::Engine;
use oxmcp_engine::CallError;
use oxmcp_types::skills::{
    EXTENSION_ID, FrontMatterError, GetSkillResult, ListSkillsResult, MAX_RESOURCES_PER_SKILL,
    MAX_SKILL_BYTES, SKILL_MD, SkillEntry, SkillResource, SkillResources, digest, name_of_uri,
    name_problem, parse_front_matter,
};
use serde_json::{Value, json};

use crate::Client;

/// Why skills could not be listed or a skill could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillsError {
    /// The server does not declare `io.modelcontextprotocol/skills`.
    #[error("the server does not declare the skills extension")]
    NotDeclared,
    /// A request failed.
    #[error(transparent)]
    Call(#[from] CallError),
    /// A result does not have the extension's shape.
    #[error("bad {method} result: {why}")]
    BadResult {
        /// The method.
        method: &'static str,
        /// Why.
        why: String,
    },
    /// `skills/list` kept returning cursors past the page cap, or repeated one.
    #[error("skills/list did not end within {0} pages")]
    TooManyPages(usize),
    /// The entry itself is unusable: no `SKILL.md` in its resources, a file outside the
    /// skill, a bad name, over the SEP's limits.
    #[error("skill {uri}: {why}")]
    BadEntry {
        /// The skill's URI.
        uri: String,
        /// Why.
        why: String,
    },
    /// A file's length differs from the entry's `size`.
    #[error("{uri}: {actual} bytes read, the entry says {expected}")]
    SizeMismatch {
        /// The file.
        uri: String,
        /// The entry's size.
        expected: u64,
        /// What was read.
        actual: u64,
    },
    /// A file's SHA-256 differs from the entry's `digest`.
    #[error("{uri}: digest {actual}, the entry says {expected}")]
    DigestMismatch {
        /// The file.
        uri: String,
        /// The entry's digest.
        expected: String,
        /// The digest of what was read.
        actual: String,
    },
    /// `SKILL.md` has no usable front matter.
    #[error("{uri}: {error}")]
    FrontMatter {
        /// The `SKILL.md`.
        uri: String,
        /// Why.
        error: FrontMatterError,
    },
    /// `SKILL.md`'s front matter differs from the entry's, or its name from the URI's.
    #[error("{uri}: front matter field {field:?} differs from the entry's")]
    FrontMatterMismatch {
        /// The `SKILL.md`.
        uri: String,
        /// The first differing field.
        field: String,
    },
    /// `resources/read` gave no contents, or undecodable ones.
    #[error("{uri}: {why}")]
    BadContents {
        /// The file.
        uri: String,
        /// Why.
        why: String,
    },
}

/// One verified file of a loaded skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFileContents {
    /// The file's URI.
    pub uri: String,
    /// Its path in the skill's folder (`SKILL.md`, `references/FORMS.md`).
    pub path: String,
    /// The MIME type the server gave.
    pub mime_type: Option<String>,
    /// The verified bytes.
    pub bytes: Vec<u8>,
}

/// A skill loaded and verified: its entry and every file (`SKILL.md` first).
#[derive(Debug, Clone)]
pub struct LoadedSkill {
    /// The entry the files were verified against.
    pub entry: SkillEntry,
    /// The files, `SKILL.md` first.
    pub files: Vec<SkillFileContents>,
}

impl LoadedSkill {
    /// The text of `SKILL.md`.
    pub fn skill_md(&self) -> &str {
        self.files
            .first()
            .and_then(|f| std::str::from_utf8(&f.bytes).ok())
            .unwrap_or_default()
    }
}

/// The skills of one server, read through a [`Client`].
#[derive(Debug, Clone, Copy)]
pub struct Skills<'a> {
    client: &'a Client,
    max_pages: usize,
}

impl<'a> Skills<'a> {
    /// Skills through this client; `skills/list` follows at most 50 pages.
    pub fn new(client: &'a Client) -> Self {
        Self {
            client,
            max_pages: 50,
        }
    }

    /// At most this many `skills/list` pages are read.
    pub fn max_pages(mut self, pages: usize) -> Self {
        self.max_pages = pages.max(1);
        self
    }

    /// Whether the server declares the extension.
    pub fn declared(&self) -> bool {
        self.client
            .server_capabilities()
            .extensions
            .as_ref()
            .is_some_and(|e| e.contains_key(EXTENSION_ID))
    }

    /// Whether the server declares `directoryRead: true`.
    pub fn directory_read(&self) -> bool {
        self.client
            .server_capabilities()
            .extensions
            .as_ref()
            .and_then(|e| e.get(EXTENSION_ID))
            .and_then(|s| s.get(oxmcp_types::skills::DIRECTORY_READ_SETTING))
            == Some(&Value::Bool(true))
    }

    fn require(&self) -> Result<(), SkillsError> {
        if self.declared() {
            Ok(())
        } else {
            Err(SkillsError::NotDeclared)
        }
    }

    /// Every skill the server lists, following `nextCursor` (at most [`Skills::max_pages`]
    /// pages; a repeated cursor is an error). No file is read.
    ///
    /// # Errors
    /// [`SkillsError`]: not declared, a failed request, a bad result, too many pages.
    pub async fn list(&self) -> Result<Vec<SkillEntry>, SkillsError> {
        self.require()?;
        let mut skills = Vec::new();
        let mut seen = BTreeSet::new();
        let mut cursor: Option<String> = None;
        for _ in 0..self.max_pages {
            let params = match &cursor {
                Some(c) => json!({ "cursor": c }),
                None => json!({}),
            };
            let v = self.client.request("skills/list", params).await?;
            let page: ListSkillsResult = decode("skills/list", v)?;
            skills.extend(page.skills);
            match page.next_cursor.filter(|c| !c.is_empty()) {
                None => return Ok(skills),
                Some(c) if !seen.insert(c.clone()) => break,
                Some(c) => cursor = Some(c),
            }
        }
        Err(SkillsError::TooManyPages(self.max_pages))
    }

    /// One skill's entry by its `SKILL.md` URI (`skills/get`). No file is read.
    ///
    /// # Errors
    /// [`SkillsError`]; an unknown skill is the server's -32602 as [`SkillsError::Call`].
    pub async fn get(&self, uri: &str) -> Result<SkillEntry, SkillsError> {
        self.require()?;
        let v = self
            .client
            .request("skills/get", json!({ "uri": uri }))
            .await?;
        let r: GetSkillResult = decode("skills/get", v)?;
        if r.skill.uri != uri {
            return Err(SkillsError::BadResult {
                method: "skills/get",
                why: format!("asked for {uri}, got {}", r.skill.uri),
            });
        }
        Ok(r.skill)
    }

    /// [`Skills::get`] then [`Skills::load`].
    ///
    /// # Errors
    /// As both.
    pub async fn load_uri(&self, uri: &str) -> Result<LoadedSkill, SkillsError> {
        let entry = self.get(uri).await?;
        self.load(&entry).await
    }

    /// Loads a skill verified against its entry: `SKILL.md` first (size, digest, then its
    /// front matter field by field against the entry's, and its name against the URI's),
    /// then each other file (size and digest). A dynamic entry (no manifest) loads
    /// `SKILL.md` alone, its front matter checked.
    ///
    /// # Errors
    /// The first mismatch or failure, before any further file is read.
    pub async fn load(&self, entry: &SkillEntry) -> Result<LoadedSkill, SkillsError> {
        let files = check_entry(entry)?;
        let mut loaded = Vec::new();
        let skill_md = files.iter().find(|r| r.uri == entry.uri);
        let dir = skill_dir(&entry.uri);
        let md = self.fetch(&dir, &entry.uri, skill_md).await?;
        verify_front_matter(entry, &md.bytes)?;
        loaded.push(md);
        for r in files.iter().filter(|r| r.uri != entry.uri) {
            loaded.push(self.fetch(&dir, &r.uri, Some(r)).await?);
        }
        Ok(LoadedSkill {
            entry: entry.clone(),
            files: loaded,
        })
    }

    /// Reads one file of the skill in `dir` and checks it against its resource entry, if
    /// there is one.
    async fn fetch(
        &self,
        dir: &str,
        uri: &str,
        expected: Option<&SkillResource>,
    ) -> Result<SkillFileContents, SkillsError> {
        let r = self.client.read_resource(uri).await?;
        let c = r
            .contents
            .into_iter()
            .find(|c| c.uri == uri)
            .ok_or_else(|| bad_contents(uri, "resources/read gave no contents for it"))?;
        let bytes = match (c.text, c.blob) {
            (Some(t), _) => t.into_bytes(),
            (None, Some(b)) => base64::engine::general_purpose::STANDARD
                .decode(b)
                .map_err(|e| bad_contents(uri, &format!("bad base64: {e}")))?,
            (None, None) => return Err(bad_contents(uri, "neither text nor blob")),
        };
        if let Some(e) = expected {
            verify_bytes(e, &bytes)?;
        }
        Ok(SkillFileContents {
            uri: uri.to_owned(),
            path: path_in_skill(dir, uri),
            mime_type: c.mime_type,
            bytes,
        })
    }
}

impl Client {
    /// The Skills extension's methods through this client (see [`Skills`]).
    pub fn skills(&self) -> Skills<'_> {
        Skills::new(self)
    }
}

fn decode<T: serde::de::DeserializeOwned>(
    method: &'static str,
    v: Value,
) -> Result<T, SkillsError> {
    serde_json::from_value(v).map_err(|e| SkillsError::BadResult {
        method,
        why: e.to_string(),
    })
}

fn bad_contents(uri: &str, why: &str) -> SkillsError {
    SkillsError::BadContents {
        uri: uri.to_owned(),
        why: why.to_owned(),
    }
}

fn bad_entry(entry: &SkillEntry, why: impl Into<String>) -> SkillsError {
    SkillsError::BadEntry {
        uri: entry.uri.clone(),
        why: why.into(),
    }
}

/// The skill's folder URI: its `SKILL.md` URI without `/SKILL.md`.
fn skill_dir(uri: &str) -> String {
    uri.strip_suffix(&format!("/{SKILL_MD}"))
        .unwrap_or(uri)
        .to_owned()
}

fn path_in_skill(dir: &str, uri: &str) -> String {
    uri.strip_prefix(dir)
        .map(|p| p.trim_start_matches('/'))
        .unwrap_or(uri)
        .to_owned()
}

/// The entry's files, checked before anything is fetched: `SKILL.md` listed, every file
/// under the skill's folder and listed once, the name valid, within the SEP's limits.
fn check_entry(entry: &SkillEntry) -> Result<Vec<SkillResource>, SkillsError> {
    let name = name_of_uri(&entry.uri)
        .ok_or_else(|| bad_entry(entry, "the uri does not end in /SKILL.md"))?;
    if let Some(why) = name_problem(name) {
        return Err(bad_entry(entry, why));
    }
    let files = match &entry.resources {
        SkillResources::Dynamic(_) => return Ok(Vec::new()),
        SkillResources::Files(f) => f.clone(),
    };
    if files.len() > MAX_RESOURCES_PER_SKILL {
        return Err(bad_entry(
            entry,
            format!("more than {MAX_RESOURCES_PER_SKILL} files"),
        ));
    }
    let total: u64 = files.iter().map(|f| f.size).fold(0, u64::saturating_add);
    if total > MAX_SKILL_BYTES {
        return Err(bad_entry(entry, format!("over {MAX_SKILL_BYTES} bytes")));
    }
    let dir = format!("{}/", skill_dir(&entry.uri));
    let mut seen = BTreeSet::new();
    for f in &files {
        if f.uri != entry.uri && !f.uri.starts_with(&dir) {
            return Err(bad_entry(entry, format!("{} is outside the skill", f.uri)));
        }
        if !seen.insert(f.uri.as_str()) {
            return Err(bad_entry(entry, format!("{} is listed twice", f.uri)));
        }
    }
    if !seen.contains(entry.uri.as_str()) {
        return Err(bad_entry(entry, "its resources do not list SKILL.md"));
    }
    Ok(files)
}

/// Size first (cheap), then the digest.
fn verify_bytes(expected: &SkillResource, bytes: &[u8]) -> Result<(), SkillsError> {
    let actual = bytes.len() as u64;
    if actual != expected.size {
        return Err(SkillsError::SizeMismatch {
            uri: expected.uri.clone(),
            expected: expected.size,
            actual,
        });
    }
    let d = digest(bytes);
    if d != expected.digest {
        return Err(SkillsError::DigestMismatch {
            uri: expected.uri.clone(),
            expected: expected.digest.clone(),
            actual: d,
        });
    }
    Ok(())
}

/// `SKILL.md`'s front matter equals the entry's, field by field, and names the skill of the
/// URI.
fn verify_front_matter(entry: &SkillEntry, bytes: &[u8]) -> Result<(), SkillsError> {
    let uri = &entry.uri;
    let text =
        std::str::from_utf8(bytes).map_err(|_| bad_contents(uri, "SKILL.md is not UTF-8"))?;
    let file = parse_front_matter(text).map_err(|error| SkillsError::FrontMatter {
        uri: uri.clone(),
        error,
    })?;
    let mismatch = |field: &str| SkillsError::FrontMatterMismatch {
        uri: uri.clone(),
        field: field.to_owned(),
    };
    let keys: BTreeSet<&String> = file.keys().chain(entry.frontmatter.keys()).collect();
    for key in keys {
        let a = file.get(key).unwrap_or(&Value::Null);
        let b = entry.frontmatter.get(key).unwrap_or(&Value::Null);
        if a != b {
            return Err(mismatch(key));
        }
    }
    if name_of_uri(uri) != file.get("name").and_then(Value::as_str) {
        return Err(mismatch("name"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(resources: Value) -> SkillEntry {
        serde_json::from_value(json!({
            "uri": "skill://a/SKILL.md",
            "frontmatter": {"name": "a", "description": "d"},
            "resources": resources,
        }))
        .unwrap()
    }

    #[test]
    fn entries_are_checked_before_any_read() {
        let ok = |uri: &str| json!({"uri": uri, "digest": digest(b""), "size": 0});
        assert!(check_entry(&entry(json!([ok("skill://a/SKILL.md"), ok("skill://a/x")]))).is_ok());
        for bad in [
            json!([ok("skill://a/x")]),
            json!([ok("skill://a/SKILL.md"), ok("skill://b/x")]),
            json!([ok("skill://a/SKILL.md"), ok("skill://a/SKILL.md")]),
        ] {
            assert!(matches!(
                check_entry(&entry(bad)),
                Err(SkillsError::BadEntry { .. })
            ));
        }
    }

    #[test]
    fn bytes_and_front_matter_are_verified() {
        let md = b"---\nname: a\ndescription: d\n---\nbody\n";
        let r = SkillResource {
            uri: "skill://a/SKILL.md".into(),
            digest: digest(md),
            size: md.len() as u64,
        };
        assert!(verify_bytes(&r, md).is_ok());
        let mut evil = md.to_vec();
        evil[30] = b'B';
        assert!(matches!(
            verify_bytes(&r, &evil),
            Err(SkillsError::DigestMismatch { .. })
        ));
        assert!(matches!(
            verify_bytes(&r, b"x"),
            Err(SkillsError::SizeMismatch { .. })
        ));
        let e = entry(json!("dynamic"));
        assert!(verify_front_matter(&e, md).is_ok());
        let other = b"---\nname: a\ndescription: other\n---\n";
        assert!(matches!(
            verify_front_matter(&e, other),
            Err(SkillsError::FrontMatterMismatch { field, .. }) if field == "description"
        ));
    }
}
