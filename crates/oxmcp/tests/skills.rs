//! The Skills extension (SEP-2640) over Streamable HTTP in both eras: a folder of skills
//! served by `ServerBuilder::skills`, listed (paginated), fetched and loaded verified by the
//! client library; the server's -32602 answers; a lying server's skills refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use oxmcp::client::skills::SkillsError;
use oxmcp::client::{ClientConfig, EraChoice};
use oxmcp::jsonrpc::ErrorObject;
use oxmcp::remote::{Remote, connect};
use oxmcp::server::skills::{Skills, SkillsConfig};
use oxmcp::server::{Ctx, Server};
use oxmcp::types::skills::{EXTENSION_ID, SkillEntry, digest};
use oxmcp::types::{ReadResourceResult, Resource, ResourceContents};
use serde_json::{Value, json};
use tokio::net::TcpListener;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/skills")
}

async fn serve(server: Server) -> String {
    let http = oxmcp::http::StreamableHttp::new(server, oxmcp::http::HttpConfig::default());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(oxmcp::http::serve_router(listener, http.router()));
    format!("http://{addr}/mcp")
}

fn remote(era: EraChoice) -> Remote {
    Remote::default().client(ClientConfig::default().era(era))
}

/// The fixture folder, one skill per `skills/list` page.
async fn fixture_url() -> String {
    let config = SkillsConfig::default().page_size(1);
    let skills = Skills::from_dir_with(fixtures(), config).unwrap();
    serve(
        Server::builder("skills", "1")
            .skills(skills)
            .build()
            .unwrap(),
    )
    .await
}

fn rpc_code(e: &SkillsError) -> Option<i32> {
    match e {
        SkillsError::Call(c) => c.rpc().map(|r| r.code.0),
        _ => None,
    }
}

#[tokio::test]
async fn skills_are_listed_page_by_page_and_loaded_verified_in_both_eras() {
    let url = fixture_url().await;
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let client = connect(&url, remote(era)).await.unwrap();
        let skills = client.skills();
        assert!(skills.declared() && skills.directory_read(), "{era:?}");
        let list = skills.list().await.unwrap();
        let names: Vec<_> = list.iter().map(|e| e.name().unwrap()).collect();
        assert_eq!(names, ["code-review", "pdf-processing"], "{era:?}");
        // One skill per page: a cap of one page cannot hold both.
        let capped = skills.max_pages(1).list().await.unwrap_err();
        assert!(matches!(capped, SkillsError::TooManyPages(1)), "{capped:?}");

        let loaded = skills
            .load_uri("skill://pdf-processing/SKILL.md")
            .await
            .unwrap();
        let paths: Vec<_> = loaded.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            ["SKILL.md", "references/FORMS.md", "scripts/fill_form.py"]
        );
        for f in &loaded.files {
            let on_disk = std::fs::read(fixtures().join("pdf-processing").join(&f.path)).unwrap();
            assert_eq!(f.bytes, on_disk, "{}", f.path);
        }
        assert!(loaded.skill_md().contains("# PDF processing"));
        assert_eq!(loaded.files[0].mime_type.as_deref(), Some("text/markdown"));
    }
}

#[tokio::test]
async fn results_carry_cache_attributes_and_the_resources_list_the_manifests() {
    let url = fixture_url().await;
    let client = connect(&url, remote(EraChoice::Modern)).await.unwrap();
    let page = client.request("skills/list", json!({})).await.unwrap();
    assert_eq!(page["ttlMs"], 60_000);
    assert_eq!(page["cacheScope"], "public");
    assert_eq!(page["nextCursor"], "1");
    let entry = &page["skills"][0];
    let md = std::fs::read(fixtures().join("code-review/SKILL.md")).unwrap();
    assert_eq!(entry["resources"][0]["uri"], "skill://code-review/SKILL.md");
    assert_eq!(entry["resources"][0]["digest"], digest(&md));
    assert_eq!(entry["resources"][0]["size"], md.len());
    let got = client
        .request("skills/get", json!({"uri": "skill://code-review/SKILL.md"}))
        .await
        .unwrap();
    assert_eq!(&got["skill"], entry);
    assert!(got.get("nextCursor").is_none());
    let listed = client.list_resources(None).await.unwrap().resources;
    let manifest = listed
        .iter()
        .find(|r| r.uri == "skill://code-review/SKILL.md")
        .unwrap();
    assert_eq!(manifest.name, "code-review");
    assert_eq!(manifest.mime_type.as_deref(), Some("text/markdown"));
}

