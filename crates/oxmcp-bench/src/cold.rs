//! Cold start of a stdio server: the time from spawning it to its answer to `initialize`,
//! and its resident memory once it has answered its first `tools/call`.
//!
//! Each start is a new process driven over raw pipes (no SDK client in the way): write
//! `initialize`, read the answer (its id and `protocolVersion` checked), then
//! `notifications/initialized` and one `tools/call` checked like every other call. The RSS
//! is read from `/proc/<pid>/status` right after that answer, then stdin is closed and the
//! process must exit. A start whose `initialize` and first call have not both been answered
//! within [`TIMEOUT`] is killed with its process group and counted as a timeout (the reads
//! block: a server that never answers would hang the run).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt as _;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;
use serde_json::{Value, json};

use crate::check::{Failure, Tally};
use crate::run::Plan;
use crate::stats::{status_field, status_kib};
use crate::wire::TIMEOUT;

/// What the starts measured: spawn to `initialize` answered, and RSS after the first call.
pub(crate) struct ColdStarts {
    pub(crate) tally: Tally,
    pub(crate) rss_kib: Vec<u64>,
    /// The anonymous part of each (`RssAnon`): the rest is the binary's and libraries'
    /// pages, whose count follows the state of the page cache.
    pub(crate) anon_kib: Vec<u64>,
    /// The CPUs the servers were allowed (`Cpus_allowed_list` after the first call), when
    /// every start had the same; otherwise each start's, comma-separated in brackets.
    pub(crate) server_cpus: Option<String>,
    /// The driver's own thread's CPUs after the run (they are the same as before it).
    pub(crate) driver_cpus: Option<String>,
}

/// Starts the server `n` times, one after another.
pub(crate) fn run(plan: &Plan, command: &[String], n: usize) -> anyhow::Result<ColdStarts> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| anyhow::anyhow!("--cold-start needs a server command after --"))?;
    let mut out = ColdStarts {
        tally: Tally::default(),
        rss_kib: Vec::with_capacity(n),
        anon_kib: Vec::with_capacity(n),
        server_cpus: None,
        driver_cpus: None,
    };
    let pin = plan.server_cpu.map(Pin::new).transpose()?;
    let mut seen: Vec<String> = Vec::new();
    let watchdog = Watchdog::start();
    for i in 0..n {
        // A group of its own: a command that starts the server through a shell or a
        // launcher is killed whole.
        let mut command = Command::new(program);
        command
            .args(args)
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let (mut child, started) = match &pin {
            Some(pin) => pin.spawn(&mut command)?,
            None => {
                let started = Instant::now();
                (command.spawn()?, started)
            }
        };
        watchdog.watch(child.id());
        let outcome = start_once(plan, &mut child, started, i as u64 + 1);
        let outcome = match watchdog.done() {
            true => Err(Failure::Timeout),
            false => outcome.and_then(|start| {
                stop(&mut child)?;
                Ok(start)
            }),
        };
        match outcome {
            Ok(start) => {
                out.tally.record(Ok(()), start.latency);
                out.rss_kib.extend(start.rss_kib);
                out.anon_kib.extend(start.anon_kib);
                seen.extend(start.cpus);
            }
            Err(f) => {
                kill_group(child.id());
                let _ = child.wait();
                out.tally.record(Err(f), started.elapsed());
            }
        }
    }
    seen.dedup();
    out.server_cpus = match seen.as_slice() {
        [] => None,
        [one] => Some(one.clone()),
        all => Some(format!("[{}]", all.join(", "))),
    };
    out.driver_cpus = Pin::current().ok().map(|set| cpu_list(&set));
    Ok(out)
}

/// `--server-cpu`: spawns each server with the calling thread pinned to that CPU (a child
/// starts with the CPUs of the thread that spawned it), then puts the thread back on the
/// CPUs it had. The timed start begins once the thread is on the server's CPU, before the
/// spawn, and includes the move back.
struct Pin {
    server: CpuSet,
    driver: CpuSet,
}

impl Pin {
    fn new(cpu: usize) -> anyhow::Result<Pin> {
        let mut server = CpuSet::new();
        server
            .set(cpu)
            .map_err(|e| anyhow::anyhow!("--server-cpu {cpu}: {e}"))?;
        let driver = Pin::current()?;
        // Refused here (EINVAL) when this machine has no such CPU or it is not ours to use.
        sched_setaffinity(Pid::from_raw(0), &server)
            .and_then(|()| sched_setaffinity(Pid::from_raw(0), &driver))
            .map_err(|e| {
                anyhow::anyhow!("--server-cpu {cpu}: not a CPU this process may use ({e})")
            })?;
        Ok(Pin { server, driver })
    }

    /// The calling thread's CPUs.
    fn current() -> anyhow::Result<CpuSet> {
        sched_getaffinity(Pid::from_raw(0)).map_err(|e| anyhow::anyhow!("sched_getaffinity: {e}"))
    }

    fn spawn(&self, command: &mut Command) -> anyhow::Result<(Child, Instant)> {
        sched_setaffinity(Pid::from_raw(0), &self.server)?;
        let started = Instant::now();
        let spawned = command.spawn();
        sched_setaffinity(Pid::from_raw(0), &self.driver)?;
        Ok((spawned?, started))
    }
}

/// A CPU set as Linux lists it (`0-3,6`).
fn cpu_list(set: &CpuSet) -> String {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for cpu in (0..CpuSet::count()).filter(|&c| set.is_set(c).unwrap_or(false)) {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == cpu => *end = cpu,
            _ => runs.push((cpu, cpu)),
        }
    }
    let run = |&(a, b): &(usize, usize)| match a == b {
        true => a.to_string(),
        false => format!("{a}-{b}"),
    };
    runs.iter().map(run).collect::<Vec<_>>().join(",")
}

