#!/usr/bin/env python3
"""Transport and encoding figures: calls/s at 1 and 64 connections over Streamable HTTP,
WebSocket and gRPC, and the bytes on the wire and calls/s of JSON against protobuf with
`echo` and with a 1 MiB binary resource (demo://payload/1048576).

Every figure comes from `oxmcp-bench`, which checks each answer: for echo, the id and the
echoed text (every call sends its own message); for the resource, contents identical to the
first read's. The echo calls/s are driven by its raw driver (its own HTTP/1.1, WebSocket
frames, and gRPC messages on h2: far cheaper per call than a server), the JSON/protobuf
figures by the SDK's Client (`--driver client`); the driver's share of its core is printed
beside each echo figure. A figure with errors is printed as its error count, never as a
rate, and the script exits 1. Bytes come from a separate `--wire` run (a counting TCP relay;
connection setup excluded), so the relay never slows a rate.

Same run, same shape: the floors (crates/oxmcp-bench/examples: bare_http.rs, bare_ws.rs,
bare_grpc.rs: one JSON-RPC answer per message, no MCP machinery) and rmcp's echo server
(Streamable HTTP only; rmcp has no WebSocket or gRPC transport), for ratios. Servers on core 0, the driver on core 1
(taskset). Arguments: seconds per figure (default 5). Environment: ROUNDS (default 3; each
cell is the median).
"""

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time

SECS = sys.argv[1] if len(sys.argv) > 1 else "5"
ROUNDS = int(os.environ.get("ROUNDS", "3"))
MCP = "target/release/oxmcp"
BENCH = "target/release/oxmcp-bench"
PIN = shutil.which("taskset") is not None and (os.cpu_count() or 1) >= 2
SERVER_CPU = ["taskset", "-c", "0"] if PIN else []
DRIVER_CPU = ["taskset", "-c", "1"] if PIN else []
MIB = "demo://payload/1048576"
failed = []


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port):
    for _ in range(400):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {port}")


class Server:
    def __init__(self, cmd):
        self.port = free_port()
        addr = f"127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(SERVER_CPU + [c.replace("{addr}", addr) for c in cmd],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port)

    def url(self, transport):
        return {"http": f"http://127.0.0.1:{self.port}/mcp",
                "ws": f"ws://127.0.0.1:{self.port}/ws",
                "grpc": f"grpc://127.0.0.1:{self.port}"}[transport]

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def bench(url, label, clients=1, encoding="json", read=None, wire=False, driver="client"):
    """The report of one `oxmcp-bench` run (None if it had no report)."""
    args = DRIVER_CPU + [BENCH, "--json", url, "--driver", driver,
                         "--clients", str(clients), "--encoding", encoding]
    if clients == 1 and driver == "client":
        args += ["--mode", "sequential"]
    if wire:
        args += ["--wire", "--requests", "20" if read else "500"]
    else:
        args += ["--duration", f"{SECS}s"]
    if read:
        args += ["--read", read]
    out = subprocess.run(args, capture_output=True, text=True)
    try:
        report = json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        failed.append(label)
        print(f"   {label}: no report: {out.stderr.strip()[:300]}", file=sys.stderr)
        return None
    if out.returncode != 0 or report["errors"]:
        failed.append(label)
    return report


def rate(report):
    """(calls/s, errors, the driver's share of its core) of a report's timed phase."""
    if report is None:
        return None
    phases = report["phases"]
    (phase,) = [phases["calls"]] if "calls" in phases else phases.values()
    cpu = report.get("cpu") or {}
    share = cpu["driver_cpu_s"] / cpu["wall_s"] if cpu.get("wall_s") else None
    return (phase.get("calls_per_sec", 0.0), phase["errors"], share)


def median_cell(runs):
    runs = [r for r in runs if r]
    if not runs:
        return None
    errors = sum(r[1] for r in runs)
    shares = [r[2] for r in runs if r[2] is not None]
    share = statistics.median(shares) if shares else None
    return (statistics.median(r[0] for r in runs), errors, share)


def driver_share(cell):
    return f"{cell[2]:.0%}" if cell and cell[2] is not None else "–"


def show(cell):
    if cell is None:
        return "failed", ""
    value, errors = cell[0], cell[1]
    return (f"{value:,.0f}" if errors == 0 else f"{errors} errors"), str(errors)


def ratio(a, b):
    if not a or not b or a[1] or b[1]:
        return "–"
    return f"{a[0] / b[0]:.2f}x"


