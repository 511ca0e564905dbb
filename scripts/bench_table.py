#!/usr/bin/env python3
"""One run of every figure of the performance table: the floor, our SDK's echo server,
`oxmcp serve` (the CLI's demo server) and rmcp's echo server, side by side.

Every figure comes from `oxmcp-bench`, which checks each answer (status, id, and the echoed
text: each call sends its own message). A figure with errors is printed as its error count,
never as a rate, and the script exits 1. With two or more cores the server runs pinned to
core 0 and the driver to core 1 (taskset), so neither takes the other's core.

Run by scripts/bench-http.sh, which builds the binaries first. Arguments: seconds per HTTP
figure (default 5). Environment: ROUNDS (default 3: every server is measured once per round,
in turn, and each cell is the median of its rounds), STDIO_CALLS (sequential stdio calls,
default 20000), STDIO_PIPELINED (pipelined stdio calls, default 100000), STARTS (default 50),
IDLE (default 1000 sessions).
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

SECS = sys.argv[1] if len(sys.argv) > 1 else "5"
STDIO_CALLS = os.environ.get("STDIO_CALLS", "20000")
STDIO_PIPELINED = os.environ.get("STDIO_PIPELINED", "100000")
STARTS = os.environ.get("STARTS", "50")
IDLE = os.environ.get("IDLE", "1000")
ROUNDS = int(os.environ.get("ROUNDS", "3"))
MCP = "target/release/oxmcp"
BENCH = "target/release/oxmcp-bench"
CMP = "bench/compare/target/release/examples"
PIN = shutil.which("taskset") is not None and (os.cpu_count() or 1) >= 2
SERVER_CPU = ["taskset", "-c", "0"] if PIN else []
DRIVER_CPU = ["taskset", "-c", "1"] if PIN else []

# name -> (HTTP server command with {addr}, stdio server command)
SERVERS = {
    "floor": ([ "target/release/examples/bare_http", "{addr}"],
              ["target/release/examples/bare_echo"]),
    "ours": ([f"{CMP}/ours_echo", "--listen", "{addr}"], [f"{CMP}/ours_echo", "--stdio"]),
    "oxmcp serve": ([MCP, "serve", "--listen", "{addr}"], [MCP, "serve", "--stdio"]),
    "rmcp": ([f"{CMP}/rmcp_echo", "--listen", "{addr}"], [f"{CMP}/rmcp_echo", "--stdio"]),
}
failed = []


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def bench(args, label):
    """Runs `oxmcp-bench --json ARGS` on the driver's core; returns its report, or None."""
    out = subprocess.run(DRIVER_CPU + [BENCH, "--json"] + args,
                         capture_output=True, text=True)
    try:
        report = json.loads(out.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        failed.append(f"{label}: no report ({out.stderr.strip()[-200:]})")
        return None
    if report.get("errors", 0):
        failed.append(f"{label}: {report['errors']} errors")
    return report


class Http:
    """An HTTP server on the server's core, for the duration of a `with`."""

    def __init__(self, name):
        self.port = free_port()
        cmd = [a.replace("{addr}", f"127.0.0.1:{self.port}") for a in SERVERS[name][0]]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.proc = subprocess.Popen(SERVER_CPU + cmd, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)

    def __enter__(self):
        for _ in range(200):
            try:
                urllib.request.urlopen(self.url, timeout=1)
                return self
            except urllib.error.HTTPError:
                return self  # it answers (405 or 400 for a bare GET)
            except OSError:
                time.sleep(0.05)
        raise SystemExit(f"server did not start: {self.url}")

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait()


def rate(report, phase):
    if report is None:
        return "no report"
    p = report["phases"].get(phase, {})
    if p.get("errors"):
        return f"{p['errors']} errors"
    return p.get("calls_per_sec")


def http_figures(name):
    figs = {}
    shapes = {
        "http_each": ["--clients", "64"],
        "http_shared": ["--clients", "64", "--session", "shared"],
        "http_one": ["--clients", "1"],
        "http_modern": ["--clients", "64", "--era", "modern"],
    }
    with Http(name) as s:
        for key, shape in shapes.items():
            if name == "floor" and key == "http_shared":
                continue  # no sessions: the same as a session each
            if name == "rmcp" and key == "http_modern":
                continue  # rmcp does not speak 2026-07-28
            r = bench([s.url, "--duration", f"{SECS}s", "--server-pid", str(s.proc.pid)] + shape,
                      f"{name} {key}")
            figs[key] = rate(r, "calls")
            if r:
                figs[key + "_driver_cpu"] = r["cpu"].get("driver_cpu_s", 0) / max(
                    r["cpu"].get("wall_s", 1), 1e-9)
    if name == "floor":
        figs["http_shared"] = figs["http_each"]
        figs["http_shared_driver_cpu"] = figs.get("http_each_driver_cpu")
        return figs
    with Http(name) as s:
        r = bench([s.url, "--idle-sessions", IDLE, "--server-pid", str(s.proc.pid)],
                  f"{name} idle sessions")
        if r:
            figs["idle"] = r.get("session_only", {}).get("bytes_per_session")
            figs["idle_more"] = r.get("session_only", {}).get("bytes_per_further_session")
    return figs


def stdio_figures(name):
    cmd = SERVER_CPU + SERVERS[name][1]
    figs = {}
    # The raw stdio driver: requests written together, answers compared by their bytes (the
    # SDK's Client spends about as much per call as a fast server). Each phase on its own
    # run, so that the driver's CPU share is that of the phase.
    r = bench(["--driver", "raw", "--mode", "sequential", "--requests", STDIO_CALLS, "--"] + cmd,
              f"{name} stdio sequential")
    figs["stdio_seq"] = rate(r, "sequential")
    r = bench(["--driver", "raw", "--pipeline", "--window", "1024", "--requests", STDIO_PIPELINED,
               "--"] + cmd, f"{name} stdio pipelined")
    figs["stdio_pipe"] = rate(r, "pipelined")
    if r:
        figs["stdio_rss"] = r.get("server_peak_rss_kib")
        figs["stdio_pipe_driver_cpu"] = r["cpu"].get("driver_cpu_s", 0) / max(
            r["cpu"].get("wall_s", 1), 1e-9)
    # The driver pins the server itself (--server-cpu): through `taskset -c 0 SERVER`, every
    # start would time taskset's own exec too (about 1.1 ms here, more than the floor's start).
    pin = ["--server-cpu", "0"] if PIN else []
    r = bench(["--cold-start", STARTS] + pin + ["--"] + SERVERS[name][1],
              f"{name} cold start")
    if r and not r.get("errors"):
        figs["cold"] = r["spawn_to_initialize"]["p50_ms"]
        figs["first_rss"] = r["rss_after_first_call_kib"]["median"]
        figs["first_anon"] = r["rss_anon_after_first_call_kib"]["median"]
    return figs


def fmt(v, unit=""):
    if v is None:
        return "—"
    if isinstance(v, str):
        return v
    if unit == "ms":
        return f"{v:.2f} ms"
    if unit == "kib":
        return f"{v / 1024:.1f} MB"
    if unit == "bytes":
        return f"{v / 1024:.1f} KiB"
    return f"{v / 1000:.1f}k"


def ratio(a, b):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b:
        return f"{a / b:.2f}x"
    return "—"


def median(values):
    """The median of a cell's rounds; any round with errors makes the cell that error."""
    bad = [v for v in values if isinstance(v, str)]
    if bad:
        return bad[0]
    nums = sorted(v for v in values if v is not None)
    return nums[len(nums) // 2] if nums else None


# The performance targets this table measures: (what, server, figure, compared with, how,
# goal). "floor" and "rmcp" compare with that server's same figure; None compares with the
# goal itself (in the figure's own unit). WebSocket, gRPC, Redis and protobuf have targets too,
# measured by scripts/bench_transports.py and scripts/bench_scale.py.
TARGETS = [
    ("HTTP, 64 connections, a session each", "ours", "http_each", "floor", ">=", 0.6),
    ("HTTP, 64 connections, a session each", "oxmcp serve", "http_each", "floor", ">=", 0.6),
    ("HTTP, 64 connections, a session each", "ours", "http_each", "rmcp", ">=", 4.0),
    ("HTTP, 64 connections, a session each", "oxmcp serve", "http_each", "rmcp", ">=", 4.0),
    ("HTTP, 64 connections in one session", "ours", "http_shared", "floor", ">=", 0.6),
    ("HTTP, 64 connections in one session", "oxmcp serve", "http_shared", "floor", ">=", 0.6),
    ("HTTP, 64 connections in one session", "ours", "http_shared", "rmcp", ">=", 4.0),
    ("HTTP, 64 connections in one session", "oxmcp serve", "http_shared", "rmcp", ">=", 4.0),
    ("HTTP, 64 connections, 2026-07-28", "ours", "http_modern", "floor", ">=", 0.6),
    ("HTTP, 64 connections, 2026-07-28", "oxmcp serve", "http_modern", "floor", ">=", 0.6),
    ("HTTP, 1 connection", "ours", "http_one", "floor", ">=", 0.95),
    ("HTTP, 1 connection", "oxmcp serve", "http_one", "floor", ">=", 0.95),
    ("cold start", "ours", "cold", "floor", "<=", 1.1),
    ("cold start", "oxmcp serve", "cold", "floor", "<=", 1.3),
    ("RSS after the first call", "oxmcp serve", "first_rss", None, "<=", 8 * 1024),
    ("stdio pipelined", "oxmcp serve", "stdio_pipe", "rmcp", ">=", 12.0),
    ("stdio peak RSS", "oxmcp serve", "stdio_rss", None, "<=", 12 * 1024),
    ("memory per idle HTTP session", "ours", "idle", None, "<=", 4096),
    ("memory per idle HTTP session", "oxmcp serve", "idle", None, "<=", 4096),
    ("memory per further idle HTTP session", "ours", "idle_more", None, "<=", 4096),
    ("memory per further idle HTTP session", "oxmcp serve", "idle_more", None, "<=", 4096),
]


def targets(f):
    """Prints each target beside this run's figure, and whether the run met it."""
    units = {"first_rss": "kib", "stdio_rss": "kib", "idle": "bytes", "idle_more": "bytes",
             "cold": "ms"}
    print("\nThe targets this table measures, against this run's medians. Beside a ratio "
          "against the floor, what the driver could have driven against this server's rate: "
          "the floor's rate over the driver's share of its core while it drove the floor "
          "(at least 2x, or the driver may have been this server's limit); beside a ratio "
          "against rmcp over HTTP, the floor's own.\n")
    print("| target | server | goal | this run | met |")
    print("|---|---|---:|---:|:---:|")
    for what, name, key, against, how, goal in TARGETS:
        value = f[name].get(key)
        if against is None:
            measured, unit = value, units.get(key, "")
            shown = fmt(value, unit)
            goal_shown = f"{how} {fmt(goal, unit)}"
        else:
            base = f[against].get(key)
            measured = (value / base if isinstance(value, (int, float))
                        and isinstance(base, (int, float)) and base else None)
            shown = (f"{measured:.2f}x" if measured is not None
                     else f"{fmt(value, units.get(key, ''))} (no ratio: {fmt(base)})")
            goal_shown = f"{how} {goal}x {'the floor' if against == 'floor' else against}"
            share = f[against].get(key + "_driver_cpu")
            if against == "floor" and measured and isinstance(share, float) and share > 0:
                shown += f" (driver {base / share / value:.1f}x)"
            own_share = f[name].get(key + "_driver_cpu")
            if key == "stdio_pipe" and isinstance(own_share, float):
                shown += f" (driver {100 * own_share:.0f}% of its core)"
            floor = f["floor"].get(key)
            if against == "rmcp" and key.startswith("http_") and isinstance(floor, (int, float)) \
                    and isinstance(base, (int, float)) and base:
                shown += f" (the floor {floor / base:.2f}x)"
        if not isinstance(measured, (int, float)):
            met = "—"
        else:
            met = "yes" if (measured >= goal if how == ">=" else measured <= goal) else "no"
        print(f"| {what} | {name} | {goal_shown} | {shown} | {met} |")


def main():
    rounds = {name: [] for name in SERVERS}
    for r in range(ROUNDS):
        for name in SERVERS:
            print(f"round {r + 1}/{ROUNDS}: {name} ...", file=sys.stderr)
            rounds[name].append({**http_figures(name), **stdio_figures(name)})
    figures = {
        name: {k: median([f.get(k) for f in fs]) for k in set().union(*fs)}
        for name, fs in rounds.items()
    }
    rows = [
        ("Streamable HTTP, 64 connections, a session each (calls/s)", "http_each", ""),
        ("Streamable HTTP, 64 connections in one session (calls/s)", "http_shared", ""),
        ("Streamable HTTP, 1 connection (calls/s)", "http_one", ""),
        ("Streamable HTTP, 64 connections, 2026-07-28 stateless (calls/s)", "http_modern", ""),
        ("stdio, sequential calls/s", "stdio_seq", ""),
        ("stdio, pipelined calls/s (window 1024)", "stdio_pipe", ""),
        ("stdio, peak RSS in those calls", "stdio_rss", "kib"),
        ("cold start, spawn to initialize answered (median)", "cold", "ms"),
        ("RSS after the first call (stdio, median)", "first_rss", "kib"),
        ("its anonymous part (RssAnon; the rest is the binary's pages)", "first_anon", "kib"),
        (f"memory per idle HTTP session ({IDLE} sessions, idle 8.5 s)", "idle", "bytes"),
        (f"memory per further idle HTTP session ({IDLE} more on top, idle as long)",
         "idle_more", "bytes"),
    ]
    f = figures
    print(f"Every answer checked; 0 errors in every figure unless a cell says otherwise. "
          f"{'Server on core 0, driver on core 1' if PIN else 'Server and driver unpinned'}; "
          f"HTTP figures {SECS} s each, stdio {STDIO_CALLS} sequential and {STDIO_PIPELINED} "
          f"pipelined calls, {STARTS} cold starts; "
          f"each cell the median of {ROUNDS} rounds, the servers taking turns.\n")
    print("| measurement | floor | ours (SDK echo) | `oxmcp serve` | rmcp | ours/floor | ours/rmcp "
          "| serve/floor | serve/rmcp |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, key, unit in rows:
        cells = [f[n].get(key) for n in SERVERS]
        print(f"| {label} | " + " | ".join(fmt(c, unit) for c in cells)
              + f" | {ratio(cells[1], cells[0])} | {ratio(cells[1], cells[3])}"
              + f" | {ratio(cells[2], cells[0])} | {ratio(cells[2], cells[3])} |")
    print("\nThe driver's share of its core in each HTTP figure and in pipelined stdio (median "
          "of the rounds). A figure "
          "counts only where the driver drove the floor at least twice as fast as the server "
          "measured, and was not near 100% itself.\n")
    print("| shape | " + " | ".join(SERVERS) + " | floor / fastest server |")
    print("|---|" + "---:|" * (len(SERVERS) + 1))
    for label, key, _ in rows:
        if not (key.startswith("http_") or key == "stdio_pipe"):
            continue
        shares = [f[n].get(key + "_driver_cpu") for n in SERVERS]
        rates = [f[n].get(key) for n in SERVERS]
        fastest = max((r for r in rates[1:] if isinstance(r, (int, float))), default=None)
        print(f"| {label.split(' (')[0]} | "
              + " | ".join(f"{100 * c:.0f}%" if isinstance(c, float) else "—" for c in shares)
              + f" | {ratio(rates[0], fastest)} |")
    targets(f)
    if failed:
        print("\nFigures with errors (no rate given):")
        for line in failed:
            print(f"   {line}")
        sys.exit(1)


if __name__ == "__main__":
    main()
