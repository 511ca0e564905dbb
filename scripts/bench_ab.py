#!/usr/bin/env python3
"""Before/after figures of `oxmcp serve` in one interleaved run: the floor (bare hyper),
rmcp's echo server, and `oxmcp serve` BEFORE (a binary built from an older commit) and AFTER
(default target/release/oxmcp), servers taking turns (the order flips each round), 5 s per
figure, the driver oxmcp-bench (checks every answer) pinned to core 1 and the server to
core 0. Prints medians, ratios, driver CPU share and the error count.

Usage: BEFORE=path/to/old/oxmcp [AFTER=...] python3 scripts/bench_ab.py [ROUNDS]
BEFORE_ARGS and AFTER_ARGS add `oxmcp serve` flags to either side (space-separated): the
cost of the metrics layer is BEFORE=target/release/oxmcp BEFORE_ARGS=--no-metrics.
(after scripts/bench-http.sh has built the floor, rmcp's echo server and oxmcp-bench)."""
import json
import os
import sys
sys.path.insert(0, "scripts")
import bench_table as bt
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 6
CMP = "bench/compare/target/release/examples"
S = {
    "floor": ["target/release/examples/bare_http", "{addr}"],
    "rmcp": [f"{CMP}/rmcp_echo", "--listen", "{addr}"],
    "before": [os.environ["BEFORE"], "serve", "--listen", "{addr}"]
    + os.environ.get("BEFORE_ARGS", "").split(),
    "after": [os.environ.get("AFTER", "target/release/oxmcp"), "serve", "--listen", "{addr}"]
    + os.environ.get("AFTER_ARGS", "").split(),
}
bt.SERVERS.clear(); bt.SERVERS.update({k: (v, []) for k, v in S.items()})
shapes = {
    "64 conns, a session each": ["--clients", "64"],
    "64 conns, one session": ["--clients", "64", "--session", "shared"],
    "1 conn": ["--clients", "1"],
    "64 conns, stateless 2026-07-28": ["--clients", "64", "--era", "modern"],
}
skip = {("floor", "64 conns, one session"), ("floor", "64 conns, stateless 2026-07-28"),
        ("rmcp", "64 conns, stateless 2026-07-28")}
res = {n: {k: [] for k in shapes} for n in S}
cpu = {n: {k: [] for k in shapes} for n in S}
for r in range(rounds):
    order = list(S) if r % 2 == 0 else list(S)[::-1]
    for n in order:
        with bt.Http(n) as s:
            for k, shape in shapes.items():
                if (n, k) in skip:
                    continue
                rep = bt.bench([s.url, "--duration", "5s", "--server-pid", str(s.proc.pid)] + shape, f"{n} {k}")
                res[n][k].append(bt.rate(rep, "calls"))
                c = (rep or {}).get("cpu", {})
                cpu[n][k].append(round(c.get("driver_cpu_s", 0) / max(c.get("wall_s", 1), 1e-9), 2))
    print(f"round {r+1}", file=sys.stderr, flush=True)
med = lambda xs: sorted(xs)[len(xs) // 2] if xs and all(isinstance(x, (int, float)) for x in xs) else None
print("| shape | floor | rmcp | before | after | after/before | after/floor | after/rmcp | floor/after (driver headroom) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for k in shapes:
    m = {n: med(res[n][k]) for n in S}
    f = m["floor"] or med(res["floor"]["64 conns, a session each"])
    def ratio(a, b):
        return f"{a / b:.2f}x" if a and b else "-"
    print(f"| {k} | " + " | ".join(bt.fmt(m[n]) if m[n] else "-" for n in S) +
          f" | {ratio(m['after'], m['before'])} | {ratio(m['after'], f)} | {ratio(m['after'], m['rmcp'])} | {ratio(f, m['after'])} |")
print()
print("driver CPU share (median):", {n: {k: med(v) for k, v in d.items() if v} for n, d in cpu.items()})
print("rounds:", json.dumps({n: {k: [round(x) if isinstance(x, float) else x for x in v] for k, v in d.items() if v} for n, d in res.items()}))
print("errors:", bt.failed or "none")
