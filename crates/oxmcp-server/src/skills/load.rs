//! Loading and checking skills: a folder read into memory within the limits, front matter
//! parsed, names checked.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use oxmcp_types::skills::{
    FrontMatterError, MAX_DESCRIPTION_LEN, RESERVED_METADATA_PREFIX, SKILL_MD, name_problem,
    parse_front_matter,
};
use serde_json::Value;

use super::{Skill, SkillFile, Skills, SkillsConfig};

/// Why skills could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillsError {
    /// A file or folder could not be read (the I/O error is the source).
    #[error("could not read {path}")]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A subfolder has no `SKILL.md`.
    #[error("{dir}: no SKILL.md")]
    MissingSkillMd {
        /// The folder.
        dir: PathBuf,
    },
    /// `SKILL.md` front matter is missing or bad.
    #[error("skill {skill:?}: {error}")]
    FrontMatter {
        /// The skill (its folder's name).
        skill: String,
        /// Why.
        error: FrontMatterError,
    },
    /// `SKILL.md` is not UTF-8, or a field breaks a rule of the SEP.
    #[error("skill {skill:?}: {why}")]
    Invalid {
        /// The skill.
        skill: String,
        /// Why.
        why: String,
    },
    /// A name breaks the naming rules.
    #[error("skill name {name:?}: {why}")]
    Name {
        /// The name.
        name: String,
        /// Why.
        why: &'static str,
    },
    /// The front matter's name differs from the folder's.
    #[error("skill folder {folder:?} holds a SKILL.md named {name:?}; they must be equal")]
    NameMismatch {
        /// The folder's name.
        folder: String,
        /// The front matter's.
        name: String,
    },
    /// A path is a symbolic link, not UTF-8, or has characters a URI would need to escape.
    #[error("{path}: {why}")]
    Path {
        /// The path.
        path: PathBuf,
        /// Why.
        why: &'static str,
    },
    /// A skill has more files than allowed.
    #[error("skill {skill:?} has more than {limit} files")]
    TooManyFiles {
        /// The skill.
        skill: String,
        /// The limit.
        limit: usize,
    },
    /// A skill's files add up to more bytes than allowed.
    #[error("skill {skill:?} is over {limit} bytes")]
    TooLarge {
        /// The skill.
        skill: String,
        /// The limit.
        limit: u64,
    },
    /// More skills than allowed.
    #[error("more than {limit} skills")]
    TooManySkills {
        /// The limit on the number of skills.
        limit: usize,
    },
    /// All skills together are over [`SkillsConfig::max_total_bytes`].
    #[error("the skills add up to more than {limit} bytes")]
    TotalTooLarge {
        /// The limit.
        limit: u64,
    },
    /// Two skills share a name.
    #[error("duplicate skill {name:?}")]
    Duplicate {
        /// The name.
        name: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SkillsError + '_ {
    move |source| SkillsError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Characters a path segment may hold: RFC 3986 unreserved and a few sub-delimiters, so
/// that a file's URI is its path as is.
fn segment_ok(s: &str) -> bool {
    !s.is_empty()
        && s != ".."
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'=' | b',' | b'@')
        })
}

/// Sorted directory entries whose name does not start with `.`.
fn entries(dir: &Path) -> Result<Vec<(String, PathBuf, std::fs::FileType)>, SkillsError> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let path = entry.path();
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            return Err(SkillsError::Path {
                path,
                why: "the name is not UTF-8",
            });
        };
        if name.starts_with('.') {
            continue;
        }
        let kind = entry.file_type().map_err(io(&path))?;
        out.push((name, path, kind));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Loads every skill of `dir`.
pub(super) fn from_dir(dir: &Path, config: SkillsConfig) -> Result<Skills, SkillsError> {
    let mut skills = Skills::new(config);
    let mut total = 0u64;
    for (name, path, kind) in entries(dir)? {
        if kind.is_symlink() {
            return Err(SkillsError::Path {
                path,
                why: "symbolic links are not followed",
            });
        }
        if !kind.is_dir() {
            continue;
        }
        if let Some(why) = name_problem(&name) {
            return Err(SkillsError::Name { name, why });
        }
        let mut files = BTreeMap::new();
        let mut budget = Budget {
            skill: &name,
            files: 0,
            bytes: 0,
            config: &skills.config,
        };
        read_tree(&path, "", &mut files, &mut budget)?;
        if !files.contains_key(SKILL_MD) {
            return Err(SkillsError::MissingSkillMd { dir: path });
        }
        total += budget.bytes;
        if total > skills.config.max_total_bytes {
            return Err(SkillsError::TotalTooLarge {
                limit: skills.config.max_total_bytes,
            });
        }
        let skill = skill_from_files(&name, files, &skills.config)?;
        skills.insert(skill)?;
    }
    Ok(skills)
}

