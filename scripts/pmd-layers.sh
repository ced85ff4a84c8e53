#!/usr/bin/env bash
# Checks the import structure of the DPDK driver (vecring-pmd/src), as
# vecring-pmd/src/lib.rs states it:
#
#   1. no import circle between files: every `crate::`, `super::` and
#      `self::` path in a file's code (comments left out) points to the file
#      of the module it names, and the graph of these imports has no cycle;
#   2. layers: a file imports only from its own directory or from a layer
#      below its own (sys, devargs < datapath < port < ethdev < mp < probe);
#   3. one MAX_QUEUES: the driver defines no constant of that name (it uses
#      vecring_core::MAX_QUEUES).
#
#   scripts/pmd-layers.sh [-v]     (-v: also print every file's imports)
#
# PMD_SRC=DIR checks another copy of the driver's sources.
#
# Exits 1 and names the files at fault if a rule is broken.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'EOF'
import os, re, sys

SRC = os.environ.get("PMD_SRC", "vecring-pmd/src")
LAYERS = {"sys": 0, "devargs": 0, "datapath": 1, "port": 2, "ethdev": 3, "mp": 4, "probe": 5, "lib": 6}
verbose = "-v" in sys.argv[1:]

def module_of(rel):
    """The module path of a file: ('datapath', 'rx') for datapath/rx.rs."""
    parts = rel[:-3].split("/")
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return tuple(parts)

files = {}
for root, _, names in os.walk(SRC):
    for n in names:
        if n.endswith(".rs"):
            rel = os.path.relpath(os.path.join(root, n), SRC)
            files[module_of(rel)] = rel

def code_of(text):
    """The text without comments and string literals."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)

def expand_use(tree):
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e']."""
    tree = re.sub(r"\s+", "", tree)
    m = re.match(r"^(.*?)::\{(.*)\}$", tree)
    if not m:
        return [tree]
    prefix, inner = m.groups()
    items, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    if cur:
        items.append(cur)
    out = []
    for it in items:
        for sub in expand_use(it):
            out.append(prefix if sub == "self" else prefix + "::" + sub)
    return out

def resolve(path, here, is_dir_module):
    """The file (module path) that `path`, written in module `here`, names
    (an inline module's path resolves to the file that holds it)."""
    segs = path.split("::")
    base = list(here)
    if segs[0] == "crate":
        base, segs = [], segs[1:]
    elif segs[0] in ("super", "self"):
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                base = base[:-1]
            segs = segs[1:]
    else:
        return None
    best = tuple(base)
    while best not in files:
        best = best[:-1]
    for k in range(1, len(segs) + 1):
        cand = tuple(base + segs[:k])
        if cand in files:
            best = cand
    return best

def inline_modules(code):
    """(start, end, name) of every inline `mod name { ... }` in `code`."""
    out = []
    for m in re.finditer(r"\bmod\s+(\w+)\s*\{", code):
        depth, j = 0, m.end() - 1
        while j < len(code):
            depth += code[j] == "{"
            depth -= code[j] == "}"
            if depth == 0:
                break
            j += 1
        out.append((m.start(), j, m.group(1)))
    return out

def module_at(mod, inline, pos):
    """The module a position of the file of `mod` is in."""
    return mod + tuple(n for (a, b, n) in inline if a <= pos <= b)

edges = {m: set() for m in files}
for mod, rel in files.items():
    code = code_of(open(os.path.join(SRC, rel)).read())
    inline = inline_modules(code)
    paths = []
    for m in re.finditer(r"\buse\s+([^;]+);", code):
        paths += [(p, m.start()) for p in expand_use(m.group(1))]
    for m in re.finditer(r"\b(?:crate|super|self)(?:::\w+)+", code):
        if not any(u.start() <= m.start() < u.end() for u in re.finditer(r"\buse\s+[^;]+;", code)):
            paths.append((m.group(0), m.start()))
    for p, pos in paths:
        t = resolve(p, module_at(mod, inline, pos), rel.endswith("mod.rs"))
        if t is not None and t != mod:
            edges[mod].add(t)

def name(m):
    return files[m]

if verbose:
    for m in sorted(edges, key=name):
        print(f"{name(m)} -> {', '.join(sorted(name(t) for t in edges[m])) or '-'}")

bad = 0
# 1. Cycles (Tarjan's strongly connected components).
index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]
sys.setrecursionlimit(10000)
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
        sccs.append(comp)
for v in edges:
    if v not in index:
        strong(v)
for c in sccs:
    if len(c) > 1:
        bad += 1
        print("import circle: " + ", ".join(sorted(name(m) for m in c)))

# 2. Layers.
def layer(m):
    return m[0] if m else "lib"
unknown = {layer(m) for m in files} - set(LAYERS)
if unknown:
    print("pmd-layers: files outside every layer: " + ", ".join(sorted(unknown)))
    LAYERS.update({u: -1 for u in unknown})
for m, ts in edges.items():
    for t in ts:
        a, b = layer(m), layer(t)
        if a != b and LAYERS[b] >= LAYERS[a]:
            bad += 1
            print(f"layer: {name(m)} ({a}) imports {name(t)} ({b})")

# 3. One MAX_QUEUES.
for m, rel in files.items():
    code = code_of(open(os.path.join(SRC, rel)).read())
    if re.search(r"\bconst\s+MAX_QUEUES\b", code):
        bad += 1
        print(f"MAX_QUEUES defined in {rel} (use vecring_core::MAX_QUEUES)")

n_edges = sum(len(t) for t in edges.values())
if bad:
    print(f"pmd-layers: {bad} problem(s) in {len(files)} files, {n_edges} imports")
    sys.exit(1)
print(f"pmd-layers: {len(files)} files, {n_edges} imports between them: no circle, every import points to its own directory or a lower layer, one MAX_QUEUES")
EOF
