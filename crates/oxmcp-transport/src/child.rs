//! A server run as a child process, spoken to over its stdin and stdout, and shut down the way
//! the spec says: close stdin, wait, SIGTERM, wait, SIGKILL, to the whole process group; its
//! exit watched, so that one that dies on its own is reaped and its group ended at once.

use std::ffi::OsStr;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot, watch};

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

/// How the child's exit went, once the watcher has reaped it.
type Reaped = Option<Result<std::process::ExitStatus, std::io::ErrorKind>>;

/// A running child process in its own process group.
///
/// A watcher task waits for the child itself, not only for the end of its output: a wrapper
/// (`npx`: npm, then sh, then node) that dies leaves its own children holding the pipes
/// open, so no end of output ever comes. When the child exits on its own, the watcher reaps
/// it at once (no zombie), ends its whole process group (SIGTERM, then SIGKILL after
/// `term_grace`) and then ends the channels' input, so that whoever reads them (a client, a
/// supervisor) sees the connection close and can start it again.
#[derive(Debug)]
pub struct ChildProcess {
    pid: Option<u32>,
    pgid: Option<Pid>,
    close_stdin: Option<oneshot::Sender<()>>,
    /// Set by the watcher once the child is reaped.
    exited: watch::Receiver<Reaped>,
    /// Set while [`ChildProcess::shutdown`] runs: the group is its business then.
    stopping: Arc<AtomicBool>,
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
        let pid = child.id();
        let pgid = pid.and_then(|p| i32::try_from(p).ok()).map(Pid::from_raw);
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let (in_tx, in_rx) = mpsc::channel(QUEUE_DEPTH);
        let (out_tx, out_rx) = mpsc::channel(QUEUE_DEPTH);
        let (close_tx, close_rx) = oneshot::channel::<()>();
        let (exited_tx, exited) = watch::channel(None);
        let (group_over_tx, group_over) = oneshot::channel::<()>();
        let stopping = Arc::new(AtomicBool::new(false));
        tokio::spawn(watch_exit(Watch {
            child,
            pid,
            pgid,
            exited: exited_tx,
            group_over: group_over_tx,
            stopping: stopping.clone(),
            term_grace: config.term_grace,
        }));
        if let Some(stdout) = stdout {
            let reader = tokio::io::BufReader::with_capacity(64 * 1024, stdout);
            // Ends at the end of the output, or once the child's group is over (a process
            // that left the group may still hold the pipe).
            let over = async move {
                let _ = group_over.await;
            };
            tokio::spawn(read_frames(reader, config.max_line, in_tx, over));
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
            pid,
            pgid,
            close_stdin: Some(close_tx),
            exited,
            stopping,
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
        self.pid
    }

    fn signal_group(&self, sig: Signal) {
        if let Some(pgid) = self.pgid {
            // ESRCH (group already gone) is the normal case after a clean exit.
            let _ = killpg(pgid, sig);
        }
    }

    /// The child's exit, once the watcher has reaped it.
    async fn reaped(&mut self) -> Result<(), std::io::ErrorKind> {
        match self.exited.wait_for(Option::is_some).await {
            Ok(r) => match *r {
                Some(Err(kind)) => Err(kind),
                _ => Ok(()),
            },
            // The watcher is gone without a word: only when the runtime shuts down.
            Err(_) => Err(std::io::ErrorKind::Other),
        }
    }

    /// The child's exit, waiting at most `d` for it (`None`: still running).
    async fn wait_for(&mut self, d: Duration) -> Option<Result<(), std::io::ErrorKind>> {
        tokio::time::timeout(d, self.reaped()).await.ok()
    }

    /// Stops the child: close stdin, wait; SIGTERM the group, wait; SIGKILL the group. Any
    /// process left in the group afterwards (an orphaned grandchild) is killed too, and the
    /// child is always reaped. A child that had exited already counts as closed.
    ///
    /// # Errors
    /// [`ChildError::Wait`] if reaping fails.
    pub async fn shutdown(&mut self) -> Result<Exit, ChildError> {
        self.stopping.store(true, Ordering::Release);
        if let Some(close) = self.close_stdin.take() {
            let _ = close.send(());
        }
        let stdin_grace = self.config.stdin_grace;
        let term_grace = self.config.term_grace;
        let (how, reaped) = match self.wait_for(stdin_grace).await {
            Some(r) => (Exit::Closed, r),
            None => {
                self.signal_group(Signal::SIGTERM);
                match self.wait_for(term_grace).await {
                    Some(r) => (Exit::Terminated, r),
                    None => {
                        self.signal_group(Signal::SIGKILL);
                        (Exit::Killed, self.reaped().await)
                    }
                }
            }
        };
        // The leader is gone; make sure nothing it started lives on in its group.
        self.signal_group(Signal::SIGKILL);
        self.pgid = None;
        reaped.map_err(|kind| ChildError::Wait(kind.into()))?;
        Ok(how)
    }
}

/// What the watcher of one child holds.
struct Watch {
    child: Child,
    pid: Option<u32>,
    pgid: Option<Pid>,
    exited: watch::Sender<Reaped>,
    /// Sent (dropped) once the child's group is over: its output is read no longer.
    group_over: oneshot::Sender<()>,
    stopping: Arc<AtomicBool>,
    term_grace: Duration,
}

/// Waits for the child's exit and reaps it. Exited on its own (not stopped by
/// [`ChildProcess::shutdown`]), its group is ended: SIGTERM, then SIGKILL after the grace.
async fn watch_exit(mut w: Watch) {
    let status = w.child.wait().await;
    let signal = |sig| {
        if let Some(pgid) = w.pgid {
            let _ = killpg(pgid, sig);
        }
    };
    let on_its_own = !w.stopping.load(Ordering::Acquire);
    if on_its_own {
        match &status {
            Ok(s) => {
                tracing::warn!(pid = ?w.pid, "the child exited ({s}); ending its process group")
            }
            Err(e) => {
                tracing::warn!(pid = ?w.pid, "waiting for the child failed: {e}; ending its process group")
            }
        }
        signal(Signal::SIGTERM);
    }
    let _ = w.exited.send(Some(status.map_err(|e| e.kind())));
    if on_its_own {
        tokio::time::sleep(w.term_grace).await;
        signal(Signal::SIGKILL);
    } else {
        // `shutdown` ends the group; what is still in the pipe may be read meanwhile.
        tokio::time::sleep(w.term_grace).await;
    }
    drop(w.group_over);
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        // Not shut down properly: do not leave the group running (the watcher reaps the child).
        self.stopping.store(true, Ordering::Release);
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
