//! Loading a folder of skills: what is accepted, and each rule and limit that refuses one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use oxmcp_server::skills::{Skills, SkillsConfig, SkillsError};

/// A fresh folder under the system's temporary folder, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new() -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("mcp-skills-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }

    fn file(&self, rel: &str, text: &str) -> &Self {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
        self
    }

    fn skill(&self, folder: &str, name: &str) -> &Self {
        self.file(
            &format!("{folder}/SKILL.md"),
            &format!("---\nname: {name}\ndescription: Does {name}\n---\n# {name}\n"),
        )
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn load(d: &Dir) -> Result<Skills, SkillsError> {
    Skills::from_dir(d.path())
}

#[test]
fn a_good_folder_loads_with_nested_files_and_ignores_dot_files() {
    let d = Dir::new();
    d.skill("alpha", "alpha")
        .file("alpha/a/b/c.txt", "deep")
        .file("alpha/.hidden", "x")
        .file(".git/config", "x")
        .file("README.md", "not a skill");
    let skills = load(&d).unwrap();
    assert_eq!(skills.len(), 1);
    let alpha = skills.get("alpha").unwrap();
    let paths: Vec<_> = alpha.files.keys().map(String::as_str).collect();
    assert_eq!(paths, ["SKILL.md", "a/b/c.txt"]);
    assert_eq!(alpha.files["a/b/c.txt"].mime_type, "text/plain");
    assert_eq!(alpha.frontmatter["description"], "Does alpha");
}

#[test]
fn names_must_follow_the_rules_and_match_the_folder() {
    let d = Dir::new();
    d.skill("Alpha", "Alpha");
    assert!(matches!(load(&d), Err(SkillsError::Name { .. })));
    let d = Dir::new();
    d.skill("alpha", "beta");
    assert!(matches!(load(&d), Err(SkillsError::NameMismatch { .. })));
}

#[test]
fn front_matter_must_be_there_and_complete() {
    let d = Dir::new();
    d.file("alpha/SKILL.md", "# no front matter\n");
    assert!(matches!(load(&d), Err(SkillsError::FrontMatter { .. })));
    let d = Dir::new();
    d.file("alpha/SKILL.md", "---\nname: alpha\n---\n");
    assert!(matches!(load(&d), Err(SkillsError::FrontMatter { .. })));
    let d = Dir::new();
    d.file(
        "alpha/SKILL.md",
        "---\nname: alpha\ndescription: d\nmetadata:\n  io.modelcontextprotocol/x: 1\n---\n",
    );
    assert!(matches!(load(&d), Err(SkillsError::Invalid { .. })));
}

#[test]
fn a_folder_without_skill_md_is_an_error() {
    let d = Dir::new();
    d.file("alpha/notes.md", "x");
    assert!(matches!(load(&d), Err(SkillsError::MissingSkillMd { .. })));
}

#[test]
fn limits_are_enforced() {
    let d = Dir::new();
    d.skill("alpha", "alpha")
        .file("alpha/x.txt", "x")
        .file("alpha/y.txt", "y");
    let few = SkillsConfig::default().max_files_per_skill(2);
    let e = Skills::from_dir_with(d.path(), few).unwrap_err();
    assert!(
        matches!(e, SkillsError::TooManyFiles { limit: 2, .. }),
        "{e}"
    );
    let small = SkillsConfig::default().max_skill_bytes(40);
    let e = Skills::from_dir_with(d.path(), small).unwrap_err();
    assert!(matches!(e, SkillsError::TooLarge { limit: 40, .. }), "{e}");
    let one = SkillsConfig::default().max_skills(1);
    d.skill("beta", "beta");
    let e = Skills::from_dir_with(d.path(), one).unwrap_err();
    assert!(matches!(e, SkillsError::TooManySkills { .. }), "{e}");
    let total = SkillsConfig::default().max_total_bytes(100);
    let e = Skills::from_dir_with(d.path(), total).unwrap_err();
    assert!(
        matches!(e, SkillsError::TotalTooLarge { limit: 100 }),
        "{e}"
    );
}

#[test]
fn odd_file_names_and_links_are_refused() {
    let d = Dir::new();
    d.skill("alpha", "alpha").file("alpha/with space.md", "x");
    assert!(matches!(load(&d), Err(SkillsError::Path { .. })));
    #[cfg(unix)]
    {
        let d = Dir::new();
        d.skill("alpha", "alpha");
        std::os::unix::fs::symlink("/etc/passwd", d.path().join("alpha/passwd")).unwrap();
        assert!(matches!(load(&d), Err(SkillsError::Path { .. })));
    }
}

#[test]
fn a_missing_folder_is_an_io_error() {
    let e = Skills::from_dir("/nonexistent/skills/folder").unwrap_err();
    assert!(matches!(e, SkillsError::Io { .. }), "{e}");
}
