//! The Skills extension (SEP-2640, `io.modelcontextprotocol/skills`): its wire types
//! (`skills/list`, `skills/get`, `resources/directory/read`), the rules a skill name follows,
//! `SKILL.md` front matter parsed into JSON, and `sha256:` digests.
//!
//! A skill is a folder served as resources: `skill://<name>/SKILL.md` (YAML front matter with
//! at least `name` and `description`, then Markdown) and any other files under
//! `skill://<name>/...`. A skill entry lists every file once with its digest and size, so a
//! client can verify what it reads.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::common::{CacheScope, JsonObject};
use crate::resources::Resource;

/// The extension's identifier, under `capabilities.extensions`.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/skills";
/// The setting a server declares when it serves `resources/directory/read`.
pub const DIRECTORY_READ_SETTING: &str = "directoryRead";
/// The manifest file every skill has at its root.
pub const SKILL_MD: &str = "SKILL.md";
/// The URI scheme of skill resources.
pub const SCHEME: &str = "skill";
/// The MIME type of a directory in `resources/directory/read` results.
pub const DIRECTORY_MIME: &str = "inode/directory";
/// The MIME type of `SKILL.md`.
pub const SKILL_MD_MIME: &str = "text/markdown";
/// Servers should not serve a skill with more resource entries than this (SKILL.md included).
pub const MAX_RESOURCES_PER_SKILL: usize = 512;
/// Servers should not serve a skill whose files add up to more bytes than this (16 MiB).
pub const MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;
/// The longest skill name (the Agent Skills specification's limit).
pub const MAX_NAME_LEN: usize = 64;
/// The longest description (the Agent Skills specification's limit), in characters.
pub const MAX_DESCRIPTION_LEN: usize = 1024;
/// Front matter `metadata` keys with this prefix are reserved for MCP extensions.
pub const RESERVED_METADATA_PREFIX: &str = "io.modelcontextprotocol/";

/// One file of a skill in its entry: what a client verifies a read against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillResource {
    /// The file's URI (the skill's `SKILL.md` or a file under the skill's folder).
    pub uri: String,
    /// `sha256:` and 64 lowercase hex digits: the hash of the file's raw bytes.
    pub digest: String,
    /// The length of the file's raw bytes.
    pub size: u64,
}

/// The `resources` of a skill entry: the complete list of its files, or `"dynamic"` (the
/// server publishes no manifest).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SkillResources {
    /// Every file of the skill, each once, `SKILL.md` included.
    Files(Vec<SkillResource>),
    /// The string `"dynamic"`.
    Dynamic(Dynamic),
}

/// The string `"dynamic"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Dynamic {
    /// `"dynamic"`.
    #[serde(rename = "dynamic")]
    Dynamic,
}

/// A skill as `skills/list` and `skills/get` describe it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillEntry {
    /// The URI of the skill's `SKILL.md`; its last folder segment is the skill's name.
    pub uri: String,
    /// The `SKILL.md` front matter as a JSON object (`name` and `description` at least).
    pub frontmatter: JsonObject,
    /// The skill's files.
    pub resources: SkillResources,
}

impl SkillEntry {
    /// The front matter's `name`, if it is a string.
    pub fn name(&self) -> Option<&str> {
        self.frontmatter.get("name").and_then(Value::as_str)
    }

    /// The front matter's `description`, if it is a string.
    pub fn description(&self) -> Option<&str> {
        self.frontmatter.get("description").and_then(Value::as_str)
    }

    /// The listed files (`None` for a dynamic skill).
    pub fn files(&self) -> Option<&[SkillResource]> {
        match &self.resources {
            SkillResources::Files(f) => Some(f),
            SkillResources::Dynamic(_) => None,
        }
    }
}

/// Params of `skills/list`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct ListSkillsParams {
    /// Where the previous page ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// Result of `skills/list`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct ListSkillsResult {
    /// One page of skills; an entry is never split across pages.
    pub skills: Vec<SkillEntry>,
    /// Pass back as `cursor` for the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// How long the result may be reused (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may share a cached copy (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
}

/// Params of `skills/get`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct GetSkillParams {
    /// The skill's `SKILL.md` URI.
    pub uri: String,
}

/// Result of `skills/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetSkillResult {
    /// The skill's entry, as `skills/list` gives it.
    pub skill: SkillEntry,
    /// How long the result may be reused (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may share a cached copy (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
}

/// Params of `resources/directory/read`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct DirectoryReadParams {
    /// The directory's URI (`skill://<name>` or a folder under it).
    pub uri: String,
    /// Where the previous page ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// Result of `resources/directory/read`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, derive_setters::Setters)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[setters(prefix = "with_", generate_private = false)]