#[tokio::test]
async fn bad_requests_are_invalid_params() {
    let url = fixture_url().await;
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let client = connect(&url, remote(era)).await.unwrap();
        let unknown = client
            .skills()
            .get("skill://no-such-skill/SKILL.md")
            .await
            .unwrap_err();
        assert_eq!(rpc_code(&unknown), Some(-32602), "{era:?}");
        for params in [
            json!({"uri": "skill://pdf-processing/SKILL.md"}),
            json!({"uri": "skill://pdf-processing/references/FORMS.md"}),
            json!({"uri": "skill://pdf-processing/nowhere"}),
            json!({"uri": "skill://nobody"}),
            json!({"uri": "skill://pdf-processing", "cursor": "x"}),
        ] {
            let e = client
                .request("resources/directory/read", params.clone())
                .await
                .unwrap_err();
            assert_eq!(e.rpc().unwrap().code.0, -32602, "{params} {era:?}");
        }
        let e = client.request("skills/list", json!({"cursor": "99"})).await;
        assert_eq!(e.unwrap_err().rpc().unwrap().code.0, -32602);
    }
}

#[tokio::test]
async fn directories_list_their_direct_children() {
    let url = fixture_url().await;
    let client = connect(&url, remote(EraChoice::Modern)).await.unwrap();
    let root = client
        .request(
            "resources/directory/read",
            json!({"uri": "skill://pdf-processing"}),
        )
        .await
        .unwrap();
    let kids: Vec<(String, String)> = root["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["uri"].as_str().unwrap().into(),
                r["mimeType"].as_str().unwrap().into(),
            )
        })
        .collect();
    let want = [
        ("skill://pdf-processing/SKILL.md", "text/markdown"),
        ("skill://pdf-processing/references", "inode/directory"),
        ("skill://pdf-processing/scripts", "inode/directory"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(u, m)| ((*u).into(), (*m).into()))
        .collect();
    assert_eq!(kids, want);
    let sub = client
        .request(
            "resources/directory/read",
            json!({"uri": "skill://pdf-processing/scripts/"}),
        )
        .await
        .unwrap();
    assert_eq!(
        sub["resources"][0]["uri"],
        "skill://pdf-processing/scripts/fill_form.py"
    );
    assert_eq!(sub["resources"][0]["mimeType"], "text/x-python");
    // The supporting files are read through the template.
    let read = client
        .read_resource("skill://pdf-processing/scripts/fill_form.py")
        .await
        .unwrap();
    assert!(
        read.contents[0]
            .text
            .as_deref()
            .unwrap()
            .contains("import json")
    );
}

#[tokio::test]
async fn a_bad_folder_is_a_build_error() {
    let dir = std::env::temp_dir().join(format!("mcp-skills-bad-{}", std::process::id()));
    let skill = dir.join("Bad_Name");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: Bad_Name\ndescription: d\n---\n",
    )
    .unwrap();
    let e = Server::builder("s", "1")
        .skills_dir(&dir)
        .build()
        .unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(matches!(e, oxmcp::server::BuildError::Skills(_)), "{e}");
}

/// What a lying server serves: its entry claims `claimed`, its files are `served`.
struct Liar {
    reads: Arc<Mutex<Vec<String>>>,
}

const MD: &str = "---\nname: pdf\ndescription: Fill PDF forms\n---\n\nBody.\n";
const FORMS: &str = "Supporting content.\n";

fn liar(served_md: &'static str, claimed_md: &str) -> (Server, Liar) {
    let reads = Arc::new(Mutex::new(Vec::new()));
    let entry = json!({
        "uri": "skill://pdf/SKILL.md",
        "frontmatter": {"name": "pdf", "description": "Fill PDF forms"},
        "resources": [
            {"uri": "skill://pdf/SKILL.md", "digest": digest(claimed_md.as_bytes()),
             "size": claimed_md.len()},
            {"uri": "skill://pdf/FORMS.md", "digest": digest(FORMS.as_bytes()),
             "size": FORMS.len()},
        ],
    });
    let mut b = Server::builder("liar", "1")
        .extension(EXTENSION_ID, Default::default())
        .method("skills/list", move |_ctx: Ctx, _p: Value| {
            let page = json!({"skills": [entry.clone()]});
            async move { Ok::<_, ErrorObject>(page) }
        });
    for (uri, text) in [
        ("skill://pdf/SKILL.md", served_md),
        ("skill://pdf/FORMS.md", FORMS),
    ] {
        let log = reads.clone();
        let resource = Resource::default()
            .with_uri(uri.into())
            .with_name(uri.into());
        b = b.resource(resource, move |_ctx, uri: String| {
            log.lock().unwrap().push(uri.clone());
            async move {
                Ok::<_, ErrorObject>(ReadResourceResult::default().with_contents(vec![
                    ResourceContents::text(uri, Some("text/markdown"), text),
                ]))
            }
        });
    }
    (b.build().unwrap(), Liar { reads })
}

