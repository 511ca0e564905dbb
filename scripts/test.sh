#!/usr/bin/env bash
# Runs every test of the workspace, the fuzz targets' replay tests and a short run of each
# fuzz target, then the official conformance suite. Installs what the tests need (cargo-fuzz
# from crates.io, Node 22 and the suite from the npm registry). The soak test is separate:
# scripts/soak.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
# A one-shot run gains nothing from incremental state, which would double the disk it needs.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
if ! command -v cargo >/dev/null; then
  echo "cargo is required (https://rustup.rs)" >&2
  exit 1
fi
cargo build --workspace --all-targets
cargo test --workspace --all-targets
cargo test --workspace --doc
(cd fuzz && cargo test --quiet)
./scripts/fuzz.sh
./scripts/conformance.sh
