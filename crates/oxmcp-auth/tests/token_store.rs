//! The token file on a real file system: written only through a file this process created
//! (mode 0600, never through a file or symlink planted where the temporary file goes), and
//! read-modify-writes from several writers at once lose nothing.
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

/// Where the store used to put its temporary file: `tokens.tmp<pid>`, a name anyone who can
/// write the folder could guess.
fn old_temp_name(dir: &Path) -> std::path::PathBuf {
    dir.join(format!("tokens.tmp{}", std::process::id()))
}

#[test]
fn a_symlink_where_the_temporary_file_goes_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    std::os::unix::fs::symlink(&victim, old_temp_name(dir.path())).unwrap();
    let store = TokenStore::new(dir.path().join("tokens.json"));
    let g = grant("https://a.example/mcp", "secret-token");
    store.put_grant(&g).unwrap();
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "precious",
        "the tokens were written through the planted symlink"
    );
    let meta = std::fs::symlink_metadata(store.path()).unwrap();
    assert!(meta.file_type().is_file(), "tokens.json is a plain file");
    assert_eq!(mode(store.path()), 0o600);
    assert_eq!(store.grant_for("https://a.example/mcp").unwrap(), Some(g));
}

#[test]
fn a_readable_file_where_the_temporary_file_goes_does_not_lend_its_mode() {
    let dir = tempfile::tempdir().unwrap();
    let planted = old_temp_name(dir.path());
    std::fs::write(&planted, "").unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o644)).unwrap();
    let store = TokenStore::new(dir.path().join("tokens.json"));
    store
        .put_grant(&grant("https://a.example/mcp", "secret-token"))
        .unwrap();
    assert_eq!(mode(store.path()), 0o600, "the token file is 0600");
    // A token file left readable by an older version becomes 0600 on the next write.
    std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
    store
        .put_grant(&grant("https://b.example/mcp", "other-token"))
        .unwrap();
    assert_eq!(mode(store.path()), 0o600);
    // Nothing of ours is left behind but the file and its lock.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("tokens.tmp"))
        .collect();
    names.sort();
    assert_eq!(names, ["tokens.json", "tokens.json.lock"]);
    assert_eq!(mode(&dir.path().join("tokens.json.lock")), 0o600);
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