pub struct DirectoryReadResult {
    /// The directory's direct children; folders have the MIME type [`DIRECTORY_MIME`].
    pub resources: Vec<Resource>,
    /// Pass back as `cursor` for the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Why a skill name breaks the naming rules (1 to 64 lowercase ASCII letters, digits and
/// hyphens; no hyphen first, last or twice in a row), or `None` if it follows them.
pub fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("a skill name must not be empty");
    }
    if name.len() > MAX_NAME_LEN {
        return Some("a skill name has at most 64 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Some("a skill name has only lowercase letters, digits and hyphens");
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Some("a skill name does not start or end with a hyphen");
    }
    if name.contains("--") {
        return Some("a skill name has no two hyphens in a row");
    }
    None
}

/// `sha256:` and the lowercase hex SHA-256 of `bytes`.
pub fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut s = String::with_capacity(7 + 64);
    s.push_str("sha256:");
    for b in hash {
        s.push(char::from(HEX[usize::from(b >> 4)]));
        s.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    s
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Whether `digest` has the form `sha256:` and 64 lowercase hex digits.
pub fn is_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// The URI of a skill's `SKILL.md`.
pub fn skill_md_uri(name: &str) -> String {
    format!("{SCHEME}://{name}/{SKILL_MD}")
}

/// The skill name a `SKILL.md` URI carries: its last folder segment (`pdf` for
/// `skill://pdf/SKILL.md`, `pdf` for `skill://acme/pdf/SKILL.md`).
pub fn name_of_uri(uri: &str) -> Option<&str> {
    let rest = &uri[uri.find("://")? + 3..];
    let mut segments = rest.split('/').filter(|s| !s.is_empty()).rev();
    if segments.next()? != SKILL_MD {
        return None;
    }
    segments.next()
}

/// Why `SKILL.md` front matter could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrontMatterError {
    /// The file does not begin with a `---` line.
    #[error("SKILL.md does not begin with a --- line")]
    NoOpening,
    /// No `---` line closes the front matter.
    #[error("no --- line closes the front matter")]
    NoClosing,
    /// The front matter is not valid YAML.
    #[error("the front matter is not valid YAML: {0}")]
    Yaml(String),
    /// The front matter is not a mapping, or holds a value JSON cannot represent.
    #[error("the front matter {0}")]
    Shape(String),
    /// A required field is missing, empty or not a string.
    #[error("the front matter has no non-empty string {0:?}")]
    Missing(&'static str),
}

/// Parses the YAML front matter of a `SKILL.md` (between a first `---` line and the next
/// `---` line; a UTF-8 byte order mark is skipped) into a JSON object, and checks that
/// `name` and `description` are non-empty strings. Aliases are refused (no expansion).
///
/// # Errors
/// [`FrontMatterError`] on a missing block, invalid YAML, a non-mapping or a missing field.
pub fn parse_front_matter(text: &str) -> Result<JsonObject, FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().ok_or(FrontMatterError::NoOpening)?;
    if first.trim_end_matches(['\r', '\n']) != "---" {
        return Err(FrontMatterError::NoOpening);
    }
    let start = first.len();
    let mut at = start;
    let mut end = None;
    for line in lines {
        if line
            .trim_end_matches(['\r', '\n'])
            .trim_end_matches([' ', '\t'])
            == "---"
        {
            end = Some(at);
            break;
        }
        at += line.len();
    }
    let yaml = text
        .get(start..end.ok_or(FrontMatterError::NoClosing)?)
        .ok_or(FrontMatterError::NoClosing)?;
    refuse_aliases(yaml)?;
    let docs = yaml_rust2::YamlLoader::load_from_str(yaml)
        .map_err(|e| FrontMatterError::Yaml(e.to_string()))?;
    let doc = docs.into_iter().next().unwrap_or(yaml_rust2::Yaml::Null);
    let Value::Object(map) = yaml_to_json(doc, 0)? else {
        return Err(FrontMatterError::Shape("is not a mapping".into()));
    };
    for field in ["name", "description"] {
        match map.get(field) {
            Some(Value::String(s)) if !s.is_empty() => {}
            _ => return Err(FrontMatterError::Missing(field)),
        }
    }
    Ok(map)
}

