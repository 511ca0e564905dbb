#!/usr/bin/env python3
"""What the metrics layer costs, in one interleaved run: `oxmcp serve --no-metrics` (OFF)
against `oxmcp serve` with its default metrics layer (ON), beside the floor (bare hyper) and
rmcp's echo server, servers taking turns (the order flips each round), 5 s per figure, the
driver oxmcp-bench (checks every answer) pinned to core 1 and the server to core 0. Prints
medians, ON/OFF, ratios against the floor and rmcp, the driver's CPU share and the errors.

Usage: python3 scripts/bench_metrics.py [ROUNDS] (after scripts/bench-http.sh, or
`cargo build --release -p oxmcp-cli -p oxmcp-bench --bins --examples` and bench/compare's
`cargo build --release --examples`)."""
import json
import sys
sys.path.insert(0, "scripts")
import bench_table as bt
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 6
CMP = "bench/compare/target/release/examples"
S = {
    "floor": ["target/release/examples/bare_http", "{addr}"],
    "rmcp": [f"{CMP}/rmcp_echo", "--listen", "{addr}"],
    "off": ["target/release/oxmcp", "serve", "--listen", "{addr}", "--no-metrics"],
    "on": ["target/release/oxmcp", "serve", "--listen", "{addr}"],
}
bt.SERVERS.clear(); bt.SERVERS.update({k: (v, []) for k, v in S.items()})
shapes = {
    "64 conns, a session each": ["--clients", "64"],
    "64 conns, one session": ["--clients", "64", "--session", "shared"],
}
skip = {("floor", "64 conns, one session")}
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
print("| shape | floor | rmcp | metrics off | metrics on | on/off | on/floor | on/rmcp | floor/on (driver headroom) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for k in shapes:
    m = {n: med(res[n][k]) for n in S}
    f = m["floor"] or med(res["floor"]["64 conns, a session each"])
    def ratio(a, b, digits=2):
        return f"{a / b:.{digits}f}x" if a and b else "-"
    print(f"| {k} | " + " | ".join(bt.fmt(m[n]) if m[n] else "-" for n in S) +
          f" | {ratio(m['on'], m['off'], 3)} | {ratio(m['on'], f)} | {ratio(m['on'], m['rmcp'])} | {ratio(f, m['on'])} |")
print()
print("driver CPU share (median):", {n: {k: med(v) for k, v in d.items() if v} for n, d in cpu.items()})
print("rounds:", json.dumps({n: {k: [round(x) if isinstance(x, float) else x for x in v] for k, v in d.items() if v} for n, d in res.items()}))
print("errors:", bt.failed or "none")
