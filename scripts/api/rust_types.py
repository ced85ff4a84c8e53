"""Types, generics and signatures of rustdoc's JSON output, as Rust text.

The JSON is what `cargo +nightly rustdoc -- -Z unstable-options
--output-format json` writes (format version 57, the nightly of May 2026;
the shapes are those of the `rustdoc-types` crate). A type is rendered as
written in Rust, except that a named type is its item's name alone
(`Duration`, `Result<u32, LinkError>`): a full path would change when the
type moves between modules, or when the standard library reorganises its
private modules, without changing the API. A shape this file does not know
raises `Unknown`, so that a newer format fails loudly instead of rendering
something else.
"""


class Unknown(Exception):
    """A JSON shape this renderer does not know."""


def one(obj):
    """The single key and value of a JSON enum variant `{"kind": value}`."""
    if not isinstance(obj, dict) or len(obj) != 1:
        raise Unknown(f"expected a one-key object, got {obj!r:.120}")
    return next(iter(obj.items()))


class Types:
    """Renders types against one crate's `paths` table (id -> path)."""

    def __init__(self, krate):
        self.paths = krate["paths"]

    def name_of(self, path):
        """A `Path` (resolved_path, trait) as its item's name and arguments."""
        summary = self.paths.get(str(path["id"]))
        if summary is not None:
            name = summary["path"][-1]
        else:
            name = path["path"].split("::")[-1]
        return name + self.args(path.get("args"))

    def ty(self, t):
        if t == "infer":
            return "_"
        kind, v = one(t)
        if kind == "resolved_path":
            return self.name_of(v)
        if kind == "generic":
            return v
        if kind == "primitive":
            return v
        if kind == "tuple":
            return "(" + ", ".join(self.ty(x) for x in v) + ("," if len(v) == 1 else "") + ")"
        if kind == "slice":
            return f"[{self.ty(v)}]"
        if kind == "array":
            return f"[{self.ty(v['type'])}; {v['len']}]"
        if kind == "borrowed_ref":
            life = f"{v['lifetime']} " if v.get("lifetime") else ""
            mut = "mut " if v["is_mutable"] else ""
            return f"&{life}{mut}{self.ty(v['type'])}"
        if kind == "raw_pointer":
            return ("*mut " if v["is_mutable"] else "*const ") + self.ty(v["type"])
        if kind == "dyn_trait":
            parts = [self.hrtb(p["generic_params"]) + self.name_of(p["trait"]) for p in v["traits"]]
            if v.get("lifetime"):
                parts.append(v["lifetime"])
            return "dyn " + " + ".join(parts)
        if kind == "impl_trait":
            return "impl " + self.bounds(v)
        if kind == "function_pointer":
            return self.hrtb(v["generic_params"]) + self.header(v["header"]) + "fn" + self.sig(v["sig"])
        if kind == "qualified_path":
            self_ty = self.ty(v["self_type"])
            args = self.args(v.get("args"))
            if v.get("trait") is None:
                return f"{self_ty}::{v['name']}{args}"
            return f"<{self_ty} as {self.name_of(v['trait'])}>::{v['name']}{args}"
        if kind == "pat":
            return self.ty(v["type"])
        raise Unknown(f"type kind {kind}")

    def args(self, a):
        """Generic arguments: `<u32, Item = u8>`, `(u8) -> u16`, or nothing."""
        if a is None:
            return ""
        if a == "return_type_notation":
            return "(..)"
        kind, v = one(a)
        if kind == "angle_bracketed":
            parts = [self.arg(x) for x in v["args"]]
            parts += [self.constraint(c) for c in v["constraints"]]
            return f"<{', '.join(parts)}>" if parts else ""
        if kind == "parenthesized":
            out = "(" + ", ".join(self.ty(x) for x in v["inputs"]) + ")"
            return out + (f" -> {self.ty(v['output'])}" if v.get("output") else "")
        raise Unknown(f"generic args kind {kind}")

    def arg(self, a):
        if a == "infer":
            return "_"
        kind, v = one(a)
        if kind == "lifetime":
            return v
        if kind == "type":
            return self.ty(v)
        if kind == "const":
            return self.constant(v)
        raise Unknown(f"generic arg kind {kind}")

    def constraint(self, c):
        head = c["name"] + self.args(c.get("args"))
        kind, v = one(c["binding"])
        if kind == "equality":
            term_kind, term = one(v)
            value = self.ty(term) if term_kind == "type" else self.constant(term)
            return f"{head} = {value}"
        if kind == "constraint":
            return f"{head}: {self.bounds(v)}"
        raise Unknown(f"constraint binding {kind}")

    @staticmethod
    def constant(c):
        """A constant's value where rustdoc evaluated it, else its expression."""
        return c["value"] if c.get("value") is not None else c["expr"]

    def bound(self, b):
        kind, v = one(b)
        if kind == "trait_bound":
            modifier = {"none": "", "maybe": "?", "maybe_const": "~const "}[v["modifier"]]
            return self.hrtb(v["generic_params"]) + modifier + self.name_of(v["trait"])
        if kind == "outlives":
            return v
        if kind == "use":
            names = []
            for arg in v:
                names.append(arg if isinstance(arg, str) else one(arg)[1])
            return f"use<{', '.join(names)}>"
        raise Unknown(f"bound kind {kind}")

    def bounds(self, bs):
        """Bounds joined by `+`, sorted and without repeats: their order and
        a bound written twice (as derives do) do not change the API."""
        return " + ".join(sorted(set(self.bound(b) for b in bs)))

    def hrtb(self, params):
        """`for<'a> ` of a higher-ranked bound or function pointer."""
        if not params:
            return ""
        return "for<" + ", ".join(self.param(p) for p in params) + "> "

    def param(self, p, defaults=True):
        kind, v = one(p["kind"])
        if kind == "lifetime":
            return p["name"] + (": " + " + ".join(v["outlives"]) if v["outlives"] else "")
        if kind == "type":
            out = p["name"]
            if v["bounds"]:
                out += ": " + self.bounds(v["bounds"])
            if defaults and v.get("default") is not None:
                out += " = " + self.ty(v["default"])
            return out
        if kind == "const":
            out = f"const {p['name']}: {self.ty(v['type'])}"
            return out + (f" = {v['default']}" if defaults and v.get("default") is not None else "")
        raise Unknown(f"generic param kind {kind}")

    def generics(self, g, defaults=True):
        """`<'a, T: Bound>` of an item (without the `impl Trait` arguments'
        invented parameters); an impl's have no defaults (`defaults`
        false: rustdoc copies the type's into some)."""
        params = [self.param(p, defaults) for p in g["params"] if not self.synthetic(p)]
        return f"<{', '.join(params)}>" if params else ""

    @staticmethod
    def synthetic(p):
        kind, v = one(p["kind"])
        return kind == "type" and v.get("is_synthetic", False)

    def predicates(self, g):
        """The where clause's predicates of generics `g`, as text."""
        out = []
        for w in g["where_predicates"]:
            kind, v = one(w)
            if kind == "bound_predicate":
                if v["bounds"]:
                    out.append(f"{self.hrtb(v['generic_params'])}{self.ty(v['type'])}: {self.bounds(v['bounds'])}")
            elif kind == "lifetime_predicate":
                if v["outlives"]:
                    out.append(f"{v['lifetime']}: {' + '.join(v['outlives'])}")
            elif kind == "eq_predicate":
                lhs = self.ty(v["lhs"])
                term_kind, term = one(v["rhs"])
                rhs = self.ty(term) if term_kind == "type" else self.constant(term)
                out.append(f"{lhs} == {rhs}")
            else:
                raise Unknown(f"where predicate kind {kind}")
        return out

    def bounds_as_predicates(self, g):
        """An impl's inline parameter bounds (`impl<S: Storage>`) as where
        predicates, so that a method of the impl can name them."""
        out = []
        for p in g["params"]:
            kind, v = one(p["kind"])
            if kind == "type" and v["bounds"] and not v.get("is_synthetic"):
                out.append(f"{p['name']}: {self.bounds(v['bounds'])}")
            elif kind == "lifetime" and v["outlives"]:
                out.append(f"{p['name']}: {' + '.join(v['outlives'])}")
        return out

    @staticmethod
    def where(preds):
        return " where " + ", ".join(preds) if preds else ""

    @staticmethod
    def header(h):
        """`const async unsafe extern "C" ` of a function header."""
        out = ""
        if h.get("is_const"):
            out += "const "
        if h.get("is_async"):
            out += "async "
        if h.get("is_unsafe"):
            out += "unsafe "
        abi = h["abi"]
        if abi == "Rust":
            return out
        if isinstance(abi, str):
            return out + f'extern "{abi.lower() if abi != "C" else abi}" '
        kind, v = one(abi)
        if kind == "Other":
            return out + f'extern "{v}" '
        name = kind if kind == "C" else kind.lower()
        if isinstance(v, dict) and v.get("unwind"):
            name += "-unwind"
        return out + f'extern "{name}" '

    def sig(self, s):
        """`(&self, u32) -> T` of a function signature: the parameters'
        types without their names (renaming a parameter changes no caller)."""
        args = []
        for i, (name, t) in enumerate(s["inputs"]):
            args.append(self.receiver(t) if i == 0 and name == "self" else self.ty(t))
        if s.get("is_c_variadic"):
            args.append("...")
        out = "(" + ", ".join(args) + ")"
        if s.get("output") is not None:
            out += " -> " + self.ty(s["output"])
        return out

    def receiver(self, t):
        if t == {"generic": "Self"}:
            return "self"
        kind, v = one(t)
        if kind == "borrowed_ref" and v["type"] == {"generic": "Self"}:
            life = f"{v['lifetime']} " if v.get("lifetime") else ""
            return f"&{life}{'mut ' if v['is_mutable'] else ''}self"
        return "self: " + self.ty(t)
