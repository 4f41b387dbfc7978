#!/usr/bin/env python3
"""Reports the structure of a crate's modules.

For crates/magpie/src (or the folder given): every import circle (a strongly connected set of
modules that import one another through `crate::` or `super::` paths, test modules left out),
largest first, with the imports that tie it; then every import from a module whose file sits
under core/ (the scheduler) into one under ext/ (the features: tracing, schedules, DWS core
sharing, topology, places, the race checker, the cache model), and every inherent `impl` block a
module under ext/ writes for a type declared under core/ (a feature's methods on a core type, which
the core could then call without importing anything). The
runtime crate keeps its modules' flat names (`crate::worker`) and places their files with
`#[path]` in lib.rs, so a module's name is its file's path without the core/ or ext/ folder.

    python3 scripts/import-circles.py [SRC] [--max-circle N] [--no-core-imports] [--cut FROM->TO]...
                                      [--layers A+B,C,...]

With --max-circle N it exits 1 when a circle has more than N modules, and with
--no-core-imports when a core module imports a feature or a feature adds methods to a core type, so it can guard a restructuring once
one has landed (scripts/test.sh runs both). Each --cut FROM->TO leaves one import out, to see what a
planned change would leave. --layers names folders of SRC from the top layer down, a layer's
sibling folders joined by `+` (`render+measure,model`): a module in one of them may import its
own folder's modules and those of the layers below, nothing above and no sibling; modules
outside every named folder (the commands) may import anything. It exits 1 when an import runs
the other way. Imports are read as text: a path written out in full
(`crate::a::b::C`), a `use crate::a::{b, c}` group, or `super::x`.
"""
import os
import re
import sys
from collections import defaultdict

WINGS = ("core", "ext")


def modules(root):
    """Module name -> source, and module name -> its wing (core, ext or None)."""
    mods = {}
    wing = {}
    for dp, _, fns in os.walk(root):
        for f in fns:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dp, f), root)[:-3].replace(os.sep, "::")
            if rel.endswith("::mod"):
                rel = rel[:-5]
            w = rel.split("::")[0]
            if w in WINGS and "::" in rel:
                rel = rel[len(w) + 2:]
            else:
                w = None
            wing[rel] = w
            with open(os.path.join(dp, f)) as fh:
                src = fh.read()
            # Leave out test modules (they sit at the end of a file).
            src = re.split(r"#\[cfg\((?:all\()?test", src)[0]
            # Leave out comments (doc links name modules without importing them).
            src = re.sub(r"//[^\n]*", "", src)
            mods[rel] = src
    return mods, wing


def edges(mods):
    names = set(mods)

    def resolve(path):
        parts = path.split("::")
        for k in range(len(parts), 0, -1):
            cand = "::".join(parts[:k])
            if cand in names:
                return cand
        return None

    out = defaultdict(set)
    for m, src in mods.items():
        for hit in re.finditer(r"crate::([A-Za-z_][A-Za-z0-9_:]*)(?:::\{([^}]*)\})?", src):
            base = hit.group(1).rstrip(":")
            targets = [resolve(base)]
            for item in (hit.group(2) or "").split(","):
                item = item.strip().split(" ")[0]
                if item and item != "self":
                    targets.append(resolve(base + "::" + item))
            out[m].update(t for t in targets if t and t != m and t != "lib")
        parent = m.rsplit("::", 1)[0] if "::" in m else ""
        for hit in re.finditer(r"super::([A-Za-z_][A-Za-z0-9_]*)", src):
            t = resolve((parent + "::" if parent else "") + hit.group(1)) or parent
            if t and t != m:
                out[m].add(t)
    return out


def feature_impls(mods, wing):
    """(feature module, core type, method) for each method an ext module declares for the crate
    (`pub(crate)`, `pub(super)`, `pub(in ...)`) in an inherent impl block of a type declared in a
    core module: a feature's method on a core type, which the core could call without importing
    anything. Public methods there are the feature's API on the core type (`Scope::spawn_at`)
    and private ones are out of the core's reach; a trait's methods need the trait imported."""
    def declared(src):
        return set(re.findall(r"\b(?:struct|enum|union)\s+([A-Z][A-Za-z0-9_]*)", src))

    core_types = set()
    for m, src in mods.items():
        if wing[m] == "core":
            core_types |= declared(src)
    found = []
    for m, src in sorted(mods.items()):
        if wing[m] != "ext":
            continue
        own = declared(src)
        for hit in re.finditer(r"^\s*impl\b(?:<[^>{]*>)?\s+([A-Za-z0-9_:]+)[^{;]*\{", src, re.M):
            if " for " in hit.group(0):
                continue
            path = hit.group(1)
            name = path.split("::")[-1]
            if name not in core_types or (name in own and "::" not in path):
                continue
            depth, i = 1, hit.end()
            while depth and i < len(src):
                depth += {"{": 1, "}": -1}.get(src[i], 0)
                i += 1
            body = src[hit.end():i]
            for f in re.findall(r"\bpub\((?:crate|super|in [^)]*)\)\s+(?:const\s+|unsafe\s+)*fn\s+(\w+)", body):
                found.append((m, name, f))
    return found


