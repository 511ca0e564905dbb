#!/usr/bin/env bash
# Side-by-side benchmark against the official Rust SDK (rmcp): the same echo server written with
# each (bench/compare/examples), driven by `oxmcp-bench` in alternating rounds (stdio sequential,
# stdio pipelined, Streamable HTTP with 1/16/64 connections). `oxmcp-bench` checks every answer
# (id and echoed text); the table prints each side's error count beside its median, and a mode
# with errors in any round gets no rate. Prints medians and ours/rmcp.
# Not part of the test run. ROUNDS (default 5) and SCALE (request counts x SCALE) tune it.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p oxmcp-bench
(cd bench/compare && cargo build --release --examples --bins)
exec bench/compare/target/release/mcp-compare \
  --bench target/release/oxmcp-bench \
  --ours bench/compare/target/release/examples/ours_echo \
  --rmcp bench/compare/target/release/examples/rmcp_echo \
  --rounds "${ROUNDS:-5}" --scale "${SCALE:-1.0}"