FLOORS = {
    "http": ["target/release/examples/bare_http", "{addr}"],
    "ws": ["target/release/examples/bare_ws", "{addr}"],
    "grpc": ["target/release/examples/bare_grpc", "{addr}"],
}
RMCP = ["bench/compare/target/release/examples/rmcp_echo", "--listen", "{addr}"]
TRANSPORTS = ("http", "ws", "grpc")
# The driver of each transport's echo figures: the raw one where there is one.
DRIVERS = {"http": "raw", "ws": "raw", "grpc": "raw"}
CONNECTIONS = (1, 64)


def transports_round(cells):
    ours = Server([MCP, "serve", "--listen", "{addr}"])
    for t in TRANSPORTS:
        for n in CONNECTIONS:
            report = bench(ours.url(t), f"oxmcp serve {t} x{n}", n, driver=DRIVERS[t])
            cells[("ours", t, n)].append(rate(report))
    ours.stop()
    for t, cmd in FLOORS.items():
        floor = Server(cmd)
        for n in CONNECTIONS:
            report = bench(floor.url(t), f"floor {t} x{n}", n, driver=DRIVERS[t])
            cells[("floor", t, n)].append(rate(report))
        floor.stop()
    rmcp = Server(RMCP)
    for n in CONNECTIONS:
        report = bench(rmcp.url("http"), f"rmcp x{n}", n, driver=DRIVERS["http"])
        cells[("rmcp", "http", n)].append(rate(report))
    rmcp.stop()


ENCODED = [(t, e) for t in ("http", "grpc") for e in ("json", "protobuf")] + [("ws", "json")]
PAYLOADS = (("echo", None), ("1 MiB resource", MIB))


def encodings_round(cells):
    ours = Server([MCP, "serve", "--listen", "{addr}"])
    for t, e in ENCODED:
        for name, read in PAYLOADS:
            label = f"{t} {e} {name}"
            cells[(t, e, name)].append(rate(bench(ours.url(t), label, 1, e, read)))
    ours.stop()


def wire_bytes():
    ours = Server([MCP, "serve", "--listen", "{addr}"])
    sizes = {}
    for t, e in ENCODED:
        for name, read in PAYLOADS:
            report = bench(ours.url(t), f"wire {t} {e} {name}", 1, e, read, wire=True)
            w = report.get("wire") if report else None
            sizes[(t, e, name)] = (w["sent_per_call"], w["received_per_call"]) if w else None
    ours.stop()
    return sizes


def main():
    cells = {}
    for key in [("ours", t, n) for t in TRANSPORTS for n in CONNECTIONS] + \
               [("floor", t, n) for t in TRANSPORTS for n in CONNECTIONS] + \
               [("rmcp", "http", n) for n in CONNECTIONS] + \
               [(t, e, name) for t, e in ENCODED for name, _ in PAYLOADS]:
        cells[key] = []
    for r in range(ROUNDS):
        transports_round(cells)
        encodings_round(cells)
        print(f"round {r + 1}/{ROUNDS} done", file=sys.stderr)
    sizes = wire_bytes()
    med = {k: median_cell(v) for k, v in cells.items()}
    print(f"{SECS}s per figure, median of {ROUNDS} rounds; every answer checked; 2025-11-25 "
          f"sessions; drivers: {DRIVERS} (raw: `oxmcp-bench --driver raw`)")
    print("servers on core 0, driver on core 1" if PIN else "unpinned")
    print()
    print("## echo, calls/s by transport (the driver's share of its core in brackets)")
    print("| transport | connections | oxmcp serve | errors | floor | vs floor | rmcp | vs rmcp |")
    print("|---|---|---|---|---|---|---|---|")
    for t in TRANSPORTS:
        for n in CONNECTIONS:
            ours, floor = med[("ours", t, n)], med[("floor", t, n)]
            rmcp = med.get(("rmcp", t, n))
            shown, errors = show(ours)
            rm = f"{show(rmcp)[0]} ({driver_share(rmcp)})" if t == "http" else "no transport"
            print(f"| {t} | {n} | {shown} ({driver_share(ours)}) | {errors} "
                  f"| {show(floor)[0]} ({driver_share(floor)}) | {ratio(ours, floor)} "
                  f"| {rm} | {ratio(ours, rmcp) if t == 'http' else '–'} |")
    print()
    print("## JSON against protobuf (oxmcp serve, 1 connection, sequential)")
    print("| transport | encoding | payload | calls/s | errors | bytes/call sent | bytes/call received |")
    print("|---|---|---|---|---|---|---|")
    for t, e in ENCODED:
        for name, _ in PAYLOADS:
            shown, errors = show(med[(t, e, name)])
            size = sizes.get((t, e, name))
            sent, received = (f"{size[0]:,.0f}", f"{size[1]:,.0f}") if size else ("–", "–")
            print(f"| {t} | {e} | {name} | {shown} | {errors} | {sent} | {received} |")
    if failed:
        print(f"figures with errors: {failed}", file=sys.stderr)
        sys.exit(1)


main()
