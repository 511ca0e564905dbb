#!/usr/bin/env bash
# Lists the public API of every publishable library crate of the workspace in api/CRATE.txt,
# so that every change to it shows in review as a diff of those files.
#
#   scripts/public-api.sh           rewrite api/*.txt from the current tree
#   scripts/public-api.sh --check   fail (with a diff) if api/*.txt is not what the tree gives
#
# The crates are found as scripts/package.sh finds them (`cargo metadata`: workspace members
# whose `publish` is not false), keeping those with a library or proc-macro target (oxmcp-cli
# is a binary). Their rustdoc JSON is generated with --all-features, as docs.rs builds them
# (every crate has `[package.metadata.docs.rs] all-features = true`; one cargo run for all of
# them, so features are unified across the crates, which docs.rs does not do), on the stable
# toolchain with RUSTC_BOOTSTRAP=1 (the JSON output is still unstable), then rendered by
# scripts/public_api.py, whose self-test runs first. See CONTRIBUTING.md.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}

check=0
case "${1:-}" in
  "") ;;
  --check) check=1 ;;
  *)
    echo "usage: scripts/public-api.sh [--check]" >&2
    exit 2
    ;;
esac

python3 scripts/public_api.py --selftest >/dev/null

meta=$(cargo metadata --no-deps --format-version 1)
# PUBLIC_API_TARGET_DIR gives the JSON run a target directory of its own: in the shared one,
# its dependencies (all features, RUSTC_BOOTSTRAP=1) and those of a plain `cargo doc` replace
# each other, so that each run rebuilds some of them (about 1.5 min each way on 2 cores).
if [ -n "${PUBLIC_API_TARGET_DIR:-}" ]; then
  export CARGO_TARGET_DIR=$PUBLIC_API_TARGET_DIR
  target_dir=$PUBLIC_API_TARGET_DIR
else
  target_dir=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])' <<<"$meta")
fi
# "package-name target_name" for each publishable library crate.
mapfile -t crates < <(python3 -c '
import json, sys
meta = json.load(sys.stdin)
for p in meta["packages"]:
    if p["id"] not in meta["workspace_members"] or p.get("publish") == []:
        continue
    for t in p["targets"]:
        if "lib" in t["kind"] or "proc-macro" in t["kind"]:
            print(p["name"], t["name"].replace("-", "_"))
' <<<"$meta" | sort)
if [ "${#crates[@]}" -eq 0 ]; then
  echo "public-api.sh: no publishable library crate found" >&2
  exit 1
fi

out=api
if [ "$check" = 1 ]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"

# One cargo invocation for all the crates: the dependencies are checked once with one set of
# features (per-crate invocations with different feature sets would rebuild them each time).
# The flags reach rustdoc for our crates only (--no-deps).
args=()
jsons=()
for entry in "${crates[@]}"; do
  read -r name lib <<<"$entry"
  args+=(-p "$name")
  jsons+=("$target_dir/doc/$lib.json")
done
RUSTC_BOOTSTRAP=1 RUSTDOCFLAGS="-Z unstable-options --output-format json" \
  cargo doc --quiet --no-deps --lib --all-features "${args[@]}"
# Each crate's listing names the other workspace crates' items by their shortest public path,
# which their JSON gives.
python3 scripts/public_api.py --out-dir "$out" "${jsons[@]}"

if [ "$check" = 0 ]; then
  # Listings of crates that are gone (or no longer published) go too.
  for f in api/*.txt; do
    name=$(basename "$f" .txt)
    printf '%s\n' "${crates[@]}" | grep -q "^$name " || rm -v "$f"
  done
  echo "public-api.sh: wrote api/*.txt for ${#crates[@]} crates"
  exit 0
fi

status=0
for entry in "${crates[@]}"; do
  read -r name _ <<<"$entry"
  if ! diff -u -N --label "api/$name.txt" --label "api/$name.txt (from the tree)" \
      "api/$name.txt" "$out/$name.txt" >&2 2>/dev/null; then
    [ -f "api/$name.txt" ] || echo "public-api.sh: api/$name.txt is missing" >&2
    status=1
  fi
done
for f in api/*.txt; do
  [ -e "$f" ] || continue
  name=$(basename "$f" .txt)
  if [ ! -f "$out/$name.txt" ]; then
    echo "public-api.sh: $f lists a crate that is not a publishable library crate" >&2
    status=1
  fi
done
if [ "$status" != 0 ]; then
  echo "public-api.sh: the public API differs from api/*.txt (diff above). If the change is" \
    "intended, run scripts/public-api.sh and commit api/; a removed or changed line is a" \
    "breaking change (see CONTRIBUTING.md)." >&2
  exit 1
fi
echo "public-api.sh: api/*.txt is up to date (${#crates[@]} crates)"
