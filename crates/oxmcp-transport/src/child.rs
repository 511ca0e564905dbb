//! A server run as a child process, spoken to over its stdin and stdout, and shut down the way
//! the spec says: close stdin, wait, SIGTERM, wait, SIGKILL, to the whole process group; its
//! exit watched, so that one that dies on its own has its group ended and is reaped at once.
//!
//! A process group is only ever signalled while its leader (the child) is not reaped: a
//! process that has exited but is not reaped yet (a zombie) keeps its process id, and so its
//! group's id, from being given to an unrelated process. So the watcher learns of the child's
//! exit without reaping it (`waitid` with `WNOWAIT`, on Linux, Android and FreeBSD), signals
//! the group, forgets it, and only then reaps the child; after that nothing signals the group
//! again. (Elsewhere the child is reaped as soon as it exits and its group is forgotten at
//! once: what it started is then not ended when it dies on its own, only by
//! [`ChildProcess::shutdown`] while it runs.) A grandchild that moved itself to another
//! process group or session (`setsid`, `setpgid`) is out of reach, as it always was: neither
//! shutdown nor the watcher can end it.

use std::ffi::OsStr;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};
use tokio::sync::{Notify, mpsc, oneshot, watch};

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

/// How the child's exit went, once it is reaped.
type Reaped = Result<std::process::ExitStatus, std::io::ErrorKind>;

/// Where the child stands, as its watcher tells it.
#[derive(Debug, Clone, Copy)]
enum Life {
    Running,
    /// Exited, not reaped yet: its group may still be signalled.
    Exited,
    /// Reaped: its group is forgotten.
    Reaped(Reaped),
}

/// The child's process group, for as long as it may be signalled: until the child is about
/// to be reaped. It is forgotten under the same lock that signalling takes, before the child
/// is reaped, so no signal can reach a group whose id has been given to someone else.
#[derive(Debug, Clone)]
struct Group(Arc<std::sync::Mutex<Option<Pid>>>);

impl Group {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Pid>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Signals the group, unless it is forgotten.
    fn signal(&self, sig: Signal) {
        if let Some(pgid) = *self.lock() {
            // ESRCH (nobody left in it) is the normal case after a clean exit.
            let _ = killpg(pgid, sig);
        }
    }

