//! A server run as a child process, spoken to over its stdin and stdout, and shut down the way
//! the spec says: close stdin, wait, SIGTERM, wait, SIGKILL, to the whole process group.

use std::ffi::OsStr;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot};

use crate::env::ChildEnv;
pub use crate::link::Exit;
use crate::link::Link;
use crate::ndjson::{read_frames, write_frames};
use crate::stdio::{Channels, QUEUE_DEPTH};

/// Errors starting or stopping a child.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChildError {
    /// The command could not be started.
    #[error("could not start {command:?}: {source}")]
    Spawn {
        /// The program.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// Waiting for the child failed.
    #[error("waiting for the child failed: {0}")]
    Wait(std::io::Error),
}

/// How a child is started and stopped.
#[derive(Debug, Clone, derive_setters::Setters)]
#[non_exhaustive]
#[setters(prefix = "", generate_private = false)]
pub struct ChildConfig {
    /// Maximum line size read from the child's stdout.
    pub max_line: usize,
    /// How long to wait for exit after closing stdin.
    pub stdin_grace: Duration,
    /// How long to wait for exit after SIGTERM.
    pub term_grace: Duration,
    /// Whether the child's stderr is passed through (otherwise discarded).
    pub inherit_stderr: bool,
    /// Its environment: by default only [`crate::env::SAFE_VARS`] and `LC_*` from ours (no
    /// API keys or tokens), plus what is added here.
    pub env: ChildEnv,
}

impl Default for ChildConfig {
    fn default() -> Self {
        Self {
            max_line: crate::ndjson::DEFAULT_MAX_LINE,
            stdin_grace: Duration::from_secs(2),
            term_grace: Duration::from_secs(2),
            inherit_stderr: true,
            env: ChildEnv::default(),
        }
    }
}

/// A running child process in its own process group.
#[derive(Debug)]
pub struct ChildProcess {
    child: Child,
    pgid: Option<Pid>,
    close_stdin: Option<oneshot::Sender<()>>,
    config: ChildConfig,
}

impl ChildProcess {
    /// Starts `program args...` in a new process group with piped stdin/stdout and the
    /// environment `config.env` describes.
    ///
    /// # Errors
    /// [`ChildError::Spawn`] if it cannot be started.
    pub fn spawn<I, S>(
        program: &str,
        args: I,
        config: ChildConfig,
    ) -> Result<(ChildProcess, Channels), ChildError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new(program);
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if config.inherit_stderr {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .process_group(0)
            .kill_on_drop(true);
        config.env.apply(&mut cmd);
        let mut child = cmd.spawn().map_err(|source| ChildError::Spawn {
            command: program.to_owned(),
            source,
        })?;
        let pgid = child
            .id()
            .and_then(|p| i32::try_from(p).ok())
            .map(Pid::from_raw);
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let (in_tx, in_rx) = mpsc::channel(QUEUE_DEPTH);
        let (out_tx, out_rx) = mpsc::channel(QUEUE_DEPTH);
        let (close_tx, close_rx) = oneshot::channel::<()>();
        if let Some(stdout) = stdout {
            let reader = tokio::io::BufReader::with_capacity(64 * 1024, stdout);
            tokio::spawn(read_frames(
                reader,
                config.max_line,
                in_tx,
                std::future::pending(),
            ));
        }
        if let Some(stdin) = stdin {
            tokio::spawn(async move {
                tokio::select! {
                    () = write_frames(stdin, out_rx) => {}
                    _ = close_rx => {} // dropping the writer closes the child's stdin
                }
            });
        }
        let process = ChildProcess {
            child,
            pgid,
            close_stdin: Some(close_tx),
            config,
        };
        Ok((
            process,
            Channels {
                incoming: in_rx,
                outgoing: out_tx,
            },
        ))
    }

    /// The child's process id (also its process group id).
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    fn signal_group(&self, sig: Signal) {
        if let Some(pgid) = self.pgid {
            // ESRCH (group already gone) is the normal case after a clean exit.
            let _ = killpg(pgid, sig);
        }
    }

    async fn wait_for(&mut self, d: Duration) -> Option<std::process::ExitStatus> {
        tokio::time::timeout(d, self.child.wait())
            .await
            .ok()
            .and_then(Result::ok)
    }

    /// Stops the child: close stdin, wait; SIGTERM the group, wait; SIGKILL the group. Any
    /// process left in the group afterwards (an orphaned grandchild) is killed too, and the
    /// child is always reaped.
    ///
    /// # Errors
    /// [`ChildError::Wait`] if reaping fails.
    pub async fn shutdown(&mut self) -> Result<Exit, ChildError> {
        if let Some(close) = self.close_stdin.take() {
            let _ = close.send(());
        }
        let stdin_grace = self.config.stdin_grace;
        let term_grace = self.config.term_grace;
        let how = if self.wait_for(stdin_grace).await.is_some() {
            Exit::Closed
        } else {
            self.signal_group(Signal::SIGTERM);
            if self.wait_for(term_grace).await.is_some() {
                Exit::Terminated
            } else {
                self.signal_group(Signal::SIGKILL);
                self.child.wait().await.map_err(ChildError::Wait)?;
                Exit::Killed
            }
        };
        // The leader is gone; make sure nothing it started lives on in its group.
        self.signal_group(Signal::SIGKILL);
        self.pgid = None;
        Ok(how)
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        // Not shut down properly: do not leave the group running (kill_on_drop reaps the child).
        self.signal_group(Signal::SIGKILL);
    }
}

impl Link for ChildProcess {
    fn close(mut self: Box<Self>) -> futures::future::BoxFuture<'static, Option<Exit>> {
        Box::pin(async move { self.shutdown().await.ok() })
    }

    fn pid(&self) -> Option<u32> {
        self.id()
    }
}
