#!/usr/bin/env python3
"""Renders a crate's rustdoc JSON as a sorted text listing of its public API.

    python3 scripts/public_api.py target/doc/oxmcp_server.json [OTHER.json...] > api/oxmcp-server.txt
    python3 scripts/public_api.py --out-dir api target/doc/oxmcp_server.json target/doc/...
    python3 scripts/public_api.py --selftest

The other crates' JSON (the rest of the workspace) is optional: with it, their items are named
by their shortest public path (`oxmcp_types::Tool`) rather than where they are defined
(`oxmcp_types::tools::Tool`). With --out-dir, every crate given is rendered into
OUT_DIR/CRATE.txt (the crate name with dashes), the others serving as its siblings.

One line per public item reachable from the crate root, listed in full under its shortest
public path (re-exports resolved), with a `pub use PATH = SHORTEST` line for each other path a
user can name it by: modules, structs and their public fields, enums and their variants,
unions, traits with their associated items and implementations, functions and methods with
their signatures, constants, statics, type aliases and macros. Trait implementations are
listed once per type (`impl Trait for Type`), auto traits (Send, Sync, Unpin, UnwindSafe,
RefUnwindSafe) included since losing one is a breaking change; blanket implementations
(`impl<T> From<T> for T` and the like) are left out. `#[non_exhaustive]` and `#[deprecated]`
are shown as markers. No ids, spans or docs appear, and the lines are sorted, so the output
only changes when the API does.

Only the standard library is used. The rustdoc JSON format is unstable: FORMAT_VERSIONS lists
the versions this renderer was written against, and any other is refused rather than rendered
differently without notice.
"""

import json
import sys

# format_version of the rustdoc JSON of Rust 1.95 (the project's toolchain).
FORMAT_VERSIONS = {57}

# Paths of the std prelude, written by their short names.
PRELUDE = {
    "std::option::Option", "std::option::Option::Some", "std::option::Option::None",
    "std::result::Result", "std::result::Result::Ok", "std::result::Result::Err",
    "std::string::String", "std::vec::Vec", "std::boxed::Box",
    "std::marker::Send", "std::marker::Sync", "std::marker::Sized", "std::marker::Copy",
    "std::marker::Unpin", "std::clone::Clone", "std::default::Default",
    "std::cmp::PartialEq", "std::cmp::Eq", "std::cmp::PartialOrd", "std::cmp::Ord",
    "std::convert::From", "std::convert::Into", "std::convert::TryFrom", "std::convert::TryInto",
    "std::convert::AsRef", "std::convert::AsMut", "std::iter::Iterator",
    "std::iter::IntoIterator", "std::iter::Extend", "std::ops::Fn", "std::ops::FnMut",
    "std::ops::FnOnce", "std::ops::Drop", "std::borrow::ToOwned", "std::string::ToString",
}


