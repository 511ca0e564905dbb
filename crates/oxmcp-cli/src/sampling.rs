//! The sampling command of `--sampling-cmd`, run within its limits: at most
//! `--sampling-concurrency` at once (a request waits at most `--sampling-timeout` for a free
//! slot), each in its own process group, killed with everything it started when it runs
//! longer than `--sampling-timeout` or when its request is cancelled.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use oxmcp_jsonrpc::{ErrorObject, printable};
use oxmcp_types::{CreateMessageParams, CreateMessageResult};
use tokio::io::AsyncWriteExt;
use tokio::sync::Semaphore;

/// The sampling command and its limits.
#[derive(Debug)]
pub(crate) struct Sampler {
    cmd: String,
    timeout: Duration,
    concurrency: u32,
    slots: Semaphore,
}

impl Sampler {
    /// `cmd` run at most `concurrency` at once, each for at most `timeout`.
    pub(crate) fn new(cmd: String, timeout: Duration, concurrency: u32) -> Arc<Self> {
        Arc::new(Self {
            cmd,
            timeout,
            concurrency,
            slots: Semaphore::new(concurrency.max(1) as usize),
        })
    }

    /// Answers one sampling request: the params on the command's stdin, its stdout the
    /// result.
    pub(crate) async fn sample(
        &self,
        params: CreateMessageParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        let secs = self.timeout.as_secs();
        let _slot = match tokio::time::timeout(self.timeout, self.slots.acquire()).await {
            Ok(Ok(permit)) => permit,
            Ok(Err(_)) => return Err(failed("is shut down".into())),
            Err(_) => {
                return Err(failed(format!(
                    "had no free slot within {secs} s (--sampling-concurrency {}: that many \
                     already run)",
                    self.concurrency
                )));
            }
        };
        let input = serde_json::to_vec(&params)
            .map_err(|e| failed(format!("could not be given the request: {e}")))?;
        let stdout = tokio::time::timeout(self.timeout, run(&self.cmd, &input))
            .await
            .map_err(|_| {
                failed(format!(
                    "ran longer than {secs} s (--sampling-timeout) and was stopped"
                ))
            })??;
        parse_result(&stdout).map_err(failed)
    }
}

fn failed(why: String) -> ErrorObject {
    ErrorObject::internal(format!("the sampling command {why}"))
}

/// Kills a process group (SIGKILL) when dropped, unless disarmed: a command stopped before
/// it finished (time limit, cancelled request) takes whatever it started with it.
struct GroupGuard(Option<nix::unistd::Pid>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(group) = self.0.take() {
            // ESRCH: the group is gone already.
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// Runs `sh -c CMD` in a new process group with `input` on its stdin: its stdout, once it
/// exited successfully.
async fn run(cmd: &str, input: &[u8]) -> Result<Vec<u8>, ErrorObject> {
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| failed(format!("could not be started: {e}")))?;
    let mut guard = GroupGuard(
        child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(nix::unistd::Pid::from_raw),
    );
    let stdin = child.stdin.take();
    let feed = async move {
        if let Some(mut stdin) = stdin {
            // A command that does not read its input is not an error in itself: its answer
            // is.
            let _ = stdin.write_all(input).await;
        }
    };
    let ((), out) = tokio::join!(feed, child.wait_with_output());
    let out = out.map_err(|e| failed(format!("failed: {e}")))?;
    // It finished, and its stdout closed: nothing of it is left to stop.
    guard.0 = None;
    if !out.status.success() {
        return Err(failed(format!("exited with {}", out.status)));
    }
    Ok(out.stdout)
}

/// A sampling command's answer, checked.
pub(crate) fn parse_result(stdout: &[u8]) -> Result<CreateMessageResult, String> {
    let text = String::from_utf8_lossy(stdout);
    let result: CreateMessageResult = serde_json::from_str(text.trim()).map_err(|e| {
        let shown: String = text.trim().chars().take(200).collect();
        format!(
            "did not answer with a CreateMessageResult ({e}): {}",
            printable(&shown)
        )
    })?;
    if result.role != oxmcp_types::Role::Assistant {
        return Err("answered with role user; a sampling result is the assistant's".into());
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_answers_are_checked() {
        let good = br#"{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}"#;
        let r = parse_result(good).expect("a good answer");
        assert_eq!(r.model, "m");
        assert!(parse_result(b"not json").is_err());
        assert!(parse_result(br#"{"role":"assistant"}"#).is_err());
        let user = br#"{"role":"user","content":{"type":"text","text":"hi"},"model":"m"}"#;
        assert!(parse_result(user).unwrap_err().contains("role user"));
    }
}
