#!/usr/bin/env bash
# Soak test (a few minutes; not part of scripts/test.sh): waves of 1,000 concurrent Streamable
# HTTP sessions against a server in its own process, with SSE streams cut and resumed at
# random. Checks that every response arrives exactly once and that no session, stream or task
# is left behind, and that RSS returns to within 10% of its post-warm-up level. Then three
# waves over three `oxmcp serve --store` instances and a real Redis (redis-server from PATH):
# no key is left once the sessions are gone, expiry included, and RSS stays flat.
#   SOAK_SESSIONS (default 1000), SOAK_WAVES (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release -p oxmcp-http --test soak -- --ignored --nocapture soak_1000_sessions
# The same with the Redis store: 1,000 sessions a wave over three instances behind a proxy.
SOAK_SESSIONS=${SOAK_SESSIONS:-1000} \
  cargo test --release -p oxmcp-tests --test scale_soak -- --nocapture