# Other crates' items are named by the path of their definition, which can be a private module;
# the few that show up in our API are written by the path users import them by.
PATH_FIXUPS = [
    ("std::panic::unwind_safe::", "std::panic::"),
    ("serde_core::ser::", "serde::"),
    ("serde_core::de::", "serde::"),
    ("serde_json::value::", "serde_json::"),
    ("serde_json::map::", "serde_json::"),
    ("serde_json::error::", "serde_json::"),
    ("std::ops::function::", "std::ops::"),
    ("tokio_util::sync::cancellation_token::", "tokio_util::sync::"),
    ("http::extensions::", "http::"),
    ("serde_json::raw::", "serde_json::value::"),
    ("std::future::future::", "std::future::"),
    ("std::collections::btree::map::", "std::collections::"),
    ("std::collections::btree::set::", "std::collections::"),
    ("std::collections::hash::map::", "std::collections::"),
    ("std::collections::hash::set::", "std::collections::"),
    ("std::ffi::os_str::", "std::ffi::"),
    ("std::str::traits::", "std::str::"),
    ("std::io::error::", "std::io::"),
    ("std::ops::drop::", "std::ops::"),
    ("std::iter::traits::collect::", "std::iter::"),
    ("std::iter::traits::iterator::", "std::iter::"),
    ("std::net::socket_addr::", "std::net::"),
    ("std::net::ip_addr::", "std::net::"),
    ("tokio::sync::mpsc::bounded::", "tokio::sync::mpsc::"),
    ("tokio::sync::mpsc::unbounded::", "tokio::sync::mpsc::"),
    ("tokio::runtime::task::join::", "tokio::task::"),
    ("tokio::time::instant::", "tokio::time::"),
    ("tokio::io::async_write::", "tokio::io::"),
    ("tokio::net::addr::", "tokio::net::"),
    ("tokio::net::tcp::listener::", "tokio::net::"),
    ("tokio::net::tcp::stream::", "tokio::net::"),
    ("prost::message::", "prost::"),
    ("prost::error::", "prost::"),
    ("prost::encoding::wire_type::", "prost::encoding::"),
    ("bytes::buf::buf_mut::", "bytes::"),
    ("bytes::buf::buf_impl::", "bytes::"),
    ("bytes::bytes::", "bytes::"),
    ("bytes::bytes_mut::", "bytes::"),
    ("reqwest::error::", "reqwest::"),
    ("jsonwebtoken::algorithms::", "jsonwebtoken::"),
    ("tokio::io::async_read::", "tokio::io::"),
    ("tokio::io::async_buf_read::", "tokio::io::"),
]
# Auto traits worth listing (losing one is a breaking change); the compiler's internal ones
# (Freeze, UnsafeUnpin) and derive plumbing (StructuralPartialEq) are left out.
AUTO_TRAITS = {"Send", "Sync", "Unpin", "std::panic::UnwindSafe", "std::panic::RefUnwindSafe"}
INTERNAL_TRAITS = {"std::marker::StructuralPartialEq", "std::marker::Freeze",
                   "std::marker::UnsafeUnpin"}


def one(d):
    """The single (key, value) of an externally tagged enum value (a str for unit variants)."""
    if isinstance(d, str):
        return d, None
    (k, v), = d.items()
    return k, v


