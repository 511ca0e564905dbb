//! The Skills extension (SEP-2640, `io.modelcontextprotocol/skills`): a folder of skills
//! served from memory.
//!
//! [`Skills::from_dir`] loads every subfolder that holds a `SKILL.md` (YAML front matter with
//! `name` and `description`, then Markdown) with all its files, nested folders included, and
//! checks it: the name rules, the name equal to the folder's, the 512-file and 16 MiB limits
//! per skill. A bad skill fails the whole load with a [`SkillsError`] naming it: a publisher
//! learns at start-up, not from a client. [`crate::ServerBuilder::skills`] then declares the
//! extension (with `directoryRead: true`) and the `resources` capability, and serves
//! `skills/list` (paginated), `skills/get`, `resources/directory/read`, each `SKILL.md` as a
//! listed resource and the other files through the template `skill://{skill}/{+path}`.
//!
//! ```no_run
//! # fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let skills = oxmcp_server::skills::Skills::from_dir("skills")?;
//! let server = oxmcp_server::Server::builder("docs", "1.0.0").skills(skills).build()?;
//! # Ok(()) }
//! ```

mod load;
mod serve;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use oxmcp_types::skills::{SKILL_MD, SkillEntry, SkillResource, SkillResources};
use oxmcp_types::{CacheScope, JsonObject};

pub use load::SkillsError;

/// Limits and settings of served skills.
#[derive(Debug, Clone, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "", generate_private = false)]
pub struct SkillsConfig {
    /// Skills per `skills/list` page (default 50).
    pub page_size: usize,
    /// Children per `resources/directory/read` page (default 100).
    pub directory_page_size: usize,
    /// Files per skill, `SKILL.md` included (default and at most 512, the SEP's limit).
    pub max_files_per_skill: usize,
    /// Bytes per skill, all files added up (default and at most 16 MiB, the SEP's limit).
    pub max_skill_bytes: u64,
    /// Skills in one folder (default 1,000).
    pub max_skills: usize,
    /// Bytes of all skills together (default 256 MiB): everything is held in memory.
    pub max_total_bytes: u64,
    /// `ttlMs` of `skills/list` and `skills/get` results (default 60 s).
    pub ttl_ms: u64,
    /// `cacheScope` of `skills/list` and `skills/get` results (default public).
    pub cache_scope: CacheScope,
}

impl Default for SkillsConfig {
    fn default() -> Self {
        Self {
            page_size: 50,
            directory_page_size: 100,
            max_files_per_skill: oxmcp_types::skills::MAX_RESOURCES_PER_SKILL,
            max_skill_bytes: oxmcp_types::skills::MAX_SKILL_BYTES,
            max_skills: 1_000,
            max_total_bytes: 256 * 1024 * 1024,
            ttl_ms: 60_000,
            cache_scope: CacheScope::Public,
        }
    }
}

/// One file of a skill, held in memory.
#[derive(Debug, Clone)]
pub struct SkillFile {
    /// The raw bytes.
    pub bytes: Arc<[u8]>,
    /// `sha256:<hex>` of the bytes.
    pub digest: String,
    /// The MIME type, from the file's extension.
    pub mime_type: String,
}

impl SkillFile {
    /// A file with these bytes; the MIME type follows from `path`'s extension.
    pub fn new(path: &str, bytes: Vec<u8>) -> Self {
        Self {
            digest: oxmcp_types::skills::digest(&bytes),
            bytes: bytes.into(),
            mime_type: mime_type(path).to_owned(),
        }
    }
}

/// One skill: its front matter and its files by path relative to the skill's folder
/// (`SKILL.md`, `references/FORMS.md`).
#[derive(Debug, Clone)]
pub struct Skill {
    /// The skill's name (the front matter's and the folder's).
    pub name: String,
    /// The `SKILL.md` front matter as JSON.
    pub frontmatter: JsonObject,
    /// Every file, by relative path with `/` separators.
    pub files: BTreeMap<String, SkillFile>,
}

impl Skill {
    /// A skill from its files (one of them `SKILL.md`), checked like a loaded folder's.
    ///
    /// # Errors
    /// [`SkillsError`] if `SKILL.md` is missing or its front matter is bad, the name breaks
    /// the rules or differs from `name`, a path is unusable or a limit is exceeded.
    pub fn from_files(
        name: &str,
        files: BTreeMap<String, Vec<u8>>,
        config: &SkillsConfig,
    ) -> Result<Self, SkillsError> {
        load::skill_from_files(name, files, config)
    }

    /// The URI of the skill's `SKILL.md`.
    pub fn uri(&self) -> String {
        oxmcp_types::skills::skill_md_uri(&self.name)
    }

    /// The URI of one of its files.
    pub fn file_uri(&self, path: &str) -> String {
        format!("skill://{}/{path}", self.name)
    }

    /// The bytes of all its files.
    pub fn total_bytes(&self) -> u64 {
        self.files.values().map(|f| f.bytes.len() as u64).sum()
    }

