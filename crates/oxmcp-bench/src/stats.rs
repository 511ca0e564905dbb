//! Figures: rates, latency percentiles, CPU and memory of processes, a live progress line.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Answers received so far in the running phase (for the progress display).
pub(crate) static DONE: AtomicUsize = AtomicUsize::new(0);

pub(crate) fn rate(n: u64, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64().max(1e-9)
}

pub(crate) fn percentiles(mut lat: Vec<Duration>) -> Value {
    if lat.is_empty() {
        return Value::Null;
    }
    lat.sort_unstable();
    let at = |p: f64| {
        let i = ((lat.len() as f64 - 1.0) * p).round() as usize;
        lat[i.min(lat.len() - 1)].as_secs_f64() * 1e3
    };
    json!({"p50_ms": at(0.50), "p90_ms": at(0.90), "p99_ms": at(0.99), "max_ms": at(1.0)})
}

/// A `/proc/<pid>/status` field in KiB (`VmRSS:`, `VmHWM:`).
pub(crate) fn status_kib(pid: u32, field: &str) -> Option<u64> {
    status_field(pid, field)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// A field of `/proc/<pid>/status` (`VmRSS:`, `Cpus_allowed_list:`), its value trimmed.
pub(crate) fn status_field(pid: u32, field: &str) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix(field))?;
    Some(line.trim().to_owned())
}

/// User plus system CPU time of a process (`self` or a pid), from `/proc/<pid>/stat`.
pub(crate) fn cpu_time(pid: &str) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold anything.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, in USER_HZ (100 on Linux).
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// CPU time used by this process and (when known) the server over a stretch of wall time.
pub(crate) struct CpuWatch {
    start: Instant,
    driver: Option<Duration>,
    server: Option<(u32, Duration)>,
}

impl CpuWatch {
    pub(crate) fn start(server_pid: Option<u32>) -> CpuWatch {
        CpuWatch {
            start: Instant::now(),
            driver: cpu_time("self"),
            server: server_pid.and_then(|p| Some((p, cpu_time(&p.to_string())?))),
        }
    }

    /// `{"wall_s", "driver_cpu_s", "server_cpu_s"}` since the start.
    pub(crate) fn stop(&self) -> Value {
        let wall = self.start.elapsed();
        let mut v = json!({"wall_s": wall.as_secs_f64()});
        if let (Some(before), Some(now)) = (self.driver, cpu_time("self")) {
            v["driver_cpu_s"] = json!(now.saturating_sub(before).as_secs_f64());
        }
        let server = self
            .server
            .and_then(|(pid, before)| Some(cpu_time(&pid.to_string())?.saturating_sub(before)));
        if let Some(used) = server {
            v["server_cpu_s"] = json!(used.as_secs_f64());
        }
        v
    }
}

/// A spinner on stderr (terminals only) showing answers so far and the rate, until dropped.
pub(crate) struct Ticker(
    Option<tokio::task::JoinHandle<()>>,
    Option<indicatif::ProgressBar>,
);

impl Ticker {
    pub(crate) fn start(phase: &str) -> Self {
        DONE.store(0, Ordering::Relaxed);
        if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            return Ticker(None, None);
        }
        let bar = indicatif::ProgressBar::new_spinner();
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
        {
            bar.set_style(style);
        }
        let b = bar.clone();
        let phase = phase.to_owned();
        let start = Instant::now();
        let task = tokio::spawn(async move {
            loop {
                let n = DONE.load(Ordering::Relaxed);
                b.set_message(format!(
                    "{phase}: {n} answers, {:.0}/s",
                    rate(n as u64, start.elapsed())
                ));
                b.tick();
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        Ticker(Some(task), Some(bar))
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        if let Some(t) = self.0.take() {
            t.abort();
        }
        if let Some(b) = self.1.take() {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_cpu_time_is_readable() {
        assert!(cpu_time("self").is_some());
        let p = percentiles(vec![Duration::from_millis(2), Duration::from_millis(1)]);
        assert_eq!(p["p50_ms"], 2.0);
        assert_eq!(p["max_ms"], 2.0);
    }
}