class Renderer:
    def __init__(self, doc, siblings=()):
        version = doc.get("format_version")
        if version not in FORMAT_VERSIONS:
            raise SystemExit(
                f"public_api.py: rustdoc JSON format_version {version} is not one this renderer "
                f"knows ({sorted(FORMAT_VERSIONS)}); check the rendering against the new format "
                "and add it to FORMAT_VERSIONS")
        self.doc = doc
        self.index = doc["index"]
        self.paths = doc["paths"]
        self.root = doc["index"][str(doc["root"])]
        self.crate = self.root["name"]
        # Item id -> the public paths it is reachable by (filled by walk()).
        self.public_paths = {}
        self.lines = set()
        # Definition path -> shortest public path, for the items of the other crates given
        # (the workspace's), which this crate's JSON only names by their definition path.
        self.external = {}
        for sib in siblings:
            other = Renderer(sib)
            found = []
            other.collect(other.root, other.crate, found, set())
            shortest = {}
            for path, it in found:
                if it["id"] is not None:
                    cur = shortest.get(it["id"])
                    if cur is None or (path.count("::"), path) < (cur.count("::"), cur):
                        shortest[it["id"]] = path
            for id_, path in shortest.items():
                summary = other.paths.get(str(id_))
                if summary:
                    self.external["::".join(summary["path"])] = path

    # ---- lookup -------------------------------------------------------------------------

    def item(self, id_):
        return None if id_ is None else self.index.get(str(id_))

    def canonical(self, id_):
        paths = self.public_paths.get(id_)
        if paths:
            return min(paths, key=lambda p: (p.count("::"), p))
        return None

    def path_of(self, id_, written):
        """How a path in a type or bound is shown: the public path of our items, the full
        path of other crates' (core and alloc as std, prelude names bare)."""
        p = self.canonical(id_)
        if p:
            return p
        summary = self.paths.get(str(id_)) if id_ is not None else None
        if summary:
            segs = list(summary["path"])
            if segs and segs[0] in ("core", "alloc"):
                segs[0] = "std"
            full = "::".join(segs)
            if full in self.external:
                return self.external[full]
            for old, new in PATH_FIXUPS:
                if full.startswith(old):
                    full = new + full[len(old):]
            if full in PRELUDE:
                return segs[-1]
            return full
        return written

    # ---- types, bounds, generics -----------------------------------------------------------

    def ty(self, t):
        if t is None:
            return "_"
        k, v = one(t)
        if k == "resolved_path":
            return self.path(v)
        if k == "dyn_trait":
            parts = [self.poly_trait(p) for p in v["traits"]]
            if v.get("lifetime"):
                parts.append(v["lifetime"])
            return "dyn " + " + ".join(parts)
        if k in ("generic", "primitive"):
            return v
        if k == "function_pointer":
            hdr = self.header(v["header"])
            hrtb = self.hrtb(v.get("generic_params", []))
            return f"{hrtb}{hdr}fn{self.sig(v['sig'], with_names=False)}"
        if k == "tuple":
            inner = ", ".join(self.ty(x) for x in v)
            return f"({inner},)" if len(v) == 1 else f"({inner})"
        if k == "slice":
            return f"[{self.ty(v)}]"
        if k == "array":
            return f"[{self.ty(v['type'])}; {v['len']}]"
        if k == "pat":
            return self.ty(v["type"])
        if k == "impl_trait":
            return "impl " + " + ".join(self.bound(b) for b in v)
        if k == "infer":
            return "_"
        if k == "raw_pointer":
            return ("*mut " if v["is_mutable"] else "*const ") + self.ty(v["type"])
        if k == "borrowed_ref":
            lt = v["lifetime"] + " " if v.get("lifetime") else ""
            mut = "mut " if v["is_mutable"] else ""
            return f"&{lt}{mut}{self.ty(v['type'])}"
        if k == "qualified_path":
            args = self.args(v.get("args"))
            if v.get("trait"):
                return f"<{self.ty(v['self_type'])} as {self.path(v['trait'])}>::{v['name']}{args}"
            return f"{self.ty(v['self_type'])}::{v['name']}{args}"
        return f"<{k}>"

    def path(self, p):
        return self.path_of(p.get("id"), p.get("path", "?")) + self.args(p.get("args"))

    def args(self, a):
        if not a:
            return ""
        k, v = one(a)
        if k == "angle_bracketed":
            parts = [self.generic_arg(x) for x in v["args"]]
            parts += [self.constraint(c) for c in v["constraints"]]
            return f"<{', '.join(parts)}>" if parts else ""
        if k == "parenthesized":
            out = f" -> {self.ty(v['output'])}" if v.get("output") else ""
            return f"({', '.join(self.ty(x) for x in v['inputs'])}){out}"
        if k == "return_type_notation":
            return "(..)"
        return ""

    def generic_arg(self, g):
        k, v = one(g)
        if k == "lifetime":
            return v
        if k == "type":
            return self.ty(v)
        if k == "const":
            return v.get("expr") or v.get("value") or "_"
        return "_"

    def term(self, t):
        k, v = one(t)
        if k == "type":
            return self.ty(v)
        return v.get("expr") or v.get("value") or "_"

    def constraint(self, c):
        name = c["name"] + self.args(c.get("args"))
        k, v = one(c["binding"])
        if k == "equality":
            return f"{name} = {self.term(v)}"
        return f"{name}: {' + '.join(self.bound(b) for b in v)}"

    def hrtb(self, params):
        if not params:
            return ""
        return f"for<{', '.join(self.param(p) for p in params)}> "

    def poly_trait(self, p):
        return self.hrtb(p.get("generic_params")) + self.path(p["trait"])

    def bound(self, b):
        k, v = one(b)
        if k == "trait_bound":
            mod = {"maybe": "?", "maybe_const": "~const "}.get(v.get("modifier"), "")
            return self.hrtb(v.get("generic_params")) + mod + self.path(v["trait"])
        if k == "outlives":
            return v
        if k == "use":
            parts = []
            for x in v:
                parts.append(x if isinstance(x, str) else one(x)[1])
            return f"use<{', '.join(parts)}>"
        return f"<{k}>"

    def param(self, p):
        k, v = one(p["kind"])
        if k == "lifetime":
            out = v.get("outlives") or []
            return p["name"] + (f": {' + '.join(out)}" if out else "")
        if k == "type":
            s = p["name"]
            if v.get("bounds"):
                s += ": " + " + ".join(self.bound(b) for b in v["bounds"])
            if v.get("default"):
                s += " = " + self.ty(v["default"])
            return s
        if k == "const":
            s = f"const {p['name']}: {self.ty(v['type'])}"
            if v.get("default"):
                s += f" = {v['default']}"
            return s
        return p["name"]

    def generics(self, g):
        """(`<params>`, ` where ...`) of a Generics, leaving out `impl Trait` arguments' own."""
        params = [p for p in g.get("params", [])
                  if not (one(p["kind"])[0] == "type" and one(p["kind"])[1].get("is_synthetic"))]
        head = f"<{', '.join(self.param(p) for p in params)}>" if params else ""
        preds = []
        for w in g.get("where_predicates", []):
            k, v = one(w)
            if k == "bound_predicate":
                preds.append(f"{self.hrtb(v.get('generic_params'))}{self.ty(v['type'])}: "
                             + " + ".join(self.bound(b) for b in v["bounds"]))
            elif k == "lifetime_predicate":
                preds.append(f"{v['lifetime']}: {' + '.join(v['outlives'])}")
            elif k == "eq_predicate":
                preds.append(f"{self.ty(v['lhs'])} = {self.term(v['rhs'])}")
        where = f" where {', '.join(preds)}" if preds else ""
        return head, where

    def header(self, h):
        s = ""
        if h.get("is_const"):
            s += "const "
        if h.get("is_async"):
            s += "async "
        if h.get("is_unsafe"):
            s += "unsafe "
        abi = h.get("abi", "Rust")
        if abi != "Rust":
            name = abi if isinstance(abi, str) else one(abi)[0]
            s += f'extern "{name}" '
        return s

    def sig(self, s, with_names=True):
        args = []
        for name, t in s["inputs"]:
            if with_names and name == "self":
                k, v = one(t)
                if k == "generic" and v == "Self":
                    args.append("self")
                    continue
                if k == "borrowed_ref" and one(v["type"]) == ("generic", "Self"):
                    lt = v["lifetime"] + " " if v.get("lifetime") else ""
                    args.append(f"&{lt}{'mut ' if v['is_mutable'] else ''}self")
                    continue
            args.append(f"{name}: {self.ty(t)}" if with_names else self.ty(t))
        if s.get("is_c_variadic"):
            args.append("...")
        out = f" -> {self.ty(s['output'])}" if s.get("output") else ""
        return f"({', '.join(args)}){out}"

    # ---- items ------------------------------------------------------------------------------

    @staticmethod
    def markers(it):
        m = ""
        if it.get("deprecation"):
            m += "#[deprecated] "
        if any(one(a)[0] == "non_exhaustive" for a in it.get("attrs", [])):
            m += "#[non_exhaustive] "
        return m

    def emit(self, owner, order, text):
        # Sorted by the owning item's path (segment-wise, so a module's items follow it), then
        # header before members before implementations, then the text.
        key = text
        while key.startswith("#["):
            key = key.split("] ", 1)[1]
        self.lines.add((tuple(owner.split("::")), order, key, text))

    def walk(self):
        """Records every public path of every reachable item, then renders them."""
        found = []  # (path, item)
        self.collect(self.root, self.crate, found, set())
        for path, it in found:
            if it["id"] is not None:
                self.public_paths.setdefault(it["id"], set()).add(path)
        for path, it in found:
            canonical = None if it["id"] is None else self.canonical(it["id"])
            if canonical is None or canonical == path:
                self.render(path, it)
            else:
                # Another path to an item listed in full under its shortest path.
                self.emit(path, 0, f"pub use {path} = {canonical}")
        return [text for *_, text in sorted(self.lines)]

    def collect(self, module, prefix, found, stack):
        if module["id"] in stack:
            return
        stack = stack | {module["id"]}
        for cid in module["inner"]["module"]["items"]:
            it = self.item(cid)
            if it is None:
                continue
            k, v = one(it["inner"])
            if k == "use":
                self.collect_use(it, v, prefix, found, stack)
            elif k == "impl" or it.get("visibility") != "public":
                continue
            elif it.get("name"):
                self.add(f"{prefix}::{it['name']}", it, found, stack)

    def collect_use(self, it, use, prefix, found, stack):
        if it.get("visibility") != "public":
            return
        target = self.item(use.get("id"))
        if use["is_glob"]:
            if target is not None and one(target["inner"])[0] == "module":
                self.collect(target, prefix, found, stack)
            elif target is not None and one(target["inner"])[0] == "enum":
                for vid in target["inner"]["enum"]["variants"]:
                    var = self.item(vid)
                    if var:
                        found.append((f"{prefix}::{var['name']}", var))
            else:
                found.append((f"{prefix}::*", {"id": None, "inner": {"use": use}, "attrs": []}))
            return
        if target is not None:
            self.add(f"{prefix}::{use['name']}", target, found, stack)
        else:
            found.append((f"{prefix}::{use['name']}", {"id": None, "inner": {"use": use},
                                                        "attrs": []}))

    def add(self, path, it, found, stack):
        found.append((path, it))
        if one(it["inner"])[0] == "module":
            self.collect(it, path, found, stack)

    def render(self, path, it):
        k, v = one(it["inner"])
        mk = self.markers(it)
        if k == "module":
            self.emit(path, 0, f"{mk}pub mod {path}")
        elif k == "use":
            # A re-export of something rustdoc did not inline (an external crate or module).
            src = self.path_of(v.get("id"), v["source"])
            if v["is_glob"]:
                self.emit(path, 0, f"pub use {path[:-3]}::{src}::*")
            else:
                self.emit(path, 0, f"pub use {path} = {src}")
        elif k == "extern_crate":
            self.emit(path, 0, f"pub extern crate {path} = {v['name']}")
        elif k in ("struct", "union"):
            self.render_struct(path, it, k, v, mk)
        elif k == "enum":
            head, where = self.generics(v["generics"])
            stripped = " { /* some variants hidden */ }" if v.get("has_stripped_variants") else ""
            self.emit(path, 0, f"{mk}pub enum {path}{head}{where}{stripped}")
            for vid in v["variants"]:
                self.render_variant(path, self.item(vid))
            self.render_impls(path, v["impls"])
        elif k == "variant":
            self.render_variant(path.rsplit("::", 1)[0], it, alias=path)
        elif k == "function":
            self.emit(path, 0, f"{mk}pub {self.function(path, v)}")
        elif k == "trait":
            self.render_trait(path, it, v, mk)
        elif k == "trait_alias":
            head, where = self.generics(v["generics"])
            bounds = " + ".join(self.bound(b) for b in v["params"])
            self.emit(path, 0, f"{mk}pub trait {path}{head} = {bounds}{where}")
        elif k == "type_alias":
            head, where = self.generics(v["generics"])
            self.emit(path, 0, f"{mk}pub type {path}{head}{where} = {self.ty(v['type'])}")
        elif k == "constant":
            c = v["const"]
            self.emit(path, 0, f"{mk}pub const {path}: {self.ty(v['type'])} = {c.get('expr')}")
        elif k == "static":
            mut = "mut " if v.get("is_mutable") else ""
            self.emit(path, 0, f"{mk}pub static {mut}{path}: {self.ty(v['type'])}")
        elif k == "macro":
            self.emit(path, 0, f"{mk}pub macro {path}!")
        elif k == "proc_macro":
            kind = v["kind"]
            helpers = v.get("helpers") or []
            if kind == "attr":
                self.emit(path, 0, f"{mk}pub macro #[{path}]")
            elif kind == "derive":
                extra = f" (helper attributes: {', '.join(helpers)})" if helpers else ""
                self.emit(path, 0, f"{mk}pub macro #[derive({path})]{extra}")
            else:
                self.emit(path, 0, f"{mk}pub macro {path}!")
        elif k in ("primitive", "extern_type"):
            self.emit(path, 0, f"{mk}pub {k} {path}")
        else:
            self.emit(path, 0, f"{mk}pub <{k}> {path}")

    def function(self, path, f):
        head, where = self.generics(f["generics"])
        return f"{self.header(f['header'])}fn {path}{head}{self.sig(f['sig'])}{where}"

    def fields(self, ids):
        """`(pub A, _)`-style rendering of a tuple struct or variant's fields."""
        parts = []
        for fid in ids:
            f = self.item(fid)
            pub = "pub " if f and f.get("visibility") == "public" else ""
            parts.append(pub + self.ty(f["inner"]["struct_field"]) if f else "_")
        return f"({', '.join(parts)})"

    def render_struct(self, path, it, k, v, mk):
        head, where = self.generics(v["generics"])
        kind, body = one(v["kind"]) if k == "struct" else ("plain", v)
        if kind == "unit":
            self.emit(path, 0, f"{mk}pub {k} {path}{head}{where};")
        elif kind == "tuple":
            self.emit(path, 0, f"{mk}pub {k} {path}{head}{self.fields(body)}{where};")
        else:
            hidden = " { /* private fields */ }" if body.get("has_stripped_fields") else ""
            self.emit(path, 0, f"{mk}pub {k} {path}{head}{where}{hidden}")
            for fid in body["fields"]:
                f = self.item(fid)
                if f is not None and f.get("visibility") == "public":
                    fmk = self.markers(f)
                    self.emit(path, 1, f"{fmk}pub {path}::{f['name']}: "
                                       f"{self.ty(f['inner']['struct_field'])}")
        self.render_impls(path, v["impls"])

    def render_variant(self, enum_path, var, alias=None):
        if var is None:
            return
        v = var["inner"]["variant"]
        path = alias or f"{enum_path}::{var['name']}"
        kind, body = one(v["kind"])
        if kind == "tuple":
            shape = self.fields(body)
        elif kind == "struct":
            parts = []
            for fid in body["fields"]:
                f = self.item(fid)
                if f is not None:
                    parts.append(f"{f['name']}: {self.ty(f['inner']['struct_field'])}")
            if body.get("has_stripped_fields"):
                parts.append("..")
            shape = " { " + ", ".join(parts) + " }" if parts else " {}"
        else:
            shape = ""
        disc = f" = {v['discriminant']['expr']}" if v.get("discriminant") else ""
        owner = enum_path if alias is None else alias
        self.emit(owner, 1 if alias is None else 0,
                  f"{self.markers(var)}pub {path}{shape}{disc}")

    def render_impls(self, path, impl_ids):
        for iid in impl_ids:
            imp = self.item(iid)
            if imp is None:
                continue
            v = imp["inner"]["impl"]
            if v["trait"] is None:
                for mid in v["items"]:
                    m = self.item(mid)
                    if m is not None and m.get("visibility") == "public":
                        self.assoc(path, m, 2, in_trait=False)
            elif v.get("blanket_impl") is None:
                name = self.path_of(v["trait"].get("id"), v["trait"].get("path"))
                if name in INTERNAL_TRAITS or (v.get("is_synthetic") and name not in AUTO_TRAITS):
                    continue
                self.emit(path, 3, self.impl_line(imp, v))
                for mid in v["items"]:
                    m = self.item(mid)
                    if m is not None and one(m["inner"])[0] == "assoc_type":
                        t = m["inner"]["assoc_type"]
                        self.emit(path, 3, f"{self.impl_line(imp, v)} {{ type {m['name']} = "
                                           f"{self.ty(t.get('type'))} }}")

    def impl_line(self, imp, v):
        head, where = self.generics(v["generics"])
        neg = "!" if v.get("is_negative") else ""
        unsafe = "unsafe " if v.get("is_unsafe") else ""
        return f"{unsafe}impl{head} {neg}{self.path(v['trait'])} for {self.ty(v['for'])}{where}"

    def assoc(self, owner, m, order, in_trait):
        k, v = one(m["inner"])
        mk = self.markers(m)
        path = f"{owner}::{m['name']}"
        vis = "" if in_trait else "pub "
        if k == "function":
            body = " { .. }" if in_trait and v.get("has_body") else ""
            self.emit(owner, order, f"{mk}{vis}{self.function(path, v)}{body}")
        elif k == "assoc_const":
            val = f" = {v['value']}" if in_trait and v.get("value") else ""
            self.emit(owner, order, f"{mk}{vis}const {path}: {self.ty(v['type'])}{val}")
        elif k == "assoc_type":
            head, where = self.generics(v["generics"])
            bounds = v.get("bounds") or []
            b = ": " + " + ".join(self.bound(x) for x in bounds) if bounds else ""
            default = f" = {self.ty(v['type'])}" if v.get("type") else ""
            self.emit(owner, order, f"{mk}{vis}type {path}{head}{b}{where}{default}")

    def render_trait(self, path, it, v, mk):
        head, where = self.generics(v["generics"])
        bounds = v.get("bounds") or []
        sup = ": " + " + ".join(self.bound(b) for b in bounds) if bounds else ""
        flags = ("unsafe " if v.get("is_unsafe") else "") + ("auto " if v.get("is_auto") else "")
        dyn = "" if v.get("is_dyn_compatible", True) else " /* not dyn-compatible */"
        self.emit(path, 0, f"{mk}pub {flags}trait {path}{head}{sup}{where}{dyn}")
        for mid in v["items"]:
            m = self.item(mid)
            if m is not None:
                self.assoc(path, m, 2, in_trait=True)
        for iid in v.get("implementations") or []:
            imp = self.item(iid)
            # Blanket implementations of our own traits count (`impl<T: A> B for T`).
            if imp is not None:
                self.emit(path, 3, self.impl_line(imp, imp["inner"]["impl"]))


