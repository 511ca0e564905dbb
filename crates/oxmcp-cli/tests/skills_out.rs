//! `oxmcp skills URL NAME --out DIR` never writes through a symlink found under DIR (planted
//! there for a file or for a folder of the skill), and says so; plain files already there
//! are replaced.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![cfg(unix)]

use std::path::{Path, PathBuf};

use oxmcp_tests::mcp;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../oxmcp/tests/fixtures/skills")
}

async fn write_out(url: &str, out: &Path) -> (bool, String) {
    let (ok, _, err) = mcp(&[
        "skills",
        url,
        "pdf-processing",
        "--out",
        out.to_str().unwrap(),
    ])
    .await;
    (ok, err)
}

#[tokio::test]
async fn symlinks_under_the_out_folder_are_not_followed() {
    let skills = fixtures();
    let (_server, url) = oxmcp_tests::serve_http(&[
        "--listen",
        "127.0.0.1:0",
        "--skills",
        skills.to_str().unwrap(),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let victim = elsewhere.join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();

    // A symlink where a file goes.
    let out = dir.path().join("out-file");
    std::fs::create_dir(&out).unwrap();
    std::os::unix::fs::symlink(&victim, out.join("SKILL.md")).unwrap();
    let (ok, err) = write_out(&url, &out).await;
    assert!(!ok, "written through the symlink");
    assert!(
        err.contains("SKILL.md") && err.contains("symbolic link"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");

    // A symlink where a folder goes.
    let out = dir.path().join("out-dir");
    std::fs::create_dir(&out).unwrap();
    std::os::unix::fs::symlink(&elsewhere, out.join("references")).unwrap();
    let (ok, err) = write_out(&url, &out).await;
    assert!(!ok, "written through the symlinked folder");
    assert!(
        err.contains("references") && err.contains("symbolic link"),
        "{err}"
    );
    assert!(!elsewhere.join("FORMS.md").exists());

    // A dangling symlink where a file goes (it would be created at its target).
    let out = dir.path().join("out-dangling");
    std::fs::create_dir_all(out.join("scripts")).unwrap();
    let target = elsewhere.join("created.py");
    std::os::unix::fs::symlink(&target, out.join("scripts/fill_form.py")).unwrap();
    let (ok, err) = write_out(&url, &out).await;
    assert!(!ok, "created through the dangling symlink");
    assert!(
        err.contains("fill_form.py") && err.contains("symbolic link"),
        "{err}"
    );
    assert!(!target.exists());

    // Plain files already there are replaced; the folder itself may be a symlink (the
    // user's own choice).
    let real = dir.path().join("real");
    std::fs::create_dir_all(real.join("references")).unwrap();
    std::fs::write(real.join("SKILL.md"), "old").unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let (ok, err) = write_out(&url, &link).await;
    assert!(ok, "{err}");
    for rel in ["SKILL.md", "references/FORMS.md", "scripts/fill_form.py"] {
        let want = std::fs::read(skills.join("pdf-processing").join(rel)).unwrap();
        assert_eq!(std::fs::read(real.join(rel)).unwrap(), want, "{rel}");
    }
}
