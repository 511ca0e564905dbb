#!/usr/bin/env bash
# Runs every fuzz target (fuzz/, a cargo-fuzz workspace) for FUZZ_SECONDS each (default 15),
# starting from the seeds in fuzz/corpus/<target>. A crash fails the run; libFuzzer saves the
# input under fuzz/artifacts/<target>/. Fix the bug, then copy the input to
# fuzz/regressions/<target>/ so the replay test (fuzz/tests/replay.rs) keeps checking it.
#
# cargo-fuzz passes a few -Z flags to rustc; RUSTC_BOOTSTRAP=1 lets the stable toolchain take
# them (this machine has no other). FUZZ_SANITIZER=address turns AddressSanitizer on (a much
# slower build); the default is none: our crates forbid unsafe code, and coverage guidance
# and the targets' own assertions work without it.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${FUZZ_SECONDS:-15}"
sanitizer="${FUZZ_SANITIZER:-none}"
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  if [ ! -x .tools/bin/cargo-fuzz ]; then
    echo "== installing cargo-fuzz into .tools"
    cargo install --quiet --locked --root .tools cargo-fuzz
  fi
  export PATH="$PWD/.tools/bin:$PATH"
fi
export RUSTC_BOOTSTRAP=1
targets="jsonrpc_decode stdio_framing sse_parser uri_template http_service"
echo "== building the fuzz targets (sanitizer: $sanitizer)"
cargo fuzz build --dev -s "$sanitizer"
for t in $targets; do
  work="$(mktemp -d)"
  echo "== fuzzing $t for ${secs}s"
  status=0
  cargo fuzz run --dev -s "$sanitizer" "$t" "$work" "fuzz/corpus/$t" -- \
    -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    > "$work.log" 2>&1 || status=$?
  grep -E "^stat::(number_of_executed_runs|average_exec_per_sec|new_units_added)|ERROR|SUMMARY|panicked at|Failing input" "$work.log" || true
  if [ "$status" != 0 ]; then tail -40 "$work.log" >&2; fi
  rm -rf "$work" "$work.log"
  if [ "$status" != 0 ]; then
    echo "fuzz target $t failed; the input is in fuzz/artifacts/$t/" >&2
    exit 1
  fi
done
echo "fuzz: all targets ran ${secs}s each without a crash"
