#!/usr/bin/env bash
# First the performance table (scripts/bench_table.py): the floor, our SDK's echo server,
# `oxmcp serve` and rmcp's echo server side by side in one run, over Streamable HTTP (64
# connections with a session each, 64 in one session, 1 connection), stdio (sequential,
# pipelined, cold start, RSS) and the memory of an idle session; the server pinned to one
# core and the driver to the other. Then more shapes of `oxmcp serve` alone:
#
# Streamable HTTP figures of `oxmcp serve`, every answer checked by `oxmcp-bench`'s raw driver
# (status, content type, id, and the text of each echo: every call sends its own message).
# A refusal such as 429 is an error, and a figure with errors shows them instead of a rate.
#
# In JSON and in SSE response mode: 1 connection; 64 connections with a session each; 64 and
# 256 connections calling in one shared session; 64 stateless 2026-07-28 connections. Then a
# burst of 2,000 new sessions at once, the server memory per idle session (1,000 sessions),
# and the bare HTTP floor (crates/oxmcp-bench/examples/bare_http.rs) at 64 connections.
#
# The driver runs on one thread and shares the machine's cores with the server: each figure
# prints both processes' CPU time. Not part of the tests; exits 1 if any figure had errors.
# Usage: scripts/bench-http.sh [seconds per figure, default 5]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
# `oxmcp` on its own, as `cargo build --release -p oxmcp-cli` builds it: built beside
# oxmcp-bench, its dependencies would take the features of both, which changes the hashes in
# their mangled names, and so how much of crates/oxmcp-cli/startup-order.txt the link can use.
cargo build --release -p oxmcp-cli --bin oxmcp >/dev/null
cargo build --release -p oxmcp-bench --bins --examples >/dev/null
# How much of the start layout (crates/oxmcp-cli/build.rs) this build could use.
python3 scripts/startup-order.py --check target/release/oxmcp
# rmcp is fetched from crates.io into bench/compare's own lockfile, never into the workspace.
(cd bench/compare && cargo build --release --examples >/dev/null)
table_failed=0
python3 scripts/bench_table.py "$secs" || table_failed=1
echo
mcp=target/release/oxmcp
bench=target/release/oxmcp-bench
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port/mcp"
pid=
failed=()
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null || true' EXIT

start() { # the server command
  "$@" 2>/dev/null &
  pid=$!
  for _ in $(seq 1 100); do curl -s -o /dev/null "$url" && return 0; sleep 0.05; done
  echo "server did not start: $*" >&2
  exit 1
}
stop() {
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
}
# $1 = label, then `oxmcp-bench` arguments. Prints the phase, error and CPU lines.
figure() {
  local label=$1; shift
  echo "-- $label"
  if ! "$bench" "$url" --server-pid "$pid" "$@" 2>&1 | grep -vE '^(target|checked) ' | sed 's/^/   /'; then
    failed+=("$label")
  fi
}

echo "Every answer checked: status, content type, id, and the echoed text (message \"hello-<n>\")."
echo "Driver: oxmcp-bench --driver raw (hyper, one thread), ${secs}s per figure."
for mode in json sse; do
  start "$mcp" serve --listen "127.0.0.1:$port" --response-mode "$mode"
  figure "$mode: 1 connection, a session" --clients 1 --duration "${secs}s"
  figure "$mode: 64 connections, a session each" --clients 64 --duration "${secs}s"
  figure "$mode: 64 connections in one session" --clients 64 --session shared --duration "${secs}s"
  figure "$mode: 256 connections in one session" --clients 256 --session shared --duration "${secs}s"
  figure "$mode: 64 connections, 2026-07-28 (stateless)" --clients 64 --era modern --duration "${secs}s"
  stop
done
# A fresh server for each: both open many sessions, and new sessions are rate-limited.
start "$mcp" serve --listen "127.0.0.1:$port"
echo "-- auto: server memory per idle session (1,000 sessions)"
if ! "$bench" "$url" --idle-sessions 1000 --server-pid "$pid" --json 2>&1 | sed 's/^/   /'; then
  failed+=("idle sessions")
fi
stop
start "$mcp" serve --listen "127.0.0.1:$port"
figure "auto: a burst of 2,000 new sessions" --burst 2000
stop
start target/release/examples/bare_http "127.0.0.1:$port"
figure "floor: bare_http (no MCP machinery), 64 connections" --clients 64 --duration "${secs}s"
stop
if [ "$table_failed" = 1 ]; then
  failed+=("the table above")
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "figures with errors (no rate given): ${#failed[@]}"
  printf '   %s\n' "${failed[@]}"
  exit 1
fi