    /// Kills what is left in the group, and forgets it.
    fn end(&self) {
        if let Some(pgid) = self.lock().take() {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

/// Set once the child's owner stops it (shutdown or drop): the group is its business then,
/// and the watcher cuts its grace short.
#[derive(Debug, Default)]
struct Stop {
    stopping: AtomicBool,
    notify: Notify,
}

impl Stop {
    fn request(&self) {
        self.stopping.store(true, Ordering::Release);
        self.notify.notify_one();
    }

    fn requested(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }
}

/// A running child process in its own process group.
///
/// A watcher task waits for the child itself, not only for the end of its output: a wrapper
/// (`npx`: npm, then sh, then node) that dies leaves its own children holding the pipes
/// open, so no end of output ever comes. When the child exits on its own, the watcher ends
/// its whole process group (SIGTERM, then SIGKILL after `term_grace`) while the child is not
/// yet reaped, then reaps it (no zombie is left) and ends the channels' input, so that whoever
/// reads them (a client, a supervisor) sees the connection close and can start it again. See
/// the module's documentation for what stays out of reach.
#[derive(Debug)]
pub struct ChildProcess {
    pid: Option<u32>,
    group: Group,
    close_stdin: Option<oneshot::Sender<()>>,
    /// Set by the watcher.
    life: watch::Receiver<Life>,
    stop: Arc<Stop>,
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
        let group = Group(Arc::new(std::sync::Mutex::new(pgid)));
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let (in_tx, in_rx) = mpsc::channel(QUEUE_DEPTH);
        let (out_tx, out_rx) = mpsc::channel(QUEUE_DEPTH);
        let (close_tx, close_rx) = oneshot::channel::<()>();
        let (life_tx, life) = watch::channel(Life::Running);
        let (group_over_tx, group_over) = oneshot::channel::<()>();
        let stop = Arc::new(Stop::default());
        tokio::spawn(watch_exit(Watch {
            guard: Unwatched(group.clone()),
            child,
            pid,
            group: group.clone(),
            life: life_tx,
            group_over: group_over_tx,
            stop: stop.clone(),
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
            group,
            close_stdin: Some(close_tx),
            life,
            stop,
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

    /// Whether the child has exited (reaped or not), waiting at most `d` (`None`: still
    /// running).
    async fn exited_within(&mut self, d: Duration) -> Option<()> {
        let exited = self.life.wait_for(|l| !matches!(l, Life::Running));
        tokio::time::timeout(d, exited).await.ok().map(|_| ())
    }

    /// The child's exit, once the watcher has reaped it.
    async fn reaped(&mut self) -> Reaped {
        match self.life.wait_for(|l| matches!(l, Life::Reaped(_))).await {
            Ok(l) => match *l {
                Life::Reaped(r) => r,
                _ => Err(std::io::ErrorKind::Other),
            },
            // The watcher is gone without a word: only when the runtime shuts down.
            Err(_) => Err(std::io::ErrorKind::Other),
        }
    }

    /// Stops the child: close stdin, wait; SIGTERM the group, wait; SIGKILL the group. Any
    /// process left in the group once the child has exited (an orphaned grandchild) is
    /// killed too, before the child is reaped, and the child is always reaped. A child that
    /// had exited already counts as closed.
    ///
    /// # Errors
    /// [`ChildError::Wait`] if reaping fails.
    pub async fn shutdown(&mut self) -> Result<Exit, ChildError> {
        self.stop.request();
        if let Some(close) = self.close_stdin.take() {
            let _ = close.send(());
        }
        let stdin_grace = self.config.stdin_grace;
        let term_grace = self.config.term_grace;
        let how = if self.exited_within(stdin_grace).await.is_some() {
            Exit::Closed
        } else {
            self.group.signal(Signal::SIGTERM);
            if self.exited_within(term_grace).await.is_some() {
                Exit::Terminated
            } else {
                self.group.signal(Signal::SIGKILL);
                Exit::Killed
            }
        };
        // The watcher kills what is left of the group, forgets it, then reaps the child.
        let reaped = self.reaped().await;
        reaped.map_err(|kind| ChildError::Wait(kind.into()))?;
        Ok(how)
    }
}

/// Kills the group of a child whose watcher ends before it reaped the child (the runtime
/// shutting down), and forgets the group: the child is not reaped yet when this runs.
struct Unwatched(Group);

impl Drop for Unwatched {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// What the watcher of one child holds.
struct Watch {
    /// First, so that it is dropped before `child` (whose drop may reap it).
    guard: Unwatched,
    child: Child,
    pid: Option<u32>,
    group: Group,
    life: watch::Sender<Life>,
    /// Sent (dropped) once the child's group is over: its output is read no longer.
    group_over: oneshot::Sender<()>,
    stop: Arc<Stop>,
    term_grace: Duration,
}

/// Waits for the child's exit. Exited on its own (not stopped by its owner), its group is
/// ended (SIGTERM, then SIGKILL after the grace, cut short if its owner stops it meanwhile);
/// stopped, whatever is left of its group is killed at once. Then the group is forgotten and
/// the child reaped. Where the system cannot tell of an exit without reaping, the child is
/// reaped at once and its group forgotten first, never signalled after.
async fn watch_exit(mut w: Watch) {
    let early = wait_exit(&mut w.child, &w.group).await;
    let on_its_own = !w.stop.requested();
    if on_its_own {
        tracing::warn!(pid = ?w.pid, "the child exited; ending its process group");
    }
    let status = match early {
        Some(reaped) => reaped,
        None => {
            if on_its_own {
                w.group.signal(Signal::SIGTERM);
            }
            w.life.send_replace(Life::Exited);
            if on_its_own {
                tokio::select! {
                    () = tokio::time::sleep(w.term_grace) => {}
                    () = w.stop.notify.notified() => {}
                }
            }
            w.group.end();
            w.child.wait().await.map_err(|e| e.kind())
        }
    };
    if let Err(e) = &status {
        tracing::warn!(pid = ?w.pid, "waiting for the child failed: {e}");
    }
    w.life.send_replace(Life::Reaped(status));
    if !on_its_own {
        // What is still in the pipe may be read meanwhile.
        tokio::time::sleep(w.term_grace).await;
    }
    drop(w.group_over);
    drop(w.guard);
}

/// Waits until the child has exited. `None`: it has, and is not reaped (its group may still
/// be signalled). `Some`: it is reaped already, and its group forgotten (where the system
/// cannot tell of an exit without reaping, or someone else reaped it).
async fn wait_exit(child: &mut Child, group: &Group) -> Option<Reaped> {
    use tokio::signal::unix::{SignalKind, signal};
    // Registered before the first look, so that no exit is missed; polled as well, in case
    // SIGCHLD cannot be had.
    let mut sigchld = signal(SignalKind::child()).ok();
    loop {
        if let Some(exited) = exit_status(child, group) {
            return exited;
        }
        let poll = tokio::time::sleep(Duration::from_millis(250));
        match &mut sigchld {
            Some(s) => {
                tokio::select! {
                    _ = s.recv() => {}
                    () = poll => {}
                }
            }
            None => poll.await,
        }
    }
}

/// Whether the child has exited, looking without reaping it: `Some(None)` when it has.
#[cfg(any(
    target_os = "android",
    target_os = "freebsd",
    all(target_os = "linux", not(target_env = "uclibc")),
))]
fn exit_status(child: &mut Child, group: &Group) -> Option<Option<Reaped>> {
    use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
    let pid = child.id().and_then(|p| i32::try_from(p).ok())?;
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT | WaitPidFlag::WNOHANG;
    match waitid(Id::Pid(Pid::from_raw(pid)), flags) {
        Ok(WaitStatus::StillAlive) | Err(nix::errno::Errno::EINTR) => None,
        Ok(_) => Some(None),
        // Not ours to wait for any more (reaped by someone else): its id may be reused.
        Err(_) => Some(Some(reap_now(child, group))),
    }
}

/// Whether the child has exited; it is reaped (and its group forgotten first) if it has.
#[cfg(not(any(
    target_os = "android",
    target_os = "freebsd",
    all(target_os = "linux", not(target_env = "uclibc")),
)))]
fn exit_status(child: &mut Child, group: &Group) -> Option<Option<Reaped>> {
    let mut pgid = group.lock();
    match child.try_wait() {
        Ok(None) => None,
        Ok(Some(status)) => {
            *pgid = None;
            Some(Some(Ok(status)))
        }
        Err(e) => {
            *pgid = None;
            Some(Some(Err(e.kind())))
        }
    }
}

/// Forgets the group, then reaps the child (or learns it cannot).
#[cfg(any(
    target_os = "android",
    target_os = "freebsd",
    all(target_os = "linux", not(target_env = "uclibc")),
))]
fn reap_now(child: &mut Child, group: &Group) -> Reaped {
    *group.lock() = None;
    match child.try_wait() {
        Ok(Some(status)) => Ok(status),
        Ok(None) => Err(std::io::ErrorKind::Other),
        Err(e) => Err(e.kind()),
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        // Not shut down properly: do not leave the group running (the watcher reaps the
        // child; the group is forgotten before that, so this never signals a stranger).
        self.stop.request();
        self.group.signal(Signal::SIGKILL);
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
