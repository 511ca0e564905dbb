#!/usr/bin/env bash
# Scale-out figures (scripts/bench_scale.py): `oxmcp serve` with the Redis store, 1 to 3
# instances, against one instance without it, both eras; Redis round trips per call and
# memory per idle session. Every answer checked; exits 1 if any figure had errors. Needs
# redis-server (Debian's redis-server package). Not part of the tests.
# Usage: scripts/bench-scale.sh [seconds per figure, default 5]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p oxmcp-cli -p oxmcp-bench --bins --examples >/dev/null
# rmcp is fetched from crates.io into bench/compare's own lockfile, never into the workspace.
(cd bench/compare && cargo build --release --examples >/dev/null)
exec python3 scripts/bench_scale.py "${1:-5}"
