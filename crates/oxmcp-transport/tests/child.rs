//! A real child process that exits on its own: its process group is ended while the child
//! is still unreaped (a zombie keeps its process id, and so its group's id, from being reused
//! by an unrelated process group), and it is reaped afterwards.
#![cfg(all(target_os = "linux", feature = "child"))]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use oxmcp_jsonrpc::Inbound;
use oxmcp_transport::{ChildConfig, ChildProcess};

/// Waits (at most 10 s) until `f` gives something.
async fn eventually<T>(what: &str, f: impl Fn() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_group_is_signalled_before_the_child_is_reaped() {
    let file = std::env::temp_dir().join(format!("oxmcp-child-group-{}", std::process::id()));
    let _ = std::fs::remove_file(&file);
    // The leader starts a grandchild in its group, says so, and exits. The grandchild writes
    // down whether the leader still holds its process id (alive, or a zombie not reaped yet)
    // when the SIGTERM for the group reaches it.
    let script = r#"leader=$$
(trap 'if [ -e /proc/$leader ]; then echo held; else echo free; fi > "$0"; exit 0' TERM
 while :; do sleep 0.05; done) &
echo ready
sleep 0.2"#;
    let config = ChildConfig::default()
        .term_grace(Duration::from_secs(2))
        .inherit_stderr(false);
    let (child, mut io) =
        ChildProcess::spawn("sh", ["-c", script, file.to_str().unwrap()], config).unwrap();
    let pid = child.id().unwrap();
    let ready = tokio::time::timeout(Duration::from_secs(10), io.incoming.recv())
        .await
        .expect("the child started")
        .expect("it said so");
    assert!(
        matches!(&ready, Inbound::Frame(b) if b == b"ready"),
        "{ready:?}"
    );
    let seen = eventually("the grandchild got SIGTERM", || {
        std::fs::read_to_string(&file)
            .ok()
            .filter(|s| s.ends_with('\n'))
    })
    .await;
    assert_eq!(
        seen.trim(),
        "held",
        "the group was signalled after its leader had been reaped (its id free for reuse)"
    );
    // The child is reaped all the same: no zombie is left.
    eventually("the child is reaped", || {
        (!std::path::Path::new(&format!("/proc/{pid}")).exists()).then_some(())
    })
    .await;
    drop(child);
    let _ = std::fs::remove_file(&file);
}
