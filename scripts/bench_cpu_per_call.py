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
import json
import os
import shlex
import socket
import subprocess
import sys
import time

rounds = int(sys.argv[1])
configs = [a.split(":", 1) for a in sys.argv[2:]]
shape = shlex.split(os.environ.get("SHAPE", "--clients 64"))
secs = os.environ.get("SECS", "4")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


results = {label: [] for label, _ in configs}
for r in range(rounds):
    for label, cmd in (configs if r % 2 == 0 else configs[::-1]):
        port = free_port()
        addr = f"127.0.0.1:{port}"
        server = subprocess.Popen(["taskset", "-c", "0"] + shlex.split(cmd.format(addr=addr)),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        before = cpu_seconds(server.pid)
        out = subprocess.run(["taskset", "-c", "1", "target/release/oxmcp-bench", "--json",
                              f"http://{addr}/mcp", "--duration", secs + "s"] + shape,
                             capture_output=True, text=True)
        after = cpu_seconds(server.pid)
        server.terminate()
        server.wait()
        try:
            calls = json.loads(out.stdout)["phases"]["calls"]
        except (ValueError, KeyError):
            print(f"{label}: no report: {out.stderr[-300:]}", file=sys.stderr)
            continue
        ok = calls.get("ok") or 0
        results[label].append((calls.get("calls_per_sec") or 0,
                               (after - before) * 1e6 / max(ok, 1), calls.get("errors")))


def median(xs):
    return sorted(xs)[len(xs) // 2] if xs else float("nan")


for label, runs in results.items():
    print(label, "calls/s", round(median([x[0] for x in runs])),
          "server_cpu_us/call", round(median([x[1] for x in runs]), 2),
          "rounds", [(round(a), round(b, 2), e) for a, b, e in runs])
