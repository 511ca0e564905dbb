#!/usr/bin/env bash
# Transport and encoding figures (scripts/bench_transports.py): calls/s at 1 and 64
# connections over Streamable HTTP, WebSocket and gRPC against the floors and rmcp, and
# JSON against protobuf (bytes on the wire and calls/s) with echo and a 1 MiB binary
# resource. Every answer checked; exits 1 if any figure had errors. Not part of the tests.
# Usage: scripts/bench-transports.sh [seconds per figure, default 5]
set -euo pipefail
cd "$(dirname "$0")/.."
# `oxmcp` on its own, as -p oxmcp-cli builds it (crates/oxmcp-cli/startup-order.txt).
cargo build --release -p oxmcp-cli --bin oxmcp >/dev/null
cargo build --release -p oxmcp-bench --bins --examples >/dev/null
# rmcp is fetched from crates.io into bench/compare's own lockfile, never into the workspace.
(cd bench/compare && cargo build --release --examples >/dev/null)
exec python3 scripts/bench_transports.py "${1:-5}"