async fn load_from(server: Server, era: EraChoice) -> Result<Vec<SkillEntry>, SkillsError> {
    let url = serve(server).await;
    let client = connect(&url, remote(era)).await.unwrap();
    let skills = client.skills();
    let list = skills.list().await?;
    skills.load(&list[0]).await?;
    Ok(list)
}

#[tokio::test]
async fn tampered_skills_are_refused_before_any_other_file_is_read() {
    let evil_body = "---\nname: pdf\ndescription: Fill PDF forms\n---\n\nEvil.\n";
    let longer = "---\nname: pdf\ndescription: Fill PDF forms\n---\n\nBody.\nMore.\n";
    let other_fm = "---\nname: pdf\ndescription: Exfiltrate credentials\n---\n\nBody.\n";
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        // An honest server first: the same harness loads both files.
        let (server, honest) = liar(MD, MD);
        load_from(server, era).await.unwrap();
        assert_eq!(honest.reads.lock().unwrap().len(), 2);

        let (server, l) = liar(evil_body, MD);
        let e = load_from(server, era).await.unwrap_err();
        assert!(matches!(e, SkillsError::DigestMismatch { .. }), "{e}");
        assert_eq!(*l.reads.lock().unwrap(), ["skill://pdf/SKILL.md"]);

        let (server, l) = liar(longer, MD);
        let e = load_from(server, era).await.unwrap_err();
        assert!(matches!(e, SkillsError::SizeMismatch { .. }), "{e}");
        assert_eq!(l.reads.lock().unwrap().len(), 1);

        // Digest and size match the served file; its front matter does not match the entry.
        let (server, l) = liar(other_fm, other_fm);
        let e = load_from(server, era).await.unwrap_err();
        assert!(
            matches!(&e, SkillsError::FrontMatterMismatch { field, .. } if field == "description"),
            "{e}"
        );
        assert_eq!(l.reads.lock().unwrap().len(), 1);
    }
}

#[tokio::test]
async fn listing_reads_no_file() {
    let (server, l) = liar(MD, MD);
    let url = serve(server).await;
    let client = connect(&url, remote(EraChoice::Modern)).await.unwrap();
    assert_eq!(client.skills().list().await.unwrap().len(), 1);
    assert!(l.reads.lock().unwrap().is_empty());
}

#[test]
fn skills_can_be_built_from_files() {
    let mut files = BTreeMap::new();
    files.insert("SKILL.md".to_owned(), MD.as_bytes().to_vec());
    let config = SkillsConfig::default();
    let skill = oxmcp::server::skills::Skill::from_files("pdf", files.clone(), &config).unwrap();
    assert_eq!(skill.entry().uri, "skill://pdf/SKILL.md");
    assert!(oxmcp::server::skills::Skill::from_files("other", files, &config).is_err());
}

#[tokio::test]
async fn directory_listings_are_paginated() {
    let config = SkillsConfig::default().directory_page_size(2);
    let skills = Skills::from_dir_with(fixtures(), config).unwrap();
    let url = serve(
        Server::builder("skills", "1")
            .skills(skills)
            .build()
            .unwrap(),
    )
    .await;
    let client = connect(&url, remote(EraChoice::Legacy)).await.unwrap();
    let mut uris = Vec::new();
    let mut params = json!({"uri": "skill://pdf-processing"});
    for _ in 0..3 {
        let page = client
            .request("resources/directory/read", params.clone())
            .await
            .unwrap();
        for r in page["resources"].as_array().unwrap() {
            uris.push(r["uri"].as_str().unwrap().to_owned());
        }
        match page.get("nextCursor") {
            Some(c) => params["cursor"] = c.clone(),
            None => break,
        }
    }
    assert_eq!(
        uris,
        [
            "skill://pdf-processing/SKILL.md",
            "skill://pdf-processing/references",
            "skill://pdf-processing/scripts"
        ]
    );
}

#[test]
fn publishing_twice_is_a_build_error() {
    let skills = Skills::from_dir(fixtures()).unwrap();
    let e = Server::builder("s", "1")
        .skills(skills.clone())
        .skills(skills)
        .build()
        .unwrap_err();
    assert!(
        matches!(e, oxmcp::server::BuildError::Duplicate { .. }),
        "{e}"
    );
}
