//! `oxmcp skills` against `oxmcp serve --skills DIR`, over Streamable HTTP and stdio.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use oxmcp_tests::mcp;

use std::path::PathBuf;

use serde_json::Value;

const MCP: &str = env!("CARGO_BIN_EXE_oxmcp");

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../oxmcp/tests/fixtures/skills")
}

async fn serve_skills() -> (tokio::process::Child, String) {
    let dir = fixtures();
    oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0", "--skills", dir.to_str().unwrap()]).await
}

#[tokio::test]
async fn skills_are_listed_as_text_and_json() {
    let (_server, url) = serve_skills().await;
    let (ok, out, err) = mcp(&["skills", &url]).await;
    assert!(ok, "{err}");
    let firsts: Vec<_> = out
        .lines()
        .filter(|l| !l.starts_with(' '))
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .collect();
    assert_eq!(
        firsts[0][..2],
        ["code-review", "skill://code-review/SKILL.md"]
    );
    assert_eq!(
        firsts[1][..2],
        ["pdf-processing", "skill://pdf-processing/SKILL.md"]
    );
    assert!(out.contains("(3 files, "), "{out}");
    assert!(
        out.contains("Extract text and tables from PDF files"),
        "{out}"
    );

    let (ok, out, err) = mcp(&["skills", "--json", &url]).await;
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2);
    assert_eq!(v[1]["frontmatter"]["name"], "pdf-processing");
    assert_eq!(v[1]["resources"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn a_skill_is_loaded_verified_and_printed_or_written() {
    let (_server, url) = serve_skills().await;
    let (ok, out, err) = mcp(&["skills", &url, "pdf-processing"]).await;
    assert!(ok, "{err}");
    let md = std::fs::read_to_string(fixtures().join("pdf-processing/SKILL.md")).unwrap();
    assert_eq!(out, md);

    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("pdf");
    let (ok, _, err) = mcp(&[
        "skills",
        &url,
        "skill://pdf-processing/SKILL.md",
        "--out",
        target.to_str().unwrap(),
    ])
    .await;
    assert!(ok, "{err}");
    for rel in ["SKILL.md", "references/FORMS.md", "scripts/fill_form.py"] {
        let want = std::fs::read(fixtures().join("pdf-processing").join(rel)).unwrap();
        assert_eq!(std::fs::read(target.join(rel)).unwrap(), want, "{rel}");
    }
}

#[tokio::test]
async fn an_unknown_skill_is_the_servers_invalid_params() {
    let (_server, url) = serve_skills().await;
    let (ok, _, err) = mcp(&["skills", &url, "no-such-skill"]).await;
    assert!(!ok);
    assert!(err.contains("-32602"), "{err}");
}

#[tokio::test]
async fn skills_over_stdio() {
    let dir = fixtures();
    let dir = dir.to_str().unwrap();
    let (ok, out, err) = mcp(&[
        "skills",
        "code-review",
        "--",
        MCP,
        "serve",
        "--stdio",
        "--skills",
        dir,
    ])
    .await;
    assert!(ok, "{err}");
    assert!(out.starts_with("---\nname: code-review\n"), "{out}");
}

#[tokio::test]
async fn a_server_without_skills_says_so() {
    let (_server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    let (ok, _, err) = mcp(&["skills", &url]).await;
    assert!(!ok);
    assert!(err.contains("publishes no skills"), "{err}");
}

#[tokio::test]
async fn a_bad_skills_folder_stops_serve() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("Bad")).unwrap();
    std::fs::write(
        dir.path().join("Bad/SKILL.md"),
        "---\nname: Bad\ndescription: d\n---\n",
    )
    .unwrap();
    let (ok, _, err) = mcp(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--skills",
        dir.path().to_str().unwrap(),
    ])
    .await;
    assert!(!ok);
    assert!(err.contains("--skills") && err.contains("\"Bad\""), "{err}");
}