def render(doc, siblings=()):
    return Renderer(doc, siblings).walk()


# ---- self-test ---------------------------------------------------------------------------------

def _selftest():
    G0 = {"params": [], "where_predicates": []}
    H0 = {"is_const": False, "is_unsafe": False, "is_async": False, "abi": "Rust"}

    def item(id_, name, inner, vis="public", attrs=(), dep=None):
        return {"id": id_, "crate_id": 0, "name": name, "span": None, "visibility": vis,
                "docs": None, "links": {}, "attrs": list(attrs), "deprecation": dep,
                "inner": inner}

    string = {"resolved_path": {"path": "String", "id": 100, "args": None}}
    items = [
        item(0, "demo", {"module": {"is_crate": True, "items": [1, 2, 6, 10, 20, 30],
                                    "is_stripped": False}}),
        item(1, "inner", {"module": {"is_crate": False, "items": [3], "is_stripped": False}},
             vis="crate"),
        # pub use inner::Config as Settings;
        item(2, None, {"use": {"source": "inner::Config", "name": "Settings", "id": 3,
                               "is_glob": False}}),
        item(3, "Config", {"struct": {"kind": {"plain": {"fields": [4, 5],
                                                         "has_stripped_fields": True}},
                                      "generics": G0, "impls": [7, 8, 9]}},
             attrs=["non_exhaustive"]),
        item(4, "name", {"struct_field": string}),
        item(5, "secret", {"struct_field": {"primitive": "u8"}}, vis="crate"),
        item(6, "Kind", {"enum": {"generics": G0, "has_stripped_variants": False,
                                  "variants": [11, 12], "impls": []}}),
        item(7, None, {"impl": {"is_unsafe": False, "generics": G0,
                                "provided_trait_methods": [], "trait": None,
                                "for": {"resolved_path": {"path": "Config", "id": 3,
                                                          "args": None}},
                                "items": [13], "is_negative": False, "is_synthetic": False,
                                "blanket_impl": None}}, vis="default"),
        item(8, None, {"impl": {"is_unsafe": False, "generics": G0,
                                "provided_trait_methods": [],
                                "trait": {"path": "Send", "id": 101, "args": None},
                                "for": {"resolved_path": {"path": "Config", "id": 3,
                                                          "args": None}},
                                "items": [], "is_negative": False, "is_synthetic": True,
                                "blanket_impl": None}}, vis="default"),
        item(9, None, {"impl": {"is_unsafe": False, "generics": {
            "params": [{"name": "T", "kind": {"type": {"bounds": [], "default": None,
                                                        "is_synthetic": False}}}],
            "where_predicates": []},
            "provided_trait_methods": [],
            "trait": {"path": "Into", "id": 102, "args": None},
            "for": {"generic": "T"}, "items": [], "is_negative": False,
            "is_synthetic": False, "blanket_impl": {"generic": "T"}}}, vis="default"),
        item(10, "parse", {"function": {
            "sig": {"inputs": [["input", {"borrowed_ref": {"lifetime": None,
                                                           "is_mutable": False,
                                                           "type": {"primitive": "str"}}}],
                               ["extra", {"impl_trait": [{"trait_bound": {
                                   "trait": {"path": "Into", "id": 102, "args": {
                                       "angle_bracketed": {"args": [{"type": string}],
                                                           "constraints": []}}},
                                   "generic_params": [], "modifier": "none"}}]}]],
                    "output": {"resolved_path": {"path": "Option", "id": 103, "args": {
                        "angle_bracketed": {"args": [{"type": {"resolved_path": {
                            "path": "Config", "id": 3, "args": None}}}],
                            "constraints": []}}}},
                    "is_c_variadic": False},
            "generics": {"params": [{"name": "impl Into<String>", "kind": {"type": {
                "bounds": [], "default": None, "is_synthetic": True}}}],
                "where_predicates": []},
            "header": dict(H0, is_const=True), "has_body": True}},
            dep={"since": None, "note": None}),
        item(11, "A", {"variant": {"kind": "plain", "discriminant": None}}, vis="default"),
        item(12, "B", {"variant": {"kind": {"tuple": [14, None]}, "discriminant": None}},
             vis="default", attrs=["non_exhaustive"]),
        item(13, "with_name", {"function": {
            "sig": {"inputs": [["self", {"generic": "Self"}], ["name", string]],
                    "output": {"generic": "Self"}, "is_c_variadic": False},
            "generics": G0, "header": H0, "has_body": True}}),
        item(14, "0", {"struct_field": {"primitive": "u32"}}, vis="default"),
        item(20, "Handler", {"trait": {"is_auto": False, "is_unsafe": False,
                                       "is_dyn_compatible": True, "items": [21, 22],
                                       "generics": G0, "bounds": [{"trait_bound": {
                                           "trait": {"path": "Send", "id": 101, "args": None},
                                           "generic_params": [], "modifier": "none"}}],
                                       "implementations": []}}),
        item(21, "call", {"function": {
            "sig": {"inputs": [["self", {"borrowed_ref": {"lifetime": None,
                                                          "is_mutable": True,
                                                          "type": {"generic": "Self"}}}]],
                    "output": None, "is_c_variadic": False},
            "generics": G0, "header": dict(H0, is_async=True), "has_body": False}},
            vis="default"),
        item(22, "name", {"function": {
            "sig": {"inputs": [["self", {"borrowed_ref": {"lifetime": None,
                                                          "is_mutable": False,
                                                          "type": {"generic": "Self"}}}]],
                    "output": {"borrowed_ref": {"lifetime": "'static", "is_mutable": False,
                                                "type": {"primitive": "str"}}},
                    "is_c_variadic": False},
            "generics": G0, "header": H0, "has_body": True}}, vis="default"),
        item(30, None, {"use": {"source": "other_crate", "name": "other", "id": 104,
                                "is_glob": False}}),
    ]
    doc = {"root": 0, "crate_version": None, "includes_private": False,
           "index": {str(i["id"]): i for i in items},
           "paths": {
               "100": {"crate_id": 1, "path": ["alloc", "string", "String"], "kind": "struct"},
               "101": {"crate_id": 1, "path": ["core", "marker", "Send"], "kind": "trait"},
               "102": {"crate_id": 1, "path": ["core", "convert", "Into"], "kind": "trait"},
               "103": {"crate_id": 1, "path": ["core", "option", "Option"], "kind": "enum"},
               "104": {"crate_id": 2, "path": ["other_crate"], "kind": "module"},
           },
           "external_crates": {}, "target": {}, "format_version": 57}
    expected = [
        "pub trait demo::Handler: Send",
        "async fn demo::Handler::call(&mut self)",
        "fn demo::Handler::name(&self) -> &'static str { .. }",
        "pub enum demo::Kind",
        "pub demo::Kind::A",
        "#[non_exhaustive] pub demo::Kind::B(u32, _)",
        "#[non_exhaustive] pub struct demo::Settings { /* private fields */ }",
        "pub demo::Settings::name: String",
        "pub fn demo::Settings::with_name(self, name: String) -> Self",
        "impl Send for demo::Settings",
        "pub use demo::other = other_crate",
        "#[deprecated] pub const fn demo::parse(input: &str, extra: impl Into<String>)"
        " -> Option<demo::Settings>",
    ]
    got = render(doc)
    if got != expected:
        sys.stderr.write("public_api.py self-test failed:\n")
        import difflib
        sys.stderr.writelines(difflib.unified_diff([e + "\n" for e in expected],
                                                   [g + "\n" for g in got],
                                                   "expected", "rendered"))
        return 1
    print("public_api.py self-test: ok")
    return 0


def main(argv):
    args = argv[1:]
    if args == ["--selftest"]:
        return _selftest()
    out_dir = None
    if args[:1] == ["--out-dir"] and len(args) >= 2:
        out_dir, args = args[1], args[2:]
    if not args or any(a.startswith("-") for a in args):
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    docs = []
    for name in args:
        with open(name, encoding="utf-8") as f:
            docs.append(json.load(f))
    if out_dir is None:
        sys.stdout.write("".join(line + "\n" for line in render(docs[0], docs[1:])))
        return 0
    # Every crate given, each named by the others' public paths, into OUT_DIR/CRATE.txt.
    import os
    for i, doc in enumerate(docs):
        lines = render(doc, docs[:i] + docs[i + 1:])
        name = doc["index"][str(doc["root"])]["name"].replace("_", "-")
        with open(os.path.join(out_dir, name + ".txt"), "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