def circles(mods, out):
    index, low, stack, on, found = {}, {}, [], set(), []
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in out[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            c = []
            while True:
                w = stack.pop()
                on.discard(w)
                c.append(w)
                if w == v:
                    break
            if len(c) > 1:
                found.append(sorted(c))

    for v in sorted(mods):
        if v not in index:
            visit(v)
    return sorted(found, key=len, reverse=True)


def main():
    args = sys.argv[1:]
    limit = None
    strict = "--no-core-imports" in args
    if strict:
        args.remove("--no-core-imports")
    if "--max-circle" in args:
        i = args.index("--max-circle")
        try:
            limit = int(args[i + 1])
        except (IndexError, ValueError):
            sys.exit("error: --max-circle takes a number")
        del args[i:i + 2]
    cuts = []
    while "--cut" in args:
        i = args.index("--cut")
        try:
            a, b = args[i + 1].split("->")
        except (IndexError, ValueError):
            sys.exit("error: --cut takes FROM->TO (two module paths)")
        cuts.append((a.strip(), b.strip()))
        del args[i:i + 2]
    layers = None
    if "--layers" in args:
        i = args.index("--layers")
        try:
            layers = [[f.strip() for f in layer.split("+") if f.strip()] for layer in args[i + 1].split(",")]
        except IndexError:
            sys.exit("error: --layers takes folders from the top layer down: A+B,C")
        if not all(layers):
            sys.exit("error: --layers: an empty layer")
        del args[i:i + 2]
    root = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "crates", "magpie", "src")
    if not os.path.isdir(root):
        sys.exit(f"error: {root} is not a folder")
    mods, wing = modules(root)
    out = edges(mods)
    for a, b in cuts:
        if b not in out.get(a, ()):
            sys.exit(f"error: --cut {a}->{b}: no such import")
        out[a].discard(b)
    cs = circles(mods, out)
    print(f"{len(mods)} modules, {sum(len(v) for v in out.values())} imports")
    for c in cs:
        members = set(c)
        print(f"circle of {len(c)}: {', '.join(c)}")
        for m in c:
            print(f"    {m} -> {', '.join(sorted(t for t in out[m] if t in members))}")
    crossing = [(m, t) for m in sorted(mods) for t in sorted(out[m])
                if wing[m] == "core" and wing[t] == "ext"]
    print(f"{len(crossing)} imports from core/ into ext/:")
    for m, t in crossing:
        print(f"    {m} -> {t}")
    added = feature_impls(mods, wing)
    print(f"{len(added)} methods of features on core types:")
    for m, t, f in added:
        print(f"    {m}: {t}::{f}")
    failed = False
    if strict and added:
        print(f"error: {len(added)} methods a feature adds to a core type for the crate (none "
              "allowed: the core reaches a feature through a hook)", file=sys.stderr)
        failed = True
    if layers is not None:
        def place(m):
            top = m.split("::")[0]
            for depth, layer in enumerate(layers):
                if top in layer:
                    return depth, top
            return None
        against = []
        for m in sorted(mods):
            pm = place(m)
            if pm is None:
                continue
            for t in sorted(out[m]):
                pt = place(t)
                if pt is None or (pt[1] != pm[1] and pt[0] <= pm[0]):
                    against.append((m, t))
        print(f"{len(against)} imports against the layers {' > '.join('+'.join(l) for l in layers)}:")
        for m, t in against:
            print(f"    {m} -> {t}")
        if against:
            print(f"error: {len(against)} imports run against the layers", file=sys.stderr)
            failed = True
    if limit is not None and cs and len(cs[0]) > limit:
        print(f"error: a circle of {len(cs[0])} modules (at most {limit} allowed)", file=sys.stderr)
        failed = True
    if strict and crossing:
        print(f"error: {len(crossing)} imports from core/ into ext/ (none allowed: features reach "
              "the core through core/hooks.rs)", file=sys.stderr)
        failed = True
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
