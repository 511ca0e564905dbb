#!/usr/bin/env python3
"""Scale-out figures: `oxmcp serve` with the Redis store (1, 2 and 3 instances) and the
PostgreSQL store (1 and 3 instances), against one instance without a store, in both eras;
store round trips per call; memory per idle session in Redis.

Every figure comes from `oxmcp-bench` (raw driver, 64 connections), which checks each answer
(status, id and the echoed text: every call sends its own message). A figure with errors is
printed as its error count, never as a rate, and the script exits 1. With several instances,
each connection's calls go to the instances in turn (`--also`), so a session opened on one is
used on all of them (each instance restores it, then asks the store once per lease,
`--store-lease`; the "lease 0" row asks on every call, as before leases). The servers and
the store (Redis, or PostgreSQL with its default durability) share core 0 and
the driver has core 1 (taskset): on two cores, more instances add no CPU, so the figures give
the per-call cost of the store, not a scaling claim.

Also in the same run, in the same shape: the floor (crates/oxmcp-bench/examples/bare_http.rs,
no MCP machinery) and rmcp's echo server (bench/compare), for ratios.

Needs redis-server, PostgreSQL's initdb and pg_ctl (Debian's postgresql package; run as
the `postgres` user when we are root) and a release build (scripts/bench-scale.sh builds it, and bench/compare's
rmcp example). Arguments: seconds
per figure (default 5). Environment: ROUNDS (default 3; each cell is the median), IDLE
(default 1000 sessions).
"""

import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

SECS = sys.argv[1] if len(sys.argv) > 1 else "5"
ROUNDS = int(os.environ.get("ROUNDS", "3"))
IDLE = int(os.environ.get("IDLE", "1000"))
MCP = "target/release/oxmcp"
BENCH = "target/release/oxmcp-bench"
PIN = shutil.which("taskset") is not None and (os.cpu_count() or 1) >= 2
SERVER_CPU = ["taskset", "-c", "0"] if PIN else []
DRIVER_CPU = ["taskset", "-c", "1"] if PIN else []
failed = []


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_http(url):
    for _ in range(200):
        try:
            urllib.request.urlopen(url, timeout=1)
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.05)
            continue
        return
    raise SystemExit(f"no answer from {url}")


class Redis:
    def __init__(self):
        self.port = free_port()
        self.proc = subprocess.Popen(
            SERVER_CPU + ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port),
                          "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            if self.cli("PING") == "PONG":
                return
            time.sleep(0.05)
        raise SystemExit("redis-server did not start")

    def url(self):
        return f"redis://127.0.0.1:{self.port}"

    def cli(self, *args):
        out = subprocess.run(["redis-cli", "-p", str(self.port), *args],
                             capture_output=True, text=True)
        return out.stdout.strip()

    def used_memory(self):
        info = self.cli("INFO", "memory")
        return int(re.search(r"used_memory:(\d+)", info).group(1))

    def stop(self):
        self.proc.kill()
        self.proc.wait()


