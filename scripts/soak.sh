#!/usr/bin/env bash
# Soak test (a few minutes; not part of scripts/test.sh): waves of 1,000 concurrent Streamable
# HTTP sessions against a server in its own process, with SSE streams cut and resumed at
# random. Checks that every response arrives exactly once and that no session, stream or task
# is left behind, and that RSS returns to within 10% of its post-warm-up level.
#   SOAK_SESSIONS (default 1000), SOAK_WAVES (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo test --release -p mcp-http --test soak -- --ignored --nocapture soak_1000_sessions
