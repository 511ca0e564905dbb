#!/usr/bin/env bash
# Runs every test of the workspace, then the official conformance suite. Installs what the
# tests need (Node 22 and the suite, from the npm registry).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
if ! command -v cargo >/dev/null; then
  echo "cargo is required (https://rustup.rs)" >&2
  exit 1
fi
cargo build --workspace --all-targets
cargo test --workspace --all-targets
cargo test --workspace --doc
./scripts/conformance.sh
