"""Renders a crate's public API and checks it against its baseline.

    cli.py show   rust JSON | c HEADER NM_OUTPUT
    cli.py check  BASELINE VERSION rust JSON | c HEADER NM_OUTPUT
    cli.py update BASELINE CRATE VERSION rust JSON | c HEADER NM_OUTPUT

JSON is the crate's rustdoc JSON, HEADER its C header, NM_OUTPUT what
`nm -D --defined-only` prints for its shared library. `check` exits 1 when
the API breaks the baseline's and VERSION is no breaking bump from the
baseline's version (baseline.py has the rules); `update` writes the
current API as the baseline of CRATE at VERSION. scripts/api.sh runs this.
"""

import json
import os
import sys

import baseline
import c_header
import rustdoc

WHAT = {"rust": "public Rust API", "c": "C API (header and exported symbols)"}


def render(kind, args):
    if kind == "rust":
        with open(args[0]) as f:
            krate = json.load(f)
        if krate.get("format_version") != 57:
            print(
                f"api: note: rustdoc JSON format {krate.get('format_version')}, this renderer reads 57; "
                "a line that changed in form only may show as changed",
                file=sys.stderr,
            )
        return rustdoc.render(krate)
    if kind == "c":
        with open(args[0]) as h, open(args[1]) as nm:
            return c_header.render(h.read(), nm.read())
    raise SystemExit(f"api: unknown kind {kind!r} (rust or c)")


def main(argv):
    if not argv:
        raise SystemExit(__doc__)
    cmd = argv[0]
    if cmd == "show":
        for text, _ in render(argv[1], argv[2:]):
            print(text)
        return 0
    if cmd == "check":
        path, version, kind = argv[1], argv[2], argv[3]
        if not os.path.exists(path):
            print(f"api: no baseline {path}; `scripts/api.sh update` records the current API as one")
            return 1
        crate, base_version, base_lines = baseline.read(path)
        ok = baseline.verdict(crate, version, base_version, base_lines, render(kind, argv[4:]))
        return 0 if ok else 1
    if cmd == "update":
        path, crate, version, kind = argv[1], argv[2], argv[3], argv[4]
        lines = render(kind, argv[5:])
        baseline.write(path, crate, version, lines, WHAT[kind])
        print(f"api: {path}: the {WHAT[kind]} of {crate} {version}, {len(lines)} lines")
        return 0
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
