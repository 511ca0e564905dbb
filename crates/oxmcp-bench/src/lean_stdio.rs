//! The raw driver for a stdio server: the child spawned and spoken to over its pipes by hand,
//! so that the driver costs far less per call than the server it measures (the SDK's
//! `Client` spends about as much per call as a fast server does).
//!
//! Requests are rendered from the call's template into one buffer and written together, as
//! many as the window has room for; the answers are read line by line and checked by
//! comparing bytes, as the raw HTTP driver's are ([`Needles`]): the id, `"jsonrpc":"2.0"`, no
//! error, and the one text item equal to the expected text. A line the comparison cannot
//! accept is parsed: a notification or a request from the server is skipped, anything else
//! is checked in full and gives the verdict. Once its buffers have grown, a call allocates
//! nothing but its entry in the table of calls in flight (which keeps its room).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::{Context as _, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{Notify, Semaphore};

use crate::args::BenchMode;
use crate::check::{Failure, Tally};
use crate::lean::Needles;
use crate::run::{Phase, Plan};
use crate::stats::{CpuWatch, DONE, Ticker, status_kib};
use crate::wire::{self, Template};

/// At most this many requests are rendered into one write.
const MOST_PER_WRITE: usize = 64;

/// The longest answer line read (the driver's own limit on a server's reply).
const MAX_LINE: usize = 64 << 20;

/// The server's stdout, read line by line into one buffer.
struct Answers {
    stdout: BufReader<ChildStdout>,
    line: Vec<u8>,
}

impl Answers {
    /// The next line from the server (without its newline), within [`wire::TIMEOUT`].
    async fn next_line(&mut self) -> Result<&[u8], Failure> {
        self.line.clear();
        let read = self.stdout.read_until(b'\n', &mut self.line);
        let n = tokio::time::timeout(wire::TIMEOUT, read)
            .await
            .map_err(|_| Failure::Timeout)?
            .map_err(|e| Failure::Transport(format!("reading the server's stdout: {e}")))?;
        if n == 0 {
            return Err(Failure::Transport("the server closed its stdout".into()));
        }
        if self.line.len() > MAX_LINE {
            return Err(Failure::Wrong("an answer over 64 MiB".into()));
        }
        let end = self.line.len() - usize::from(self.line.ends_with(b"\n"));
        Ok(&self.line[..end])
    }
}

/// Writes `bytes` to the server, within [`wire::TIMEOUT`] (a server that stops reading does
/// not hang the run).
async fn write(stdin: &mut ChildStdin, bytes: &[u8]) -> Result<(), Failure> {
    tokio::time::timeout(wire::TIMEOUT, stdin.write_all(bytes))
        .await
        .map_err(|_| Failure::Timeout)?
        .map_err(|e| Failure::Transport(format!("writing to the server's stdin: {e}")))
}

/// What a line from the server is.
enum Line {
    /// The answer to call `n`, checked.
    Answer(u64, Result<(), Failure>),
    /// A line that answers no call: not JSON, or no id. It counts as an error of its own.
    Stray(Failure),
    /// A notification or a request of the server's own: skipped.
    Other,
}

/// The call number a line answers, by its `"id":N` (the first one that parses).
fn id_of(line: &[u8]) -> Option<u64> {
    memchr::memmem::find_iter(line, b"\"id\":").find_map(|at| {
        let digits = &line[at + 5..];
        let len = digits.iter().take_while(|b| b.is_ascii_digit()).count();
        std::str::from_utf8(&digits[..len]).ok()?.parse().ok()
    })
}

/// Checks one line: by its bytes when they are certainly call `n`'s right answer, else in
/// full (which tells a notification from an answer, and a wrong answer from a right one in
/// another layout).
fn check_line(line: &[u8], needles: &mut Needles, plan: &Plan) -> Line {
    if let Some(n) = id_of(line)
        && needles.accept(line, n)
    {
        return Line::Answer(n, Ok(()));
    }
    let message: Value = match serde_json::from_slice(line) {
        Ok(m) => m,
        Err(e) => {
            return Line::Stray(Failure::Wrong(format!("a line that is not JSON: {e}")));
        }
    };
    if message.get("method").is_some() {
        return Line::Other;
    }
    let Some(n) = message.get("id").and_then(Value::as_u64) else {
        return Line::Stray(Failure::Wrong(format!(
            "an answer without a call's id: {}",
            crate::check::clip(&message.to_string())
        )));
    };
    Line::Answer(n, crate::lean::check_message(line, n, plan))
}

