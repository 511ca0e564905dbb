#!/usr/bin/env bash
# Runs every test of the workspace, the fuzz targets' replay tests and a short run of each
# fuzz target, then the official conformance suite. Installs what the tests need (cargo-fuzz
# from crates.io, Redis from Debian's packages when run as root, the Python SDK from PyPI,
# Node 22 and the suite from the npm registry). The soak test is separate:
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
# The scale-out tests start their own Redis (redis-server from PATH, on a free loopback port).
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "== installing Debian's redis-server package (for the scale-out tests)"
    apt-get install -y -q redis-server >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null && apt-get install -y -q redis-server >/dev/null; }
  else
    echo "the scale-out tests need redis-server and redis-cli: install Debian's redis-server package" >&2
    exit 1
  fi
fi
# apt may start a Redis on 6379 as a service; the tests use their own, so it is left alone.
# The interop tests drive the Python SDK (its WebSocket client and server), a plain
# `websockets` client, and a gRPC client generated from our .proto with grpcio-tools, all
# from PyPI, in a venv of their own.
if [ ! -x .venv-interop/bin/python ] || ! .venv-interop/bin/python -c 'import mcp, websockets, uvicorn, grpc_tools' 2>/dev/null; then
  echo "== installing the Python SDK and grpcio-tools into .venv-interop (for the interop tests)"
  python3 -m venv .venv-interop
  .venv-interop/bin/pip install -q --disable-pip-version-check \
    "mcp==1.30.0" "websockets==17.4" "uvicorn==0.54.0" "grpcio==1.76.0" "grpcio-tools==1.76.0"
fi
cargo build --workspace --all-targets
cargo test --workspace --all-targets
cargo test --workspace --doc
# The API docs build without a warning (broken links, private items named in public docs).
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
# Every publishable crate packages and builds on its own, as crates.io would get it (about
# 2 minutes on a warm target dir; the first run builds each crate's own feature set of its
# dependencies, much longer).
./scripts/package.sh --quiet
# The quick examples run too (each serves and calls in one process, and fails on error).
for example in tasks extensions; do
  echo "== example $example"
  cargo run -q -p oxmcp --example "$example" >/dev/null
done
(cd fuzz && cargo test --quiet)
./scripts/fuzz.sh
./scripts/conformance.sh
