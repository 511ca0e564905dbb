#!/usr/bin/env python3
"""The server's own CPU time per call, beside its calls/s: a steadier figure than calls/s
alone when two builds or flags differ by a few per cent. Each server runs pinned to core 0,
the driver (oxmcp-bench, which checks every answer) to core 1; servers take turns, the order
flipping each round; the server's utime+stime is read from /proc around each run.

Usage: python3 scripts/bench_cpu_per_call.py ROUNDS 'label:command with {addr}' ...
  e.g. python3 scripts/bench_cpu_per_call.py 10 \\
         'on:target/release/oxmcp serve --listen {addr}' \\
         'off:target/release/oxmcp serve --listen {addr} --no-metrics'
Environment: SHAPE (oxmcp-bench arguments, default "--clients 64"), SECS (default 4).
Prints per label the median calls/s, the median server CPU in microseconds per call, and
every round as (calls/s, us/call, errors)."""
import os
import shlex
import sys

sys.path.insert(0, "scripts")
import bench_table as bt  # noqa: E402  the servers' and the driver's pinning, the driver's runs

rounds = int(sys.argv[1])
configs = [a.split(":", 1) for a in sys.argv[2:]]
shape = shlex.split(os.environ.get("SHAPE", "--clients 64"))
secs = os.environ.get("SECS", "4")
bt.SERVERS.clear()
bt.SERVERS.update({label: (shlex.split(cmd), []) for label, cmd in configs})


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


results = {label: [] for label, _ in configs}
for r in range(rounds):
    for label, _ in (configs if r % 2 == 0 else configs[::-1]):
        with bt.Http(label) as server:
            before = cpu_seconds(server.proc.pid)
            report = bt.bench([server.url, "--duration", secs + "s"] + shape, label)
            after = cpu_seconds(server.proc.pid)
        if report is None:
            continue
        calls = report["phases"]["calls"]
        ok = calls.get("ok") or 0
        results[label].append((calls.get("calls_per_sec") or 0,
                               (after - before) * 1e6 / max(ok, 1), calls.get("errors")))


def median(xs):
    return sorted(xs)[len(xs) // 2] if xs else float("nan")


for label, runs in results.items():
    print(label, "calls/s", round(median([x[0] for x in runs])),
          "server_cpu_us/call", round(median([x[1] for x in runs]), 2),
          "rounds", [(round(a), round(b, 2), e) for a, b, e in runs])
print("errors:", bt.failed or "none")
sys.exit(1 if bt.failed else 0)
