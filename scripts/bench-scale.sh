#!/usr/bin/env bash
# Scale-out figures (scripts/bench_scale.py): `oxmcp serve` with the Redis store (1 to 3
# instances) and the PostgreSQL store (1 and 3), against one instance without a store, both
# eras; store round trips per call and Redis
# memory per idle session. Every answer checked; exits 1 if any figure had errors. Needs
# redis-server and PostgreSQL (Debian's redis-server and postgresql packages). Not part of
# the tests.
# Usage: scripts/bench-scale.sh [seconds per figure, default 5]
set -euo pipefail
cd "$(dirname "$0")/.."
# `oxmcp` on its own, as -p oxmcp-cli builds it (crates/oxmcp-cli/startup-order.txt).
cargo build --release -p oxmcp-cli --bin oxmcp >/dev/null
cargo build --release -p oxmcp-bench --bins --examples >/dev/null
# rmcp is fetched from crates.io into bench/compare's own lockfile, never into the workspace.
(cd bench/compare && cargo build --release --examples >/dev/null)
exec python3 scripts/bench_scale.py "${1:-5}"
