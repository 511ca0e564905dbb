//! The token file on a real file system: written only through a new file this process
//! created (mode 0600) and renamed over it; a symbolic link planted as the token file or as
//! its lock file is refused, never read, written or created through; and read-modify-writes
//! from several writers at once lose nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use oxmcp_auth::client::{Grant, TokenStore};

fn grant(resource: &str, token: &str) -> Grant {
    Grant {
        issuer: "https://as.example".into(),
        resource: resource.into(),
        access_token: token.into(),
        token_endpoint: "https://as.example/token".into(),
        ..Grant::default()
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

/// A grant kept by someone else, in a store file of their own.
fn foreign_store() -> String {
    serde_json::json!({"grants": {"x": grant("https://a.example/mcp", "planted-token")}})
        .to_string()
}

#[test]
fn a_symlinked_token_file_is_neither_read_nor_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let victim = elsewhere.path().join("victim.json");
    std::fs::write(&victim, foreign_store()).unwrap();
    let path = dir.path().join("tokens.json");
    std::os::unix::fs::symlink(&victim, &path).unwrap();
    let store = TokenStore::new(&path);
    // Reading through the link would hand out the file elsewhere's grants.
    let read = store.grant_for("https://a.example/mcp");
    assert!(
        matches!(&read, Err(e) if e.to_string().contains("symbolic link")),
        "{read:?}"
    );
    let err = store
        .put_grant(&grant("https://b.example/mcp", "secret-token"))
        .unwrap_err();
    assert!(err.to_string().contains("tokens.json"), "{err}");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), foreign_store());
    assert!(
        std::fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link is left for the user to look at"
    );
    assert!(store.remove("https://a.example/mcp").is_err());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), foreign_store());
}

#[test]
fn a_dangling_symlinked_token_file_creates_nothing_where_it_points() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().join("created.json");
    let path = dir.path().join("tokens.json");
    std::os::unix::fs::symlink(&target, &path).unwrap();
    let store = TokenStore::new(&path);
    assert!(store.grant_for("https://a.example/mcp").is_err());
    assert!(
        store
            .put_grant(&grant("https://a.example/mcp", "secret-token"))
            .is_err()
    );
    assert!(!target.exists(), "nothing is created through the link");
}

#[test]
fn a_symlinked_lock_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    std::os::unix::fs::symlink(&victim, dir.path().join("tokens.json.lock")).unwrap();
    let store = TokenStore::new(dir.path().join("tokens.json"));
    let err = store
        .put_grant(&grant("https://a.example/mcp", "t"))
        .unwrap_err();
    assert!(err.to_string().contains("tokens.json.lock"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(!store.path().exists());
}

#[test]
fn a_dangling_symlinked_lock_file_creates_nothing_where_it_points() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().join("created");
    std::os::unix::fs::symlink(&target, dir.path().join("tokens.json.lock")).unwrap();
    let store = TokenStore::new(dir.path().join("tokens.json"));
    let err = store
        .put_grant(&grant("https://a.example/mcp", "t"))
        .unwrap_err();
    assert!(err.to_string().contains("tokens.json.lock"), "{err}");
    assert!(
        !target.exists(),
        "the lock was not created through the link"
    );
    assert!(!store.path().exists());
}

#[test]
fn the_token_file_is_0600_and_nothing_else_is_left_behind() {
    let dir = tempfile::tempdir().unwrap();
    let store = TokenStore::new(dir.path().join("tokens.json"));
    store
        .put_grant(&grant("https://a.example/mcp", "secret-token"))
        .unwrap();
    assert_eq!(mode(store.path()), 0o600, "the token file is 0600");
    // A token file left readable by an older version becomes 0600 on the next write, which
    // replaces it (a new file, not the old one rewritten).
    std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
    let hard_link = dir.path().join("hard-link");
    std::fs::hard_link(store.path(), &hard_link).unwrap();
    let before = std::fs::read_to_string(&hard_link).unwrap();
    store
        .put_grant(&grant("https://b.example/mcp", "other-token"))
        .unwrap();
    assert_eq!(mode(store.path()), 0o600);
    assert_eq!(std::fs::read_to_string(&hard_link).unwrap(), before);
    std::fs::remove_file(&hard_link).unwrap();
    // Nothing of ours is left behind but the file and its lock.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["tokens.json", "tokens.json.lock"]);
    assert_eq!(mode(&dir.path().join("tokens.json.lock")), 0o600);
}

#[test]
fn writers_at_once_lose_nothing() {
    const WRITERS: usize = 8;
    const EACH: usize = 10;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokens.json");
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let store = TokenStore::new(&path);
            std::thread::spawn(move || {
                for i in 0..EACH {
                    let r = format!("https://s{w}-{i}.example/mcp");
                    store.put_grant(&grant(&r, &format!("t{w}-{i}"))).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let store = TokenStore::new(&path);
    let mut missing = Vec::new();
    for w in 0..WRITERS {
        for i in 0..EACH {
            let r = format!("https://s{w}-{i}.example/mcp");
            if store.grant_for(&r).unwrap().is_none() {
                missing.push(r);
            }
        }
    }
    assert!(missing.is_empty(), "lost updates: {missing:?}");
}