/// Aliases are refused before the document is built: the loader copies what an alias names,
/// so nested aliases could grow a small file exponentially.
fn refuse_aliases(yaml: &str) -> Result<(), FrontMatterError> {
    use yaml_rust2::Event;
    let mut parser = yaml_rust2::parser::Parser::new_from_str(yaml);
    loop {
        match parser.next_token() {
            Ok((Event::StreamEnd, _)) => return Ok(()),
            Ok((Event::Alias(_), _)) => {
                return Err(FrontMatterError::Shape("uses an alias".into()));
            }
            Ok(_) => {}
            Err(e) => return Err(FrontMatterError::Yaml(e.to_string())),
        }
    }
}

/// How deep front matter may nest.
const MAX_DEPTH: usize = 32;

fn yaml_to_json(y: yaml_rust2::Yaml, depth: usize) -> Result<Value, FrontMatterError> {
    use yaml_rust2::Yaml;
    if depth > MAX_DEPTH {
        return Err(FrontMatterError::Shape("nests too deeply".into()));
    }
    Ok(match y {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Integer(i) => Value::from(i),
        Yaml::String(s) => Value::String(s),
        Yaml::Real(r) => r
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| FrontMatterError::Shape(format!("holds a number JSON lacks: {r}")))?,
        Yaml::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|i| yaml_to_json(i, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        Yaml::Hash(hash) => {
            let mut map = JsonObject::new();
            for (k, v) in hash {
                let key = match k {
                    Yaml::String(s) | Yaml::Real(s) => s,
                    Yaml::Integer(i) => i.to_string(),
                    Yaml::Boolean(b) => b.to_string(),
                    Yaml::Null => "null".to_owned(),
                    _ => {
                        return Err(FrontMatterError::Shape(
                            "has a key that is not a scalar".into(),
                        ));
                    }
                };
                map.insert(key, yaml_to_json(v, depth + 1)?);
            }
            Value::Object(map)
        }
        Yaml::Alias(_) | Yaml::BadValue => {
            return Err(FrontMatterError::Shape("uses an alias".into()));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_rules() {
        assert_eq!(name_problem("pdf-processing"), None);
        assert_eq!(name_problem("a"), None);
        for bad in ["", "-a", "a-", "a--b", "A", "a_b", "é", &"a".repeat(65)] {
            assert!(name_problem(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn digests_are_lowercase_sha256() {
        let d = digest(b"abc");
        assert_eq!(
            d,
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(is_digest(&d));
        assert!(!is_digest(&d.to_uppercase()));
        assert!(!is_digest("sha256:abc"));
    }

    #[test]
    fn front_matter_parses_into_json() {
        let text = "\u{feff}---\r\nname: x\ndescription: \"d: e\"\nmetadata:\n  n: 1\n  f: 1.5\n  l: [a, true, ~]\n---  \nbody\n";
        let fm = parse_front_matter(text).unwrap();
        assert_eq!(
            Value::Object(fm),
            serde_json::json!({"name": "x", "description": "d: e",
                "metadata": {"n": 1, "f": 1.5, "l": ["a", true, null]}})
        );
    }

    #[test]
    fn bad_front_matter_is_refused() {
        assert_eq!(
            parse_front_matter("name: x\n"),
            Err(FrontMatterError::NoOpening)
        );
        assert_eq!(
            parse_front_matter("---\nname: x\n"),
            Err(FrontMatterError::NoClosing)
        );
        assert_eq!(
            parse_front_matter("---\nname: x\n---\n"),
            Err(FrontMatterError::Missing("description"))
        );
        assert!(parse_front_matter("---\n- a\n---\n").is_err());
        assert!(parse_front_matter("---\nname: [\n---\n").is_err());
        let alias = "---\nname: &a x\ndescription: *a\n---\n";
        assert!(parse_front_matter(alias).is_err());
    }

    #[test]
    fn names_come_from_uris() {
        assert_eq!(name_of_uri("skill://pdf/SKILL.md"), Some("pdf"));
        assert_eq!(name_of_uri("skill://acme/pdf/SKILL.md"), Some("pdf"));
        assert_eq!(name_of_uri("skill://pdf/README.md"), None);
        assert_eq!(name_of_uri("skill://SKILL.md"), None);
    }

    #[test]
    fn entries_round_trip() {
        let v = serde_json::json!({"uri": "skill://a/SKILL.md",
            "frontmatter": {"name": "a", "description": "d"}, "resources": "dynamic"});
        let e: SkillEntry = serde_json::from_value(v.clone()).unwrap();
        assert!(e.files().is_none());
        assert_eq!(serde_json::to_value(&e).unwrap(), v);
        let bad = serde_json::json!({"uri": "u", "frontmatter": {}, "resources": "other"});
        assert!(serde_json::from_value::<SkillEntry>(bad).is_err());
    }
}
