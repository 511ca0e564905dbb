//! `oxmcp listen` as a child process: started, read line by line, interrupted.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdout, Command};

/// The lines `oxmcp listen` prints.
pub type Lines = tokio::io::Lines<BufReader<ChildStdout>>;

/// `oxmcp listen ARGS`, once it says it is listening: the child and its stdout lines.
pub async fn listening(args: &[&str]) -> (Child, Lines) {
    let mut child = Command::new(crate::oxmcp())
        .arg("listen")
        .args(args)
        .env("MCP_LOG", "off")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), err.next_line())
        .await
        .expect("oxmcp listen starts")
        .unwrap()
        .expect("oxmcp listen says it listens");
    assert!(line.starts_with("oxmcp: listening to "), "{line}");
    tokio::spawn(async move { while let Ok(Some(_)) = err.next_line().await {} });
    (child, out)
}

/// Reads lines until `want` (each read bounded, so a missing line fails instead of hanging).
pub async fn until_line(lines: &mut Lines, want: &str) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("no {want:?} line; saw {seen:?}"))
            .unwrap()
            .unwrap_or_else(|| panic!("oxmcp listen ended before {want:?}; saw {seen:?}"));
        if line == want {
            return seen;
        }
        seen.push(line);
    }
}

/// Ctrl-C ends `oxmcp listen` cleanly.
pub async fn interrupt(mut child: Child) {
    use nix::sys::signal::{Signal, kill};
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    kill(pid, Signal::SIGINT).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("oxmcp listen stops on SIGINT")
        .unwrap();
    assert!(status.success(), "{status}");
}