/// What one skill has used of its limits while it is read.
struct Budget<'a> {
    skill: &'a str,
    files: usize,
    bytes: u64,
    config: &'a SkillsConfig,
}

impl Budget<'_> {
    fn take(&mut self, bytes: u64) -> Result<(), SkillsError> {
        self.files += 1;
        self.bytes = self.bytes.saturating_add(bytes);
        if self.files > self.config.max_files_per_skill {
            return Err(SkillsError::TooManyFiles {
                skill: self.skill.to_owned(),
                limit: self.config.max_files_per_skill,
            });
        }
        if self.bytes > self.config.max_skill_bytes {
            return Err(SkillsError::TooLarge {
                skill: self.skill.to_owned(),
                limit: self.config.max_skill_bytes,
            });
        }
        Ok(())
    }
}

/// Reads a skill's folder recursively; sizes are checked before each file is read.
fn read_tree(
    dir: &Path,
    prefix: &str,
    files: &mut BTreeMap<String, Vec<u8>>,
    budget: &mut Budget<'_>,
) -> Result<(), SkillsError> {
    for (name, path, kind) in entries(dir)? {
        if kind.is_symlink() {
            return Err(SkillsError::Path {
                path,
                why: "symbolic links are not followed",
            });
        }
        if !segment_ok(&name) {
            return Err(SkillsError::Path {
                path,
                why: "use letters, digits and - . _ ~ + = , @ in file names",
            });
        }
        let rel = format!("{prefix}{name}");
        if kind.is_dir() {
            read_tree(&path, &format!("{rel}/"), files, budget)?;
        } else if kind.is_file() {
            // Read at most one byte over what the skill has left: a file that grows while
            // it is read cannot take more memory than the limit.
            let left = budget.config.max_skill_bytes.saturating_sub(budget.bytes);
            let mut bytes = Vec::new();
            std::fs::File::open(&path)
                .and_then(|f| f.take(left.saturating_add(1)).read_to_end(&mut bytes))
                .map_err(io(&path))?;
            budget.take(bytes.len() as u64)?;
            files.insert(rel, bytes);
        }
    }
    Ok(())
}

/// Builds a skill from its files and checks it.
pub(super) fn skill_from_files(
    name: &str,
    files: BTreeMap<String, Vec<u8>>,
    config: &SkillsConfig,
) -> Result<Skill, SkillsError> {
    if let Some(why) = name_problem(name) {
        return Err(SkillsError::Name {
            name: name.to_owned(),
            why,
        });
    }
    let mut budget = Budget {
        skill: name,
        files: 0,
        bytes: 0,
        config,
    };
    for (path, bytes) in &files {
        if !path.split('/').all(segment_ok) {
            return Err(SkillsError::Path {
                path: path.into(),
                why: "use letters, digits and - . _ ~ + = , @ in file names",
            });
        }
        budget.take(bytes.len() as u64)?;
    }
    let skill_md = files
        .get(SKILL_MD)
        .ok_or_else(|| SkillsError::MissingSkillMd {
            dir: PathBuf::from(name),
        })?;
    let text = std::str::from_utf8(skill_md).map_err(|_| SkillsError::Invalid {
        skill: name.to_owned(),
        why: "SKILL.md is not UTF-8".into(),
    })?;
    let frontmatter = parse_front_matter(text).map_err(|error| SkillsError::FrontMatter {
        skill: name.to_owned(),
        error,
    })?;
    check_front_matter(name, &frontmatter)?;
    let files = files
        .into_iter()
        .map(|(path, bytes)| {
            let file = SkillFile::new(&path, bytes);
            (path, file)
        })
        .collect();
    Ok(Skill {
        name: name.to_owned(),
        frontmatter,
        files,
    })
}

/// The name equals the folder's; the description fits; no reserved metadata keys.
fn check_front_matter(folder: &str, fm: &oxmcp_types::JsonObject) -> Result<(), SkillsError> {
    let name = fm.get("name").and_then(Value::as_str).unwrap_or_default();
    if name != folder {
        return Err(SkillsError::NameMismatch {
            folder: folder.to_owned(),
            name: name.to_owned(),
        });
    }
    let description = fm
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if description.chars().count() > MAX_DESCRIPTION_LEN {
        return Err(SkillsError::Invalid {
            skill: folder.to_owned(),
            why: format!("the description is over {MAX_DESCRIPTION_LEN} characters"),
        });
    }
    if let Some(Value::Object(metadata)) = fm.get("metadata")
        && let Some(key) = metadata
            .keys()
            .find(|k| k.starts_with(RESERVED_METADATA_PREFIX))
    {
        return Err(SkillsError::Invalid {
            skill: folder.to_owned(),
            why: format!(
                "metadata key {key:?} uses the reserved prefix {RESERVED_METADATA_PREFIX}"
            ),
        });
    }
    Ok(())
}