class Postgres:
    """A private cluster: initdb into a temporary directory, pg_ctl on a free port (TCP only,
    trust authentication, the default durability), on the servers' core."""

    def __init__(self):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="bench-pg-")
        versions = sorted(
            (d for d in os.listdir("/usr/lib/postgresql")
             if os.path.exists(f"/usr/lib/postgresql/{d}/bin/initdb")),
            key=lambda v: int(v) if v.isdigit() else 0) if os.path.isdir("/usr/lib/postgresql") else []
        self.bin = f"/usr/lib/postgresql/{versions[-1]}/bin" if versions else os.path.dirname(
            shutil.which("initdb") or "/usr/bin/initdb")
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self.as_user:
            subprocess.run(["chown", "postgres:", self.dir], check=True)
        self.data = f"{self.dir}/data"
        subprocess.run(self.as_user + [f"{self.bin}/initdb", "-D", self.data, "-A", "trust",
                                       "-U", "postgres", "-E", "UTF8", "--no-sync"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        options = (f"-p {self.port} -c listen_addresses=127.0.0.1 "
                   "-c unix_socket_directories='' -c max_connections=200")
        subprocess.run(SERVER_CPU + self.as_user + [
            f"{self.bin}/pg_ctl", "-D", self.data, "-l", f"{self.dir}/log", "-w", "-o", options,
            "start"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def url(self):
        return f"postgres://postgres@127.0.0.1:{self.port}/postgres?sslmode=disable"

    def stop(self):
        subprocess.run(self.as_user + [f"{self.bin}/pg_ctl", "-D", self.data, "-m", "immediate",
                                       "-w", "stop"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(self.dir, ignore_errors=True)


class Instance:
    def __init__(self, store, name, extra=()):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        args = [MCP, "serve", "--listen", f"127.0.0.1:{self.port}"]
        if store:
            args += ["--store", store, "--instance-id", name, *extra]
        self.proc = subprocess.Popen(SERVER_CPU + args, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        wait_http(self.url)

    def stop(self):
        """Stops it; the store round trips it reported (None without a store)."""
        self.proc.terminate()
        _, err = self.proc.communicate(timeout=30)
        m = re.search(r"\((\d+) round trips to the store\)", err)
        return int(m.group(1)) if m else None


def bench(urls, era, label):
    args = DRIVER_CPU + [BENCH, "--json", urls[0], "--clients", "64",
                         "--duration", f"{SECS}s", "--era", era]
    for u in urls[1:]:
        args += ["--also", u]
    out = subprocess.run(args, capture_output=True, text=True)
    try:
        report = json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        failed.append(label)
        print(f"   {label}: no report: {out.stderr.strip()[:300]}")
        return None
    if out.returncode != 0 or report["errors"]:
        failed.append(label)
    return report


def one(era, instances, store):
    """One figure: (calls/s, errors, p50 ms, p99 ms, round trips per call). `store`: False
    (none), True (Redis), "ask" (Redis, `--store-lease 0`: the store asked on every call) or
    "postgres"."""
    redis = (Postgres() if store == "postgres" else Redis()) if store else None
    extra = ["--store-lease", "0"] if store == "ask" else []
    running = [Instance(redis.url() if redis else None, f"i{i}", extra)
               for i in range(instances)]
    label = f"{era}, {instances} instance(s), {STORES[store]}"
    report = bench([i.url for i in running], era, label)
    trips = [i.stop() for i in running]
    if redis:
        redis.stop()
    if report is None:
        return None
    calls = report["phases"]["calls"]
    rt = sum(t for t in trips if t) / max(calls["calls"], 1) if store else 0.0
    return (calls["calls_per_sec"], calls["errors"], calls["latency"]["p50_ms"],
            calls["latency"]["p99_ms"], rt)


def open_session(url):
    """initialize + notifications/initialized; the session id."""
    init = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}}).encode()
    headers = {"content-type": "application/json",
               "accept": "application/json, text/event-stream"}
    with urllib.request.urlopen(urllib.request.Request(url, init, headers)) as r:
        sid = r.headers["mcp-session-id"]
        answer = json.loads(r.read())
    if "result" not in answer:
        raise SystemExit(f"initialize failed: {answer}")
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    headers.update({"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"})
    with urllib.request.urlopen(urllib.request.Request(url, note, headers)) as r:
        if r.status != 202:
            raise SystemExit(f"initialized: {r.status}")
    return sid


def reference(cmd, label):
    """calls/s of a reference server (the floor, rmcp's echo) in the same shape: legacy era,
    64 connections, on the servers' core."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    if not os.path.exists(cmd[0]):
        print(f"   {label}: {cmd[0]} not built, skipped", file=sys.stderr)
        return None
    proc = subprocess.Popen(SERVER_CPU + [c.replace("{addr}", f"127.0.0.1:{port}") for c in cmd],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_http(url)
    report = bench([url], "legacy", label)
    proc.kill()
    proc.wait()
    if report is None:
        return None
    calls = report["phases"]["calls"]
    return (calls["calls_per_sec"], calls["errors"], calls["latency"]["p50_ms"],
            calls["latency"]["p99_ms"], 0.0)


REFERENCES = {
    "floor (bare_http)": ["target/release/examples/bare_http", "{addr}"],
    "rmcp echo": ["bench/compare/target/release/examples/rmcp_echo", "--listen", "{addr}"],
}


def idle_memory():
    """Redis memory per idle session: used_memory with IDLE sessions open, minus before."""
    redis = Redis()
    inst = Instance(redis.url(), "idle")
    open_session(inst.url)  # the first one makes the shared key and the bus
    before = redis.used_memory()
    for _ in range(IDLE):
        open_session(inst.url)
    after = redis.used_memory()
    keys = redis.cli("--scan", "--pattern", "mcp:*:sess").splitlines()
    one_key = sum(int(redis.cli("MEMORY", "USAGE", k.replace(":sess", f":{what}")) or 0)
                  for k in keys[:1] for what in ("sess", "seq"))
    inst.stop()
    redis.stop()
    return (after - before) / IDLE, len(keys), one_key


STORES = {False: "none", True: "redis", "ask": "redis, lease 0", "postgres": "postgres"}


def main():
    shapes = [(era, n, store) for era in ("legacy", "modern")
              for (n, store) in ((1, False), (1, True), (1, "ask"), (2, True), (3, True),
                                 (1, "postgres"), (3, "postgres"))]
    results = {s: [] for s in shapes}
    refs = {name: [] for name in REFERENCES}
    for r in range(ROUNDS):
        for name, cmd in REFERENCES.items():
            refs[name].append(reference(cmd, name))
        for s in shapes:
            results[s].append(one(*s))
        print(f"round {r + 1}/{ROUNDS} done", file=sys.stderr)
    print(f"64 connections, {SECS}s per figure, median of {ROUNDS} rounds; every answer checked")
    print("servers and the store on core 0, driver on core 1" if PIN else "unpinned")
    print()
    print("| era | instances | store | calls/s | vs 1 without | errors | p50 ms | p99 ms | round trips/call |")
    print("|---|---|---|---|---|---|---|---|---|")
    for era in ("legacy", "modern"):
        base = None
        for (e, n, store) in shapes:
            if e != era:
                continue
            runs = [x for x in results[(e, n, store)] if x]
            if not runs:
                print(f"| {era} | {n} | {STORES[store]} | failed | | | | | |")
                continue
            errors = sum(x[1] for x in runs)
            med = lambda i: statistics.median(x[i] for x in runs)
            rate = med(0)
            if base is None:
                base = rate
            shown = f"{rate:,.0f}" if errors == 0 else f"{errors} errors"
            print(f"| {era} | {n} | {STORES[store]} | {shown} | {rate / base:.2f}x "
                  f"| {errors} | {med(2):.2f} | {med(3):.2f} | {med(4):.2f} |")
    print()
    print("Same shape (2025-11-25, 64 connections), same run: `oxmcp serve` with and without the store, against the floor and rmcp")
    print("| server | calls/s | errors | store none / ratio | redis, 1 instance / ratio | postgres, 1 instance / ratio |")
    print("|---|---|---|---|---|---|")
    ours = {store: statistics.median([x[0] for x in results[("legacy", 1, store)] if x] or [0])
            for store in (False, True, "postgres")}
    for name in REFERENCES:
        runs = [x for x in refs[name] if x]
        if not runs:
            print(f"| {name} | not run | | | | |")
            continue
        errors = sum(x[1] for x in runs)
        rate = statistics.median(x[0] for x in runs)
        print(f"| {name} | {rate:,.0f} | {errors} | {ours[False] / rate:.2f}x "
              f"| {ours[True] / rate:.2f}x | {ours['postgres'] / rate:.2f}x |")
    mem = idle_memory()
    if mem:
        per, sessions, key = mem
        print()
        print(f"Redis memory per idle session: {per:,.0f} bytes (used_memory over {IDLE} open "
              f"sessions; {sessions} session hashes held; MEMORY USAGE of one session's keys: "
              f"{key} bytes)")
    if failed:
        print(f"figures with errors: {failed}", file=sys.stderr)
        sys.exit(1)


main()
