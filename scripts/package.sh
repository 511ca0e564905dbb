#!/usr/bin/env bash
# Packages every publishable crate of the workspace as crates.io would receive it, then builds
# each package on its own (cargo package's verification): metadata, README and file list are
# checked, and each packaged crate must compile against the packaged versions of the workspace
# crates it depends on (cargo resolves them through a local overlay, nothing is uploaded).
# The crates are discovered from `cargo metadata`: every workspace member whose `publish` is
# not false. Crate names given as arguments limit the run to them and the workspace crates they
# depend on (cargo can only package a crate whose unpublished dependencies are packaged in the
# same run). Other arguments go to `cargo package` (e.g. --no-verify for the quick check).
# Each .crate must stay under MAX_CRATE_KIB (default 1024) compressed.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
max_kib=${MAX_CRATE_KIB:-1024}

wanted=()
cargo_args=()
for a in "$@"; do
  case "$a" in
    -*) cargo_args+=("$a") ;;
    *) wanted+=("$a") ;;
  esac
done
mapfile -t crates < <(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
meta = json.load(sys.stdin)
members = {p["name"]: p for p in meta["packages"] if p["id"] in meta["workspace_members"]}
# `publish = false` is an empty list; absent (null) means any registry.
publishable = [n for n, p in members.items() if p.get("publish") != []]
wanted = sys.argv[1:]
if not wanted:
    print("\n".join(publishable))
    sys.exit()
unknown = [w for w in wanted if w not in publishable]
if unknown:
    sys.exit("package.sh: not a publishable crate of the workspace: " + ", ".join(unknown))
seen, todo = set(), list(wanted)
while todo:
    name = todo.pop()
    if name in seen:
        continue
    seen.add(name)
    for d in members[name]["dependencies"]:
        if d["name"] in members and d.get("kind") in (None, "build"):
            todo.append(d["name"])
print("\n".join(n for n in publishable if n in seen))
' "${wanted[@]}")
if [ "${#crates[@]}" -eq 0 ]; then
  echo "package.sh: no publishable crate found" >&2
  exit 1
fi
echo "== packaging ${#crates[@]} crates: ${crates[*]}"
args=()
for c in "${crates[@]}"; do args+=(-p "$c"); done
# --allow-dirty: this is a check of the working tree, not a release.
cargo package --allow-dirty "${args[@]}" "${cargo_args[@]}"

status=0
for c in "${crates[@]}"; do
  file=$(ls target/package/"$c"-[0-9]*.crate 2>/dev/null | sort -V | tail -n 1)
  if [ -z "$file" ]; then
    echo "package.sh: no .crate for $c" >&2
    status=1
    continue
  fi
  kib=$(( $(stat -c %s "$file") / 1024 ))
  if [ "$kib" -gt "$max_kib" ]; then
    echo "package.sh: $file is $kib KiB (over $max_kib KiB): check \`cargo package --list -p $c\`" >&2
    status=1
  fi
done
[ "$status" -eq 0 ] && echo "== all ${#crates[@]} crates packaged"
exit "$status"
