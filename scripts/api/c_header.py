"""The C API of libvecring, one line per item: the declarations of its
header and the symbols its shared library exports.

    int vecring_open(const vecring_options_t *, vecring_link_t **)
    struct vecring_frame #1: uint32_t len
    enum vecring_error VECRING_E_INVAL = -1
    #define VECRING_FRAME_COPIED 1u
    typedef struct vecring_link vecring_link_t
    symbol vecring_open (function)

A C program depends on more than the names: a prototype's parameter and
return types, each struct field's type and position (its offset), each
constant's value are compiled into it. So every one of these is part of a
line, and changing it changes the line; parameter names are not (renaming
one changes no caller) and are left out. A struct field is numbered by its
position: a field inserted before others changes theirs.

The header is read as written (comments removed, the `__cplusplus`
wrapper skipped), not through a preprocessor: it is the project's own, in
one plain style.

`render(header_text, nm_text)` returns `(text, adding_breaks)` pairs;
`adding_breaks` is true for a new field of a struct that cannot grow.
"""

import re

# Structs a newer library may make longer at their end without breaking
# programs built against the older header: the library learns how much of
# the struct a program knows from a size the program passes, and touches
# only that much. vecring_counters: vecring_counters(link, out, size)
# copies a prefix of `size` bytes. vecring_options_t: vecring_options_init
# (a macro) passes sizeof to vecring_options_init_size, which writes no
# more, and vecring_open reads only the `size` the struct carries.
GROWABLE = {"vecring_counters", "vecring_options"}

KEYWORDS = {
    "void", "char", "short", "int", "long", "float", "double", "signed", "unsigned",
    "_Bool", "const", "volatile", "restrict", "struct", "union", "enum",
}

TOKEN = re.compile(r'\.\.\.|<<|>>|"(?:\\.|[^"\\])*"|[A-Za-z_0-9]+|\S')


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def preprocess(text):
    """The header's code without preprocessor lines, and its `#define`s of
    a value (the include guard has none)."""
    code, defines, skip = [], [], 0
    lines = strip_comments(text).replace("\\\n", " ").split("\n")
    for line in lines:
        s = line.strip()
        if s.startswith("#"):
            directive = s[1:].strip()
            if skip:
                if directive.startswith("if"):
                    skip += 1
                elif directive.startswith("endif"):
                    skip -= 1
            elif re.match(r"(ifdef\s+__cplusplus|if\s+defined\s*\(?\s*__cplusplus)", directive):
                skip = 1
            elif directive.startswith("define"):
                m = re.match(r"define\s+(\w+(?:\([^)]*\))?)\s*(.*)", directive)
                if m and m.group(2):
                    defines.append(f"#define {m.group(1)} {' '.join(m.group(2).split())}")
            continue
        if not skip:
            code.append(line)
    return "\n".join(code), defines


def is_word(tok):
    return re.match(r'[A-Za-z_0-9"]', tok) is not None


def join(tokens):
    """Tokens as canonical text: `const char *`, `f(int, size_t)`, `A = -1`."""
    out = ""
    prev = None
    for tok in tokens:
        if prev is not None:
            if is_word(prev) and is_word(tok):
                out += " "
            elif prev == "," or tok == "=" or prev == "=":
                out += " "
            elif tok == "*" and (is_word(prev) or prev == ")"):
                out += " "
        out += tok
        prev = tok
    return out


def split_top(tokens, sep):
    """Tokens split at `sep` outside any bracket."""
    parts, cur, depth = [], [], 0
    for tok in tokens:
        if tok in "([{":
            depth += 1
        elif tok in ")]}":
            depth -= 1
        if tok == sep and depth == 0:
            parts.append(cur)
            cur = []
        else:
            cur.append(tok)
    if cur:
        parts.append(cur)
    return parts


def closing(tokens, i):
    """Index of the bracket closing the one at `i`."""
    depth = 0
    for j in range(i, len(tokens)):
        if tokens[j] in "([{":
            depth += 1
        elif tokens[j] in ")]}":
            depth -= 1
            if depth == 0:
                return j
    raise ValueError("unbalanced brackets in " + join(tokens))