    /// The skill's entry, as `skills/list` and `skills/get` give it: `SKILL.md` first.
    pub fn entry(&self) -> SkillEntry {
        let skill_md = self.files.get(SKILL_MD).map(|f| SkillResource {
            uri: self.uri(),
            digest: f.digest.clone(),
            size: f.bytes.len() as u64,
        });
        let others = self
            .files
            .iter()
            .filter(|(p, _)| p.as_str() != SKILL_MD)
            .map(|(p, f)| SkillResource {
                uri: self.file_uri(p),
                digest: f.digest.clone(),
                size: f.bytes.len() as u64,
            });
        SkillEntry {
            uri: self.uri(),
            frontmatter: self.frontmatter.clone(),
            resources: SkillResources::Files(skill_md.into_iter().chain(others).collect()),
        }
    }
}

/// The skills a server publishes, in name order, with their settings.
#[derive(Debug, Clone, Default)]
pub struct Skills {
    pub(crate) skills: BTreeMap<String, Skill>,
    pub(crate) config: SkillsConfig,
}

impl Skills {
    /// No skills yet, with these settings.
    pub fn new(config: SkillsConfig) -> Self {
        Self {
            skills: BTreeMap::new(),
            config,
        }
    }

    /// Loads every skill of a folder with the default settings (see [`Skills::from_dir_with`]).
    ///
    /// # Errors
    /// [`SkillsError`] naming the first bad skill or file.
    pub fn from_dir(dir: impl Into<PathBuf>) -> Result<Self, SkillsError> {
        Self::from_dir_with(dir, SkillsConfig::default())
    }

    /// Loads every skill of a folder: each subfolder with a `SKILL.md` is a skill named after
    /// it, with all its files (nested folders too). Entries whose name starts with `.` are
    /// ignored; symbolic links, file names that need percent-encoding in a URI and
    /// subfolders without `SKILL.md` are errors, as are skills over the limits.
    ///
    /// # Errors
    /// [`SkillsError`] naming the first bad skill or file.
    pub fn from_dir_with(
        dir: impl Into<PathBuf>,
        config: SkillsConfig,
    ) -> Result<Self, SkillsError> {
        load::from_dir(&dir.into(), config)
    }

    /// Adds a skill.
    ///
    /// # Errors
    /// [`SkillsError::Duplicate`] if a skill of that name is already there,
    /// [`SkillsError::TooManySkills`] over [`SkillsConfig::max_skills`].
    pub fn insert(&mut self, skill: Skill) -> Result<(), SkillsError> {
        if self.skills.len() >= self.config.max_skills {
            return Err(SkillsError::TooManySkills {
                limit: self.config.max_skills,
            });
        }
        if self.skills.contains_key(&skill.name) {
            return Err(SkillsError::Duplicate { name: skill.name });
        }
        self.skills.insert(skill.name.clone(), skill);
        Ok(())
    }

    /// The skills, in name order.
    pub fn iter(&self) -> impl Iterator<Item = &Skill> {
        self.skills.values()
    }

    /// A skill by name.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.get(name)
    }

    /// How many skills there are.
    pub fn len(&self) -> usize {
        self.skills.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }
}

impl crate::ServerBuilder {
    /// Publishes skills (SEP-2640): declares `io.modelcontextprotocol/skills` with
    /// `directoryRead: true` and the `resources` capability, serves `skills/list`,
    /// `skills/get` and `resources/directory/read`, lists each `SKILL.md` as a resource
    /// (named and described from its front matter) and reads every file through
    /// `resources/read`. Call it once: a second call registers the methods twice, which is
    /// a build error.
    pub fn skills(self, skills: Skills) -> Self {
        serve::register(self, Arc::new(skills))
    }

    /// [`ServerBuilder::skills`] with the skills of a folder ([`Skills::from_dir`]); a load
    /// error becomes the build's error.
    ///
    /// [`ServerBuilder::skills`]: crate::ServerBuilder::skills
    pub fn skills_dir(self, dir: impl Into<PathBuf>) -> Self {
        match Skills::from_dir(dir) {
            Ok(skills) => self.skills(skills),
            Err(e) => self.push_error(crate::BuildError::Skills(e)),
        }
    }
}

/// The MIME type of a file by its extension (`application/octet-stream` when unknown).
pub fn mime_type(path: &str) -> &'static str {
    let ext = path
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" | "text" => "text/plain",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "xml" => "application/xml",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "js" | "mjs" => "text/javascript",
        "ts" => "text/x-typescript",
        "py" => "text/x-python",
        "sh" | "bash" => "text/x-shellscript",
        "rs" => "text/x-rust",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mime_types_follow_extensions() {
        assert_eq!(mime_type("SKILL.md"), "text/markdown");
        assert_eq!(mime_type("scripts/fill.PY"), "text/x-python");
        assert_eq!(mime_type("LICENSE"), "application/octet-stream");
    }
}
