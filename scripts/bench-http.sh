#!/usr/bin/env bash
# Streamable HTTP figures: echo calls/s and latency with 1, 16 and 64 clients in JSON and SSE
# response modes, and server RSS per idle session (1,000 sessions). Not part of the tests.
# Usage: scripts/bench-http.sh [requests-per-run]
set -euo pipefail
cd "$(dirname "$0")/.."
requests=${1:-20000}
cargo build --release -p mcp-cli >/dev/null
mcp=target/release/mcp
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port/mcp"
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null || true' EXIT
start() {
  "$mcp" serve --listen "127.0.0.1:$port" --response-mode "$1" 2>/dev/null &
  pid=$!
  for _ in $(seq 1 100); do curl -s -o /dev/null "$url" && return 0; sleep 0.05; done
  echo "server did not start" >&2; exit 1
}
session() {
  curl -si -X POST "$url" -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wrk","version":"1"}}}' \
    | grep -i mcp-session-id | cut -d' ' -f2 | tr -d '\r'
}
for mode in json sse; do
  start "$mode"
  for clients in 1 16 64; do
    printf '%-5s clients=%-3s ' "$mode" "$clients"
    "$mcp" bench "$url" --clients "$clients" --requests "$requests" --json
  done
  # mcp bench's own client saturates near 50k calls/s on 2 cores; wrk (apt install wrk)
  # measures the server alone: 64 connections into one session, a fresh id per request.
  if command -v wrk >/dev/null; then
    printf '%-5s wrk -c64: ' "$mode"
    SESSION=$(session) wrk -c64 -t2 -d5s -s scripts/wrk-call.lua "$url" | grep -E 'Requests/sec' | tr -s ' '
  fi
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
done
# Legacy (sessions) versus 2026-07-28 (stateless) at 64 clients, same server.
start auto
for era in legacy modern; do
  printf 'era=%-6s clients=64 ' "$era"
  "$mcp" bench "$url" --era "$era" --clients 64 --requests "$requests" --json
done
if command -v wrk >/dev/null; then
  printf 'legacy wrk -c64: '
  SESSION=$(session) wrk -c64 -t2 -d5s -s scripts/wrk-call.lua "$url" | grep -E 'Requests/sec' | tr -s ' '
  printf 'modern wrk -c64: '
  wrk -c64 -t2 -d5s -s scripts/wrk-call-modern.lua "$url" | grep -E 'Requests/sec' | tr -s ' '
fi
printf 'idle sessions: '
"$mcp" bench "$url" --idle-sessions 1000 --server-pid "$pid" --json
