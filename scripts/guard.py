#!/usr/bin/env python3
"""The house rules that a compiler does not check, checked on every source file of crates/*/src
and of tests/src (the test crate's helpers).

- No source file is over 600 lines, and no function is over 80 (from its `fn` line to its
  closing brace; the code is rustfmt-formatted, so a function ends at the first `}` line with
  the indentation of its `fn` line).
- Every file opens with a `//!` comment saying what it holds.
- Every crate root (src/lib.rs, or src/main.rs for a binary without a library) says in its
  opening comment which crates of ours it imports, in one sentence starting "Imports": either
  "Imports no other crate of ours" or "Imports oxmcp-a, oxmcp-b and oxmcp-c", and the list is
  exactly the oxmcp crates among its `[dependencies]` in Cargo.toml (optional ones included).

Run from anywhere: `python3 scripts/guard.py`. Exit 1 with one line per breach; `--selftest`
checks the checker on made-up sources first.
"""

import pathlib
import re
import sys
import tomllib

MAX_FILE_LINES = 600
MAX_FN_LINES = 80
FN = re.compile(
    r'^(\s*)(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?'
    r'(?:extern\s+"[^"]*"\s+)?fn\s+(\w+)'
)
IMPORTS = re.compile(r'\b[Ii]mports\b(.*?)(?:[;.](?:\s|$)|$)')
CRATE = re.compile(r'\boxmcp(?:-[a-z]+)*\b')


def long_functions(text):
    """(line, name, length) of each function over MAX_FN_LINES lines."""
    lines = text.split("\n")
    found = []
    i = 0
    while i < len(lines):
        m = FN.match(lines[i])
        if not m:
            i += 1
            continue
        indent, name = m.group(1), m.group(2)
        j = i
        while j < len(lines) and not lines[j].rstrip().endswith(("{", ";")):
            j += 1
        if j >= len(lines) or lines[j].rstrip().endswith(";"):
            i = j + 1  # a declaration without a body (a trait's)
            continue
        k = j + 1
        while k < len(lines) and lines[k].rstrip() != indent + "}":
            k += 1
        if k - i + 1 > MAX_FN_LINES:
            found.append((i + 1, name, k - i + 1))
        i += 1
    return found


def opening_comment(text):
    """The `//!` lines a file opens with, joined."""
    out = []
    for line in text.split("\n"):
        if line.startswith("//!"):
            out.append(line[3:].strip())
        elif line.strip() == "" and not out:
            continue
        else:
            break
    return " ".join(out)


def declared_imports(root_text):
    """The crates of ours a crate root says it imports (None: it does not say)."""
    m = IMPORTS.search(opening_comment(root_text))
    if not m:
        return None
    clause = m.group(1)
    if re.match(r'\s*no other crate of ours', clause):
        return set()
    return set(CRATE.findall(clause))


def cargo_imports(manifest):
    deps = tomllib.loads(manifest).get("dependencies", {})
    return {name for name in deps if CRATE.fullmatch(name)}


def check_crate(crate):
    """Breaches of one crate directory, as strings."""
    problems = []
    src = crate / "src"
    for path in sorted(src.rglob("*.rs")):
        text = path.read_text()
        n = text.count("\n")
        if n > MAX_FILE_LINES:
            problems.append(f"{path}: {n} lines (at most {MAX_FILE_LINES})")
        for line, name, length in long_functions(text):
            problems.append(f"{path}:{line}: fn {name} is {length} lines (at most {MAX_FN_LINES})")
        if not opening_comment(text):
            problems.append(f"{path}: does not open with a `//!` comment saying what it holds")
    root = src / "lib.rs" if (src / "lib.rs").exists() else src / "main.rs"
    if root.exists():
        said = declared_imports(root.read_text())
        real = cargo_imports((crate / "Cargo.toml").read_text())
        if said is None:
            problems.append(f"{root}: its opening comment has no \"Imports ...\" sentence "
                            f"(Cargo.toml: {', '.join(sorted(real)) or 'no other crate of ours'})")
        elif said != real:
            problems.append(f"{root}: says it imports {sorted(said)}, Cargo.toml has {sorted(real)}")
    return problems


def selftest():
    long_fn = "fn a() {\n" + "    x();\n" * 79 + "}\n"
    assert long_functions(long_fn) == [(1, "a", 81)], long_functions(long_fn)
    ok_fn = "    pub(crate) async fn b(\n        y: u8,\n    ) -> u8 {\n" + "        y\n" * 76 + "    }\n"
    assert long_functions(ok_fn) == [], long_functions(ok_fn)
    assert long_functions("trait T {\n    fn c(&self);\n}\n") == []
    assert declared_imports("//! Foo.\n//! Imports oxmcp-a, oxmcp-b and\n//! oxmcp-c; hosts [`oxmcp_x::Y`].\n") == {"oxmcp-a", "oxmcp-b", "oxmcp-c"}
    assert declared_imports("//! Imports no other crate of ours.\n") == set()
    assert declared_imports("//! Imports oxmcp-jsonrpc only. Uses oxmcp-z in tests.\n") == {"oxmcp-jsonrpc"}
    assert declared_imports("//! Nothing said.\n") is None
    assert declared_imports("use x;\n//! Imports oxmcp-a.\n") is None
    assert cargo_imports('[dependencies]\noxmcp-a = "1"\nserde = "1"\n[dev-dependencies]\noxmcp-b = "1"\n') == {"oxmcp-a"}


def main():
    selftest()
    if sys.argv[1:] == ["--selftest"]:
        return 0
    root = pathlib.Path(__file__).resolve().parent.parent
    problems = []
    for crate in sorted((root / "crates").iterdir()) + [root / "tests"]:
        if (crate / "Cargo.toml").exists():
            problems += check_crate(crate)
    for p in problems:
        print(p.replace(str(root) + "/", ""))
    if problems:
        print(f"guard: {len(problems)} breach(es) of the house rules (scripts/guard.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