/// What the watchdog is told.
enum Watch {
    /// A start began: the server's process group.
    Start(u32),
    /// The start ended (answered or failed); its server is not reaped yet.
    Done,
}

/// One thread for the whole run (nothing is spawned while a start is timed) that kills a
/// start's process group when its `initialize` and first call have not both been answered
/// within [`TIMEOUT`]: the server's pipes close, and the blocked read ends.
struct Watchdog {
    watch: mpsc::Sender<Watch>,
    /// For each start, after its [`Watch::Done`]: whether the group was killed.
    fired: mpsc::Receiver<bool>,
}

impl Watchdog {
    fn start() -> Watchdog {
        let (watch, starts) = mpsc::channel();
        let (fired_tx, fired) = mpsc::channel();
        // Ends when the run drops its sender.
        std::thread::spawn(move || {
            while let Ok(next) = starts.recv() {
                let Watch::Start(group) = next else {
                    continue;
                };
                let fired = match starts.recv_timeout(TIMEOUT) {
                    Err(RecvTimeoutError::Timeout) => {
                        kill_group(group);
                        // The start ends all the same, once its read sees the pipes close.
                        let _ = starts.recv();
                        true
                    }
                    Ok(_) | Err(RecvTimeoutError::Disconnected) => false,
                };
                if fired_tx.send(fired).is_err() {
                    return;
                }
            }
        });
        Watchdog { watch, fired }
    }

    fn watch(&self, group: u32) {
        let _ = self.watch.send(Watch::Start(group));
    }

    /// Ends the watch of the current start: whether it was killed. Answered before the
    /// server is reaped, so that its process group cannot be another's when it is killed.
    fn done(&self) -> bool {
        let _ = self.watch.send(Watch::Done);
        self.fired.recv().unwrap_or(false)
    }
}

/// Kills the process group `group` (a server started by [`run`] and what it started).
fn kill_group(group: u32) {
    use nix::sys::signal::{Signal, killpg};
    if let Ok(group) = i32::try_from(group) {
        let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
    }
}

/// What one start measured.
struct Start {
    /// Spawn to the `initialize` answer.
    latency: Duration,
    /// `VmRSS` and `RssAnon` after the first call.
    rss_kib: Option<u64>,
    anon_kib: Option<u64>,
    /// Its `Cpus_allowed_list`.
    cpus: Option<String>,
}

/// One start: the time to the `initialize` answer and the RSS after the first call.
fn start_once(plan: &Plan, child: &mut Child, started: Instant, n: u64) -> Result<Start, Failure> {
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(Failure::Transport("no pipes to the child".into()));
    };
    let mut stdout = BufReader::new(stdout);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "mcp-bench", "version": env!("CARGO_PKG_VERSION")}}});
    send(&mut stdin, &init)?;
    let answer = answer_to(&mut stdout, 1)?;
    let latency = started.elapsed();
    if answer["result"]["protocolVersion"].as_str().is_none() {
        return Err(Failure::Wrong(format!(
            "initialize answered without protocolVersion: {}",
            crate::check::clip(&answer.to_string())
        )));
    }
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )?;
    let (args, sent) = plan.payload.arguments(n);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": plan.tool, "arguments": args}});
    send(&mut stdin, &call)?;
    let answer = answer_to(&mut stdout, 2)?;
    if let Some(e) = answer.get("error") {
        let code = e["code"].as_i64().unwrap_or_default();
        return Err(Failure::Rpc(code, e["message"].to_string()));
    }
    let result = &answer["result"];
    let texts = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str());
    let is_error = result["isError"].as_bool().unwrap_or(false);
    plan.expect.check(sent.as_deref(), is_error, texts)?;
    let rss_kib = status_kib(child.id(), "VmRSS:");
    let anon_kib = status_kib(child.id(), "RssAnon:");
    let cpus = status_field(child.id(), "Cpus_allowed_list:");
    drop(stdin);
    Ok(Start {
        latency,
        rss_kib,
        anon_kib,
        cpus,
    })
}

fn send(stdin: &mut ChildStdin, msg: &Value) -> Result<(), Failure> {
    let mut line = msg.to_string();
    line.push('\n');
    stdin
        .write_all(line.as_bytes())
        .and_then(|()| stdin.flush())
        .map_err(|e| Failure::Transport(format!("writing to the server: {e}")))
}

/// Reads lines until the response with this id (notifications and requests are skipped).
fn answer_to(stdout: &mut BufReader<ChildStdout>, id: u64) -> Result<Value, Failure> {
    let mut line = String::new();
    loop {
        line.clear();
        match stdout.read_line(&mut line) {
            Ok(0) => return Err(Failure::Transport("the server closed its stdout".into())),
            Ok(_) => {}
            Err(e) => return Err(Failure::Transport(format!("reading: {e}"))),
        }
        let msg: Value = serde_json::from_str(&line).map_err(|e| {
            Failure::Wrong(format!("not JSON ({e}): {}", crate::check::clip(&line)))
        })?;
        if msg.get("method").is_some() {
            continue;
        }
        if msg["id"].as_u64() != Some(id) {
            return Err(Failure::Wrong(format!(
                "answer with id {}, expected {id}",
                msg["id"]
            )));
        }
        return Ok(msg);
    }
}

/// Waits up to 5 s for the server to exit after its stdin closed.
fn stop(child: &mut Child) -> Result<(), Failure> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return Ok(()),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
            Ok(None) => {
                return Err(Failure::Timeout);
            }
            Err(e) => return Err(Failure::Transport(format!("waiting for the server: {e}"))),
        }
    }
}
