#!/usr/bin/env python3
"""The functions a start of `oxmcp serve --stdio` runs, for the linker to lay out together.

Writes crates/oxmcp-cli/startup-order.txt, which crates/oxmcp-cli/build.rs hands to lld
(`--symbol-ordering-file`) in release builds: one start (spawn, `initialize`, one
`tools/call`, exit) runs under valgrind's callgrind, driven by `oxmcp-bench --cold-start 1`,
and the binary's functions it ran are listed in the order of callgrind's output (grouped by
object and source file, which keeps a file's functions together).

The names are mangled, and their hashes follow the build configuration (dependency
versions, features, compiler): the file is made for `cargo build --release -p oxmcp-cli`
(built beside other packages, the dependencies' features and so the hashes differ). Run this
again after such a change; `--check` says how many of the file's names a built binary still
has (scripts/bench-http.sh prints it).

Usage: scripts/startup-order.py          (builds target/release/oxmcp and oxmcp-bench first)
       scripts/startup-order.py --check [BINARY]
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORDER = os.path.join(ROOT, "crates", "oxmcp-cli", "startup-order.txt")
BINARY = os.path.join(ROOT, "target", "release", "oxmcp")
BENCH = os.path.join(ROOT, "target", "release", "oxmcp-bench")
NAME = re.compile(r"^c?fn=\((\d+)\) (.+)$")


def text_symbols(binary):
    out = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True,
                         check=True).stdout
    return {p[2] for p in (l.split() for l in out.splitlines()) if len(p) == 3 and p[1] in "tTwW"}


def check(binary):
    names = [l.strip() for l in open(ORDER) if l.strip()]
    have = text_symbols(binary)
    found = sum(n in have for n in names)
    share = found / max(len(names), 1)
    print(f"startup-order.txt: {found} of {len(names)} names in {binary} ({share:.0%})"
          + ("" if share >= 0.9 else "; run scripts/startup-order.py to make it again"))


def generate():
    # Linked without the old file: callgrind sees the same names either way, but a build
    # whose layout came from a stale file is not what is measured.
    env = dict(os.environ, OXMCP_NO_SYMBOL_ORDERING="1")
    # Each on its own: built together, their dependencies would take the features of both,
    # and the names (their hashes) would be another build's than `-p oxmcp-cli`'s.
    subprocess.run(["cargo", "build", "--release", "-p", "oxmcp-cli", "--bin", "oxmcp"],
                   cwd=ROOT, env=env, check=True)
    subprocess.run(["cargo", "build", "--release", "-p", "oxmcp-bench", "--bin", "oxmcp-bench"],
                   cwd=ROOT, env=env, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.%p")
        subprocess.run([BENCH, "--cold-start", "1", "--", "valgrind", "--tool=callgrind",
                        "--demangle=no", "--dump-instr=no", f"--callgrind-out-file={out}",
                        BINARY, "serve", "--stdio"], check=True, stdout=subprocess.DEVNULL)
        have = text_symbols(BINARY)
        seen, order = set(), []
        for name in sorted(os.listdir(tmp)):
            for line in open(os.path.join(tmp, name), errors="replace"):
                m = NAME.match(line.rstrip("\n"))
                if m and m.group(2) in have and m.group(2) not in seen:
                    seen.add(m.group(2))
                    order.append(m.group(2))
    if len(order) < 100:
        sys.exit(f"startup-order.py: only {len(order)} functions seen; not written")
    with open(ORDER, "w") as f:
        f.write("\n".join(order) + "\n")
    print(f"startup-order.py: {len(order)} functions written to {ORDER}; "
          "build again (cargo build --release -p oxmcp-cli) to link with them")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--check"]:
        check(sys.argv[2] if len(sys.argv) > 2 else BINARY)
    else:
        generate()
