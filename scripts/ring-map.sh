#!/usr/bin/env bash
# Checks that the ring's map (the comment at the top of
# vecring-core/src/ring/mod.rs) is the ring as it is:
#
#   1. every source file of the ring (tests aside) is on the map, and every
#      file the map names exists;
#   2. layers: a file imports (`super::X`, `crate::ring::X`) only files on
#      the map's lines above its own, or on its own line;
#   3. "A type's methods are spread over ...": each type's inherent `impl`
#      blocks are in exactly the files the map lists for it.
#
#   scripts/ring-map.sh [-v]     (-v: also print every file's imports)
#
# RING_SRC=DIR checks another copy of the ring's sources.
#
# Exits 1 and names what differs if the map is stale.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PY'
import os, re, sys

SRC = os.environ.get("RING_SRC", "vecring-core/src/ring")
verbose = "-v" in sys.argv[1:]
text = open(os.path.join(SRC, "mod.rs")).read()

files = sorted(f[:-3] for f in os.listdir(SRC)
               if f.endswith(".rs") and f != "mod.rs" and not f.endswith("_tests.rs"))

# The map: the `// - ` items after "// The files", each a line of the
# layering; continuation lines ("//   ...") belong to the item above.
lines = text.splitlines()
start = next(i for i, l in enumerate(lines) if l.startswith("// The files"))
items, spread_text, in_items = [], "", False
for l in lines[start:]:
    if not l.startswith("//"):
        break
    body = l[2:].strip()
    if body.startswith("- "):
        items.append(body[2:])
        in_items = True
    elif in_items and l.startswith("//   "):
        items[-1] += " " + body
    else:
        in_items = False
        spread_text += " " + body
level = {}
for i, item in enumerate(items):
    for name in re.findall(r"`(\w+)`", item):
        if name in files:
            level.setdefault(name, i)
problems = []
for f in files:
    if f not in level:
        problems.append(f"ring/{f}.rs is not on the map in ring/mod.rs")
for i, item in enumerate(items):
    for name in re.findall(r"`(\w+)`", item):
        if re.fullmatch(r"[a-z_]+", name) and name not in files and name not in ("abi", "geometry", "sync", "heap_channel", "model_read", "model_write", "put_desc", "prepare_wait", "recv", "send"):
            if not os.path.exists(os.path.join(SRC, name)):
                problems.append(f"the map names `{name}`, which is no file of the ring")

def code(path):
    out = []
    for l in open(path).read().splitlines():
        s = l.split("//")[0]
        out.append(s)
    return "\n".join(out)

def imports(src):
    names = set()
    for m in re.finditer(r"(?:super|crate::ring)::(\{[^}]*\}|\w+)", src):
        g = m.group(1)
        if g.startswith("{"):
            for part in re.split(r"[,\s]+", g[1:-1]):
                head = part.split("::")[0].strip()
                if head:
                    names.add(head)
        else:
            names.add(g)
    return {n for n in names if n in files}

for f in files:
    if f not in level:
        continue
    used = imports(code(os.path.join(SRC, f + ".rs")))
    if verbose:
        print(f"{f} (line {level[f]}): {sorted(used)}")
    for u in used:
        if u in level and level[u] > level[f]:
            problems.append(f"ring/{f}.rs (map line {level[f] + 1}) imports {u} (line {level[u] + 1}), below it")

# "`Shape` over `descriptor`, `desc_write` and `copy`; ..."
for m in re.finditer(r"`(\w+)` over ((?:`\w+`(?:,\s*|\s+and\s+)?)+)", spread_text):
    ty, listed = m.group(1), set(re.findall(r"`(\w+)`", m.group(2)))
    found = set()
    pat = re.compile(r"^impl(?:<[^>]*>)?\s+" + ty + r"\b(?!\s*for\b)[^{]*\{", re.M)
    for f in files:
        if pat.search(code(os.path.join(SRC, f + ".rs"))):
            found.add(f)
    if found != listed:
        problems.append(f"`{ty}`'s methods are in {sorted(found)}, the map says {sorted(listed)}")

if problems:
    print("ring map: " + "\nring map: ".join(problems))
    sys.exit(1)
print(f"ring map: {len(files)} files on {len(items)} lines, imports downward, "
      "each type's methods where the map says")
PY