/// Spawns the server and opens its session: `initialize` (checked) and
/// `notifications/initialized`.
async fn open(command: &[String]) -> anyhow::Result<(Child, ChildStdin, Answers)> {
    let (program, args) = command
        .split_first()
        .context("a stdio server needs its command after --")?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {program}"))?;
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        bail!("no pipes to the server");
    };
    let mut answers = Answers {
        stdout: BufReader::with_capacity(1 << 16, stdout),
        line: Vec::with_capacity(4096),
    };
    let mut init = wire::initialize_request();
    init.push(b'\n');
    let opened = async {
        write(&mut stdin, &init).await?;
        loop {
            let line = answers.next_line().await?;
            let is_notice =
                serde_json::from_slice::<Value>(line).is_ok_and(|m| m.get("method").is_some());
            if !is_notice {
                wire::initialize_answer(line)?;
                break;
            }
        }
        let mut initialized = wire::INITIALIZED.to_vec();
        initialized.push(b'\n');
        write(&mut stdin, &initialized).await
    };
    if let Err(f) = opened.await {
        bail!("the server's initialize failed: {}", f.describe());
    }
    Ok((child, stdin, answers))
}

/// How many calls a phase makes: `requests`, or as many as start within `duration`.
struct Budget {
    limit: u64,
    deadline: Option<Instant>,
}

impl Budget {
    fn new(plan: &Plan) -> Budget {
        Budget {
            limit: u64::try_from(plan.requests).unwrap_or(u64::MAX),
            deadline: plan.duration.map(|d| Instant::now() + d),
        }
    }

    /// Whether another call may start after `started` have.
    fn more(&self, started: u64) -> bool {
        match self.deadline {
            Some(d) => Instant::now() < d,
            None => started < self.limit,
        }
    }
}

/// Calls one at a time from call number `first`; returns the tally and the next number.
async fn sequential(
    stdin: &mut ChildStdin,
    answers: &mut Answers,
    plan: &Plan,
    template: &Template,
    first: u64,
) -> (Tally, u64) {
    let mut needles = Needles::for_plan(plan);
    let mut tally = Tally::default();
    let mut out = Vec::with_capacity(1024);
    let budget = Budget::new(plan);
    let mut n = first;
    while budget.more(n - first) {
        out.clear();
        template.render_into(n, &mut out);
        out.push(b'\n');
        let t = Instant::now();
        let outcome = one_call(stdin, answers, &out, n, &mut needles, plan).await;
        // No answer: the pipes may be out of step now (a wrong answer is an answer).
        let lost = matches!(outcome, Err(Failure::Transport(_) | Failure::Timeout));
        tally.record(outcome, t.elapsed());
        DONE.fetch_add(1, Ordering::Relaxed);
        n += 1;
        if lost {
            break;
        }
    }
    (tally, n)
}

async fn one_call(
    stdin: &mut ChildStdin,
    answers: &mut Answers,
    request: &[u8],
    n: u64,
    needles: &mut Needles,
    plan: &Plan,
) -> Result<(), Failure> {
    write(stdin, request).await?;
    loop {
        match check_line(answers.next_line().await?, needles, plan) {
            Line::Other => {}
            Line::Answer(m, outcome) if m == n => return outcome,
            // A late answer to a call already counted: this call's may follow.
            Line::Answer(m, _) if m < n => {}
            Line::Stray(f) => return Err(f),
            Line::Answer(m, _) => {
                return Err(Failure::Wrong(format!(
                    "an answer to {m} while {n} was asked"
                )));
            }
        }
    }
}

/// The pipelined phase's shared state: room in the window, and the calls in flight.
struct Window {
    /// Closed by the reader when it stops: the writer stops too.
    room: Semaphore,
    in_flight: RefCell<HashMap<u64, Instant>>,
    /// Set by the writer when it is done: how many it sent.
    sent: Cell<Option<u64>>,
    /// Told when `sent` is set, for a reader with nothing in flight to wait for.
    done: Notify,
}

