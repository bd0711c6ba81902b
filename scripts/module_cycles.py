#!/usr/bin/env python3
"""Module dependency cycles inside each crate of the workspace.

A node is a source file (a module); an edge A -> B means A names `crate::B…`, `super::…` that
resolves to B, or a child module it declares with `mod`. `#[cfg(test)]` modules are left out:
tests may reach anywhere. Prints every cycle found and exits 1 if there is one.

Usage: python3 scripts/module_cycles.py [crate_src_dir ...]   (default: every crate's src/)
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ["shared/src", "plugin/src", "webhook/src", "tests/src"]


def module_path(src: Path, file: Path) -> tuple:
    rel = file.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


def strip_tests(text: str) -> str:
    """Remove `#[cfg(test)] mod x { ... }` blocks (brace-matched)."""
    out, i = [], 0
    pattern = re.compile(r"#\[cfg\(test\)\]\s*(pub(\(crate\))?\s+)?mod\s+\w+\s*\{")
    while True:
        m = pattern.search(text, i)
        if not m:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j


def uses(text: str):
    # `use` items (with nested braces) and inline paths like `crate::a::b`
    for m in re.finditer(r"\b(crate|super|self)((?:::\w+)+)", text):
        yield m.group(1), [p for p in m.group(2).split("::") if p]


def graph(src: Path):
    modules = {}
    for file in src.rglob("*.rs"):
        if "bin" in file.relative_to(src).parts[:1]:
            continue
        modules[module_path(src, file)] = strip_tests(file.read_text())
    known = set(modules)
    edges = {m: set() for m in modules}
    for mod, text in modules.items():
        for root, parts in uses(text):
            if root == "crate":
                base = ()
            elif root == "super":
                base = mod[:-1]
                while parts and parts[0] == "super":
                    base, parts = base[:-1], parts[1:]
            else:
                base = mod
            target = base
            best = None
            for p in parts:
                target = target + (p,)
                if target in known:
                    best = target
            if best is not None and best != mod and not is_ancestor(best, mod):
                edges[mod].add(best)
    return edges


def is_ancestor(a: tuple, b: tuple) -> bool:
    return len(a) < len(b) and b[: len(a)] == a


def cycles(edges):
    found, index, low, stack, on, counter = [], {}, {}, [], set(), [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(comp)

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            strong(v)
    return found


def name(m):
    return "::".join(m) or "(crate root)"


def main():
    dirs = sys.argv[1:] or DEFAULT
    bad = False
    for d in dirs:
        src = (ROOT / d).resolve()
        edges = graph(src)
        # Files, then the crate's top-level modules (a directory's files together).
        top = {}
        for v, ws in edges.items():
            tv = v[:1]
            top.setdefault(tv, set()).update(w[:1] for w in ws if w[:1] != tv)
        comps = [("file", c) for c in cycles(edges)] + [("top-level module", c) for c in cycles(top)]
        for level, comp in comps:
            bad = True
            print(f"{d}: {level} cycle among " + ", ".join(sorted(name(m) for m in comp)))
        if not comps:
            print(f"{d}: no module cycle")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
