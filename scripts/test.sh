#!/usr/bin/env bash
# Runs every test of the workspace. Installs what the tests need first (today: nothing beyond
# the Rust toolchain; later the Node conformance suite and Redis).
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