/// Up to `window` calls in flight from call number `first`: a writer renders as many as
/// there is room for into one write, a reader checks the answers as they come (in any
/// order) and makes room again. Both run on this task.
async fn pipelined(
    stdin: &mut ChildStdin,
    answers: &mut Answers,
    plan: &Plan,
    template: &Template,
    first: u64,
) -> Tally {
    let size = plan.window.max(1);
    let window = Window {
        room: Semaphore::new(size),
        in_flight: RefCell::new(HashMap::with_capacity(size)),
        sent: Cell::new(None),
        done: Notify::new(),
    };
    let writer = write_calls(&window, stdin, plan, template, first);
    let ((), tally) = tokio::join!(writer, read_answers(&window, answers, plan));
    tally
}

/// The pipelined phase's writer: as many calls as there is room for, up to
/// [`MOST_PER_WRITE`] in one write, until the budget is spent or the reader stops. Stdin
/// stays open: the server answers what it was asked before it sees the end. A failed write
/// stops it; its calls stay in flight, and the reader counts them as lost.
async fn write_calls(
    window: &Window,
    stdin: &mut ChildStdin,
    plan: &Plan,
    template: &Template,
    first: u64,
) {
    let budget = Budget::new(plan);
    let mut out = Vec::with_capacity(MOST_PER_WRITE * 256);
    let mut n = first;
    while budget.more(n - first) {
        let Ok(permit) = window.room.acquire().await else {
            break;
        };
        permit.forget();
        let mut take = 1;
        while take < MOST_PER_WRITE && window.room.try_acquire().map(|p| p.forget()).is_ok() {
            take += 1;
        }
        out.clear();
        let now = Instant::now();
        let mut rendered = 0;
        {
            let mut flights = window.in_flight.borrow_mut();
            while rendered < take && budget.more(n - first) {
                template.render_into(n, &mut out);
                out.push(b'\n');
                flights.insert(n, now);
                n += 1;
                rendered += 1;
            }
        }
        window.room.add_permits(take - rendered);
        if out.is_empty() {
            break;
        }
        if write(stdin, &out).await.is_err() {
            break;
        }
    }
    window.sent.set(Some(n - first));
    window.done.notify_one();
}

/// The pipelined phase's reader: every answer checked, until all the writer sent are in.
/// Lines that answer no call in flight are counted as errors of their own.
async fn read_answers(window: &Window, answers: &mut Answers, plan: &Plan) -> Tally {
    let mut needles = Needles::for_plan(plan);
    let mut tally = Tally::default();
    // Calls answered (or lost): what ends the phase, beside how many were sent.
    let mut settled = 0;
    while window.sent.get().is_none_or(|s| settled < s) {
        let read = if window.in_flight.borrow().is_empty() {
            // Nothing to wait for but the writer: more calls, or its end.
            tokio::select! {
                biased;
                read = answers.next_line() => read,
                () = window.done.notified() => continue,
            }
        } else {
            answers.next_line().await
        };
        let line = match read {
            Ok(line) => line,
            Err(f) => {
                // Everything still in flight is lost with the pipe.
                let lost = window.in_flight.borrow_mut().drain().count().max(1);
                for _ in 0..lost {
                    tally.record(Err(f.clone()), wire::TIMEOUT);
                }
                break;
            }
        };
        let (n, outcome) = match check_line(line, &mut needles, plan) {
            Line::Other => continue,
            Line::Stray(f) => {
                tally.record(Err(f), std::time::Duration::ZERO);
                continue;
            }
            Line::Answer(n, outcome) => (n, outcome),
        };
        let Some(at) = window.in_flight.borrow_mut().remove(&n) else {
            let f = outcome
                .err()
                .unwrap_or_else(|| Failure::Wrong(format!("an answer to {n}, not in flight")));
            tally.record(Err(f), std::time::Duration::ZERO);
            continue;
        };
        settled += 1;
        tally.record(outcome, at.elapsed());
        DONE.fetch_add(1, Ordering::Relaxed);
        window.room.add_permits(1);
    }
    // The writer stops too, if it waits for room.
    window.room.close();
    tally
}