def without_param_names(tokens):
    """A declaration with the names of the parameters of every parameter
    list in it removed (the declared name itself stays)."""
    out, i = [], 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "(" and i > 0 and (is_word(tokens[i - 1]) or tokens[i - 1] == ")") and tokens[i + 1:i + 2] != ["*"]:
            end = closing(tokens, i)
            params = [unnamed(p) for p in split_top(tokens[i + 1:end], ",")]
            out.append("(")
            for n, p in enumerate(params):
                if n:
                    out.append(",")
                out.extend(p)
            out.append(")")
            i = end + 1
        else:
            out.append(tok)
            i += 1
    return out


def unnamed(param):
    """One parameter without its name: `const char *name` -> `const char *`,
    `void (*cb)(int x)` -> `void (*)(int)`."""
    param = without_param_names(param)
    if "(" in param and param[param.index("(") + 1:param.index("(") + 2] == ["*"]:
        start = param.index("(")
        end = closing(param, start)
        group = param[start:end + 1]
        if len(group) > 3 and re.match(r"[A-Za-z_]\w*$", group[-2]):
            group = group[:-2] + [")"]
        return param[:start] + group + param[end + 1:]
    arrays = []
    while param and param[-1] == "]":
        start = max(i for i, t in enumerate(param) if t == "[")
        arrays = param[start:] + arrays
        param = param[:start]
    if len(param) > 1 and is_name(param[-1]) and param[-2] not in ("struct", "union", "enum"):
        param = param[:-1]
    return param + arrays


def is_name(tok):
    """An identifier that is not a type: a type is a keyword or, in this
    header and the standard ones it uses, ends in `_t`."""
    return re.match(r"[A-Za-z_]\w*$", tok) is not None and tok not in KEYWORDS and not tok.endswith("_t")


def declarations(code):
    return [d for d in split_top(TOKEN.findall(code), ";") if d]


def render_body(kind, tag, body):
    """The lines of a struct's fields or an enum's constants."""
    lines = []
    if kind == "enum":
        value, offset = None, -1
        for e in split_top(body, ","):
            if "=" in e:
                eq = e.index("=")
                name, value, offset = join(e[:eq]), join(e[eq + 1:]), 0
            else:
                name, offset = join(e), offset + 1
            lines.append((f"enum {tag} {name} = {implicit(value, offset)}", False))
    else:
        for n, field in enumerate(split_top(body, ";")):
            lines.append((f"{kind} {tag} #{n}: {join(without_param_names(field))}", tag not in GROWABLE))
    return lines


def implicit(value, offset):
    """The value of an enum constant without `=`: one more than the last."""
    if value is None:
        return str(offset)
    if offset == 0:
        return value
    try:
        return str(int(value, 0) + offset)
    except ValueError:
        return f"({value}) + {offset}"


def render_declaration(tokens):
    typedef = tokens[0] == "typedef"
    rest = tokens[1:] if typedef else tokens
    if rest and rest[0] in ("struct", "union", "enum") and "{" in rest:
        kind = rest[0]
        brace = rest.index("{")
        end = closing(rest, brace)
        tag_tokens = rest[1:brace]
        after = rest[end + 1:]
        tag = join(tag_tokens) if tag_tokens else join(after)
        lines = render_body(kind, tag, rest[brace + 1:end])
        if typedef:
            lines.append((f"typedef {kind} {tag} {join(after)}", False))
        elif after:
            lines.append((f"{kind} {tag} {join(after)}", False))
        return lines
    # `void (name)(...)`: a function the header also defines as a macro,
    # declared with its name in parentheses; the same function as
    # `void name(...)`.
    for i in range(len(tokens) - 3):
        if tokens[i] == "(" and is_name(tokens[i + 1]) and tokens[i + 2] == ")" and tokens[i + 3] == "(":
            tokens = tokens[:i] + [tokens[i + 1]] + tokens[i + 3:]
            break
    return [(join(without_param_names(tokens)), False)]


def render_symbols(nm_text):
    """`nm -D --defined-only` output as `symbol NAME (function|data)`."""
    lines = []
    for row in nm_text.splitlines():
        fields = row.split()
        if len(fields) != 3:
            continue
        _, kind, name = fields
        if kind in "Aa":
            continue
        what = "function" if kind in "TtWiw" else "data"
        lines.append((f"symbol {name.split('@')[0]} ({what})", False))
    return sorted(lines)


def render(header_text, nm_text):
    code, defines = preprocess(header_text)
    lines = [(d, False) for d in defines]
    for decl in declarations(code):
        lines.extend(render_declaration(decl))
    return lines + render_symbols(nm_text)
