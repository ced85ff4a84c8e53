"""A crate's API baseline, the API of its last release, and the semver
verdict on the current API against it.

A baseline file starts with the crate and the version it is the API of,
then has one line per item (as rustdoc.py and c_header.py render them):

    // vecring-core 0.1.0
    // ...comment lines...
    pub mod vecring_core::geometry
    ...

The verdict, by the rules of semver (https://semver.org, with Cargo's
reading of 0.x versions):

  - a line of the baseline missing from the current API is an item removed
    or changed (a changed item is its old line removed and its new one
    added): a breaking change;
  - a new line is an addition, compatible, except a line that breaks by
    its appearance alone (a field of a struct users build by a literal, a
    variant of an enum users match exhaustively, a required trait item, a
    field of a C struct that cannot grow);
  - breaking changes pass only when the crate's version is a breaking bump
    from the baseline's: a new major version, or for 0.y.z a new minor
    (0.1.4 -> 0.2.0), or for 0.0.z a new patch.
"""

import re

HEADER = re.compile(r"^// (\S+) (\S+)$")


def parse_version(text):
    """(major, minor, patch) of a version; a pre-release (`0.2.0-rc.1`)
    counts as the version it leads to."""
    m = re.match(r"^(\d+)\.(\d+)\.(\d+)(?:[-+].*)?$", text)
    if not m:
        raise ValueError(f"not a semver version: {text!r}")
    return tuple(int(x) for x in m.groups())


def breaking_bump(old, new):
    """Whether `new` may break what `old` offered."""
    o, n = parse_version(old), parse_version(new)
    if o[0] > 0 or n[0] > 0:
        return n[0] > o[0]
    if o[1] > 0 or n[1] > 0:
        return n[1] > o[1]
    return n[2] > o[2]


def read(path):
    """(crate, version, lines) of a baseline file."""
    with open(path) as f:
        text = f.read().splitlines()
    m = HEADER.match(text[0]) if text else None
    if not m:
        raise ValueError(f"{path}: the first line must be '// <crate> <version>'")
    lines = [line for line in text[1:] if line and not line.startswith("// ")]
    return m.group(1), m.group(2), lines


def write(path, crate, version, lines, what):
    with open(path, "w") as f:
        f.write(f"// {crate} {version}\n")
        f.write(f"// The {what} of {crate} {version}, its last release: one item per line.\n")
        f.write("// scripts/api.sh checks the crate against it; `scripts/api.sh update`\n")
        f.write("// rewrites it at a release (docs/api.md).\n")
        for text, _ in lines:
            f.write(text + "\n")


def new_parent(text, base_lines):
    """Whether `text`, a field or variant ("pub PATH::name..."), belongs to
    a struct, enum or union the baseline does not have."""
    if not text.startswith("pub "):
        return False
    item = text[len("pub "):]
    # The item's own path ends before its `: type`, `(..)`, ` {..}` or ` = n`.
    cut = [i for i in (item.find(": "), item.find("("), item.find(" {"), item.find(" =")) if i >= 0]
    own = item[: min(cut, default=len(item))]
    if "::" not in own:
        return False
    parent = own.rsplit("::", 1)[0]
    for b in base_lines:
        for kind in ("pub struct ", "pub enum ", "pub union "):
            if b.startswith(kind + parent):
                rest = b[len(kind + parent):]
                if rest == "" or rest[0] in " <{(":
                    return False
    return True


def verdict(crate, version, base_version, base_lines, lines):
    """Prints what changed and returns whether the check passes."""
    if parse_version(version) < parse_version(base_version):
        print(f"api: {crate} is at {version}, older than its baseline's {base_version}")
        return False
    current = {text for text, _ in lines}
    base = set(base_lines)
    removed = [text for text in base_lines if text not in current]
    added = [(text, breaks) for text, breaks in lines if text not in base]
    # A field or variant of a struct or enum that is itself new breaks
    # nobody: no code builds or matches a type that did not exist.
    breaking_added = [text for text, breaks in added if breaks and not new_parent(text, base_lines)]
    compatible_added = [text for text, _ in added if text not in breaking_added]
    if removed:
        print(f"api: {crate}: removed or changed since {base_version} (breaking):")
        for text in removed:
            print(f"  - {text}")
    if breaking_added:
        print(f"api: {crate}: added since {base_version}, breaking users who build or match it exhaustively:")
        for text in breaking_added:
            print(f"  + {text}")
    if compatible_added:
        print(f"api: {crate}: added since {base_version} (compatible; a minor release for a 1.x crate):")
        for text in compatible_added:
            print(f"  + {text}")
    if not (removed or breaking_added):
        print(f"api: {crate} {version}: compatible with {base_version}")
        return True
    if breaking_bump(base_version, version):
        print(f"api: {crate} {version}: breaking changes allowed, a breaking release after {base_version}")
        return True
    print(
        f"api: FAIL: {crate} {version} breaks the API of {base_version} (above). Undo the change, or make "
        f"the next release a breaking one: its version in Cargo.toml "
        f"{next_breaking(base_version)} or later (docs/api.md)."
    )
    return False


def next_breaking(version):
    major, minor, patch = parse_version(version)
    if major > 0:
        return f"{major + 1}.0.0"
    if minor > 0:
        return f"0.{minor + 1}.0"
    return f"0.0.{patch + 1}"