/// The phases against the stdio server `command` (sequential, pipelined or both, on one
/// connection); returns them and the report's other fields (CPU, the server's peak RSS).
pub(crate) async fn run(plan: &Plan, command: &[String]) -> anyhow::Result<(Vec<Phase>, Value)> {
    if plan.clients > 1 {
        bail!("the raw stdio driver runs one connection (--clients 1, or --driver client)");
    }
    let (mut child, mut stdin, mut answers) = open(command).await?;
    let pid = child.id();
    let template = Template::tools_call(
        &plan.tool,
        &plan.payload.args,
        plan.payload.base.as_deref(),
        None,
    );
    let watch = CpuWatch::start(pid);
    let mut phases = Vec::new();
    let mut next = 1;
    if plan.mode != BenchMode::Pipelined {
        let ticker = Ticker::start("sequential");
        let start = Instant::now();
        let (tally, after) = sequential(&mut stdin, &mut answers, plan, &template, next).await;
        next = after;
        drop(ticker);
        phases.push(Phase::new("sequential", "calls", 1, tally, start.elapsed()));
    }
    if plan.mode != BenchMode::Sequential {
        let ticker = Ticker::start("pipelined");
        let start = Instant::now();
        let tally = pipelined(&mut stdin, &mut answers, plan, &template, next).await;
        drop(ticker);
        phases.push(Phase::new("pipelined", "calls", 1, tally, start.elapsed()));
    }
    let mut extra = json!({"cpu": watch.stop()});
    if plan.mode != BenchMode::Sequential {
        extra["window"] = json!(plan.window);
    }
    if let Some(pid) = pid {
        extra["server_peak_rss_kib"] = json!(status_kib(pid, "VmHWM:"));
    }
    drop(stdin);
    if tokio::time::timeout(wire::TIMEOUT, child.wait())
        .await
        .is_err()
    {
        let _ = child.kill().await;
    }
    Ok((phases, extra))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use clap::Parser as _;

    use super::*;

    /// `echo` with `{"message":"hello"}`, each call's text `hello-<n>`.
    fn plan() -> Plan {
        let argv = ["oxmcp-bench", "--driver", "raw", "--", "server"];
        crate::args::BenchArgs::try_parse_from(argv)
            .unwrap()
            .plan()
            .unwrap()
    }

    fn verdict(line: &str) -> Line {
        let plan = plan();
        let mut needles = Needles::for_plan(&plan);
        check_line(line.as_bytes(), &mut needles, &plan)
    }

    #[test]
    fn ids_are_read_from_the_line() {
        assert_eq!(id_of(br#"{"jsonrpc":"2.0","id":42,"result":{}}"#), Some(42));
        assert_eq!(id_of(br#"{"result":{"id":"x"},"id":7}"#), Some(7));
        assert_eq!(id_of(br#"{"jsonrpc":"2.0","method":"m"}"#), None);
    }

    #[test]
    fn answers_are_checked_and_notifications_skipped() {
        let right =
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hello-3"}]}}"#;
        assert!(matches!(verdict(right), Line::Answer(3, Ok(()))));
        // Another layout of the right answer is parsed, and passes.
        let spaced = r#"{"id": 3, "jsonrpc": "2.0", "result": {"content": [{"text": "hello-3", "type": "text"}]}}"#;
        assert!(matches!(verdict(spaced), Line::Answer(3, Ok(()))));
        let wrong =
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hello-4"}]}}"#;
        assert!(matches!(
            verdict(wrong),
            Line::Answer(3, Err(Failure::Wrong(_)))
        ));
        let error = r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"no"}}"#;
        assert!(matches!(
            verdict(error),
            Line::Answer(3, Err(Failure::Rpc(-32603, _)))
        ));
        let notice = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#;
        assert!(matches!(verdict(notice), Line::Other));
        assert!(
            matches!(verdict("not json"), Line::Stray(Failure::Wrong(m)) if m.contains("not JSON"))
        );
        let no_id = r#"{"jsonrpc":"2.0","result":{}}"#;
        assert!(matches!(verdict(no_id), Line::Stray(Failure::Wrong(m)) if m.contains("without")));
    }
}
