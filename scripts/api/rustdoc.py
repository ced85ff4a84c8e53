"""The public API of a Rust library crate, one line per item, from rustdoc's
JSON output.

Every item a user can name is rendered at every path they can name it by
(its module and each `pub use` of it), with its members under it: fields,
variants, methods, associated items and trait implementations, each on a
line of its own:

    pub struct vecring_core::Geometry
    pub fn vecring_core::Geometry::new(u32, u32, u32) -> Result<Geometry, GeometryError>
    impl Clone for vecring_core::Geometry

Items marked `#[doc(hidden)]` are not part of the API, but a public item of
a hidden module that a visible path re-exports is (`vecring_core::
MAX_FRAME_LEN` is `internal::abi`'s): rustdoc runs with
`--document-hidden-items`, so that such an item is in its output, and the
walk from the crate root leaves out what is marked hidden itself. Blanket
implementations (`impl<T> From<T> for T`) are left out too, as they follow
from the others, and so are the unstable auto traits `Freeze` and
`UnsafeUnpin`.

`render(krate)` returns `(text, adding_breaks)` pairs: `adding_breaks` is
true for a line whose appearance alone breaks users, that is a new field of
a struct users can build with a literal (no private fields, not
`#[non_exhaustive]`), a new variant of an enum they can match exhaustively,
and a new required item of a trait they can implement.
"""

from rust_types import Types, Unknown, one

SKIPPED_AUTO_TRAITS = {"Freeze", "UnsafeUnpin"}


class Renderer:
    def __init__(self, krate):
        self.krate = krate
        self.index = krate["index"]
        self.types = Types(krate)
        self.lines = []
        self.seen = set()
        self.rendered_impls = set()

    def item(self, id_):
        return self.index.get(str(id_))

    def emit(self, text, adding_breaks=False):
        if text not in self.seen:
            self.seen.add(text)
            self.lines.append((text, adding_breaks))

    # -- where the items are -------------------------------------------

    def public_paths(self):
        """(path, id) of every public item, at each path it can be named by."""
        out = []
        root = self.krate["root"]
        name = self.item(root)["name"]
        self.walk(root, name, out, [root])
        return sorted(out)

    def walk(self, module_id, path, out, stack):
        for child in self.item(module_id)["inner"]["module"]["items"]:
            item = self.item(child)
            if item is None or item["visibility"] != "public" or hidden(item):
                continue
            kind, inner = one(item["inner"])
            if kind != "use":
                self.visit(child, f"{path}::{item['name']}", out, stack)
                continue
            target = inner.get("id")
            target_item = self.item(target) if target is not None else None
            if target_item is not None and hidden(target_item):
                continue
            if inner["is_glob"]:
                if target_item is not None and "module" in target_item["inner"] and target not in stack:
                    self.walk(target, path, out, stack + [target])
                else:
                    out.append((f"{path}::*", ("extern", inner["source"] + "::*")))
            elif target_item is not None:
                self.visit(target, f"{path}::{inner['name']}", out, stack)
            else:
                out.append((f"{path}::{inner['name']}", ("extern", inner["source"])))

    def visit(self, id_, path, out, stack):
        out.append((path, id_))
        item = self.item(id_)
        if item is not None and "module" in item["inner"] and id_ not in stack:
            self.walk(id_, path, out, stack + [id_])

    # -- the lines --------------------------------------------------------

    def render(self):
        for path, id_ in self.public_paths():
            if isinstance(id_, tuple):
                self.emit(f"pub use {path} = {id_[1]}")
            else:
                self.render_item(path, self.item(id_))
        self.render_other_impls()
        return self.lines

    def render_item(self, path, item):
        kind, v = one(item["inner"])
        t = self.types
        if kind == "module":
            self.emit(f"pub mod {path}")
        elif kind == "struct":
            self.struct(path, item, v)
        elif kind == "enum":
            self.enum(path, item, v)
        elif kind == "union":
            self.emit(f"{attrs(item)}pub union {path}{t.generics(v['generics'])}{t.where(t.predicates(v['generics']))}")
            self.fields(path, v["fields"], False)
            self.impls(path, item["id"], v["impls"])
        elif kind == "function":
            self.emit(self.function(f"pub {{header}}fn {path}", v))
        elif kind == "trait":
            self.trait(path, v)
        elif kind == "constant":
            self.emit(f"pub const {path}: {t.ty(v['type'])} = {t.constant(v['const'])}")
        elif kind == "static":
            mut = "mut " if v["is_mutable"] else ""
            self.emit(f"pub static {mut}{path}: {t.ty(v['type'])}")
        elif kind == "type_alias":
            g = v["generics"]
            self.emit(f"pub type {path}{t.generics(g)} = {t.ty(v['type'])}{t.where(t.predicates(g))}")
        elif kind == "macro":
            self.emit(f"pub macro {path}!")
        elif kind == "proc_macro":
            self.emit(f"pub proc_macro {path} ({v['kind']})")
        elif kind in ("trait_alias", "extern_type", "primitive", "extern_crate"):
            self.emit(f"pub {kind} {path}")
        else:
            raise Unknown(f"item kind {kind} at {path}")

    def function(self, head, f):
        """A function's line; `head` holds `{header}` for its qualifiers."""
        t = self.types
        g = f["generics"]
        text = head.format(header=t.header(f["header"])) + t.generics(g) + t.sig(f["sig"])
        return text + t.where(t.predicates(g))

    def struct(self, path, item, v):
        t = self.types
        g = v["generics"]
        head = f"{attrs(item)}pub struct {path}{t.generics(g)}"
        where = t.where(t.predicates(g))
        kind = v["kind"]
        if kind == "unit":
            self.emit(f"{head}{where};")
        else:
            kind, fields = one(kind)
            if kind == "tuple":
                shown = []
                for f in fields:
                    field = self.item(f) if f is not None else None
                    field = None if field is None or hidden(field) else field
                    shown.append("_" if field is None else "pub " + t.ty(field["inner"]["struct_field"]))
                self.emit(f"{head}({', '.join(shown)}){where};")
            elif kind == "plain":
                stripped = fields["has_stripped_fields"] or any(hidden(self.item(f)) for f in fields["fields"])
                self.emit(f"{head}{where} {{{' .. ' if stripped else ''}}}")
                exhaustive = not stripped and not non_exhaustive(item)
                self.fields(path, fields["fields"], exhaustive)
            else:
                raise Unknown(f"struct kind {kind} at {path}")
        self.impls(path, item["id"], v["impls"])

    def fields(self, path, ids, exhaustive):
        for f in ids:
            field = self.item(f)
            if field is not None and not hidden(field):
                self.emit(f"pub {path}::{field['name']}: {self.types.ty(field['inner']['struct_field'])}", exhaustive)

    def enum(self, path, item, v):
        t = self.types
        g = v["generics"]
        self.emit(f"{attrs(item)}pub enum {path}{t.generics(g)}{t.where(t.predicates(g))}")
        exhaustive = not non_exhaustive(item)
        for var_id in v["variants"]:
            var = self.item(var_id)
            if var is None or hidden(var):
                continue
            body = self.variant(var["inner"]["variant"], path)
            disc = var["inner"]["variant"].get("discriminant")
            value = f" = {disc['value']}" if disc else ""
            self.emit(f"{attrs(var)}pub {path}::{var['name']}{body}{value}", exhaustive)
        self.impls(path, item["id"], v["impls"])

    def variant(self, var, path):
        kind = var["kind"]
        if kind == "plain":
            return ""
        kind, v = one(kind)
        if kind == "tuple":
            return "(" + ", ".join("_" if f is None or hidden(self.item(f)) else self.field_type(f) for f in v) + ")"
        if kind == "struct":
            shown = [f for f in v["fields"] if self.item(f) and not hidden(self.item(f))]
            names = [f"{self.item(f)['name']}: {self.field_type(f)}" for f in shown]
            if v["has_stripped_fields"] or len(shown) < len(v["fields"]):
                names.append("..")
            return " { " + ", ".join(names) + " }"
        raise Unknown(f"variant kind {kind} at {path}")

    def field_type(self, id_):
        return self.types.ty(self.item(id_)["inner"]["struct_field"])

    def trait(self, path, v):
        t = self.types
        g = v["generics"]
        unsafe = "unsafe " if v["is_unsafe"] else ""
        auto = "auto " if v["is_auto"] else ""
        supers = f": {t.bounds(v['bounds'])}" if v["bounds"] else ""
        self.emit(f"pub {unsafe}{auto}trait {path}{t.generics(g)}{supers}{t.where(t.predicates(g))}")
        for id_ in v["items"]:
            item = self.item(id_)
            if item is None or hidden(item):
                continue
            kind, a = one(item["inner"])
            member = f"{path}::{item['name']}"
            if kind == "function":
                required = not a["has_body"]
                text = self.function(f"pub {{header}}fn {member}", a)
                self.emit(text + (";" if required else " { .. }"), required)
            elif kind == "assoc_type":
                bounds = f": {t.bounds(a['bounds'])}" if a["bounds"] else ""
                default = f" = {t.ty(a['type'])}" if a.get("type") is not None else ""
                text = f"pub type {member}{t.generics(a['generics'])}{bounds}{default}"
                self.emit(text + t.where(t.predicates(a["generics"])), not default)
            elif kind == "assoc_const":
                default = f" = {a['value']}" if a.get("value") is not None else ""
                self.emit(f"pub const {member}: {t.ty(a['type'])}{default}", not default)
            else:
                raise Unknown(f"trait item kind {kind} at {member}")

    def impls(self, path, owner, ids):
        """The implementations rustdoc lists with the item `owner` at
        `path`: its inherent methods and constants, the traits it
        implements, and (for some items) impls on other types that name it,
        such as `impl From<Unsafe> for LinkError`."""
        for id_ in ids:
            item = self.item(id_)
            if item is None or hidden(item):
                continue
            imp = item["inner"]["impl"]
            if imp.get("blanket_impl") is not None:
                continue
            self.rendered_impls.add(str(id_))
            kind, for_ty = one(imp["for"])
            if kind == "resolved_path" and for_ty["id"] == owner:
                self_ty = path + self.types.args(for_ty.get("args"))
            else:
                self_ty = self.types.ty(imp["for"])
            if imp.get("trait") is None:
                self.inherent(self_ty, imp)
            else:
                self.trait_impl(self_ty, imp)

    def inherent(self, self_ty, imp):
        t = self.types
        g = imp["generics"]
        impl_preds = t.bounds_as_predicates(g) + t.predicates(g)
        for id_ in imp["items"]:
            item = self.item(id_)
            if item is None or item["visibility"] != "public" or hidden(item):
                continue
            kind, a = one(item["inner"])
            member = f"{self_ty}::{item['name']}"
            if kind == "function":
                fg = a["generics"]
                text = f"pub {t.header(a['header'])}fn {member}{t.generics(fg)}{t.sig(a['sig'])}"
                self.emit(text + t.where(impl_preds + t.predicates(fg)))
            elif kind == "assoc_const":
                self.emit(f"pub const {member}: {t.ty(a['type'])}{t.where(impl_preds)}")
            elif kind == "assoc_type":
                self.emit(f"pub type {member} = {t.ty(a['type'])}{t.where(impl_preds)}")
            else:
                raise Unknown(f"impl item kind {kind} at {member}")

    def trait_impl(self, self_ty, imp):
        trait_name = self.types.name_of(imp["trait"])
        if imp.get("is_synthetic") and trait_name in SKIPPED_AUTO_TRAITS:
            return
        self.emit(self.impl_line(self_ty, imp))

    def impl_line(self, self_ty, imp):
        """`impl<T> Trait for Type where ... { type Item = X }`."""
        t = self.types
        g = imp["generics"]
        neg = "!" if imp.get("is_negative") else ""
        text = f"impl{t.generics(g, defaults=False)} {neg}{t.name_of(imp['trait'])} for {self_ty}{t.where(t.predicates(g))}"
        assoc = []
        for id_ in imp["items"]:
            item = self.item(id_)
            if item is not None and "assoc_type" in item["inner"]:
                assoc.append(f"type {item['name']} = {t.ty(item['inner']['assoc_type']['type'])};")
        return text + (" { " + " ".join(sorted(assoc)) + " }" if assoc else "")

    def render_other_impls(self):
        """Implementations of this crate not attached to one of its public
        types, such as `impl From<LinkError> for io::Error`."""
        for key in sorted(self.index, key=lambda k: int(k) if k.isdigit() else k):
            item = self.index[key]
            if item["crate_id"] != 0 or "impl" not in item["inner"] or key in self.rendered_impls or hidden(item):
                continue
            imp = item["inner"]["impl"]
            if imp.get("trait") is None or imp.get("blanket_impl") is not None or imp.get("is_synthetic"):
                continue
            if not self.public_trait_and_type(imp):
                continue
            self.emit(self.impl_line(self.types.ty(imp["for"]), imp))

    def public_trait_and_type(self, imp):
        """Whether users see this impl: its self type is not one of the
        crate's own items (those list it themselves)."""
        kind, v = one(imp["for"])
        if kind == "resolved_path":
            summary = self.krate["paths"].get(str(v["id"]))
            if summary is not None and summary["crate_id"] == 0:
                return False
        return True


def attrs(item):
    """The attributes that are part of the API: `#[non_exhaustive]` and
    `#[repr(..)]`."""
    out = ""
    for a in item.get("attrs", []):
        if a == "non_exhaustive":
            out += "#[non_exhaustive] "
        elif isinstance(a, dict) and "repr" in a:
            r = a["repr"]
            parts = []
            if r.get("kind") and r["kind"] != "rust":
                parts.append("C" if r["kind"] == "c" else r["kind"])
            if r.get("int"):
                parts.append(r["int"])
            if r.get("align"):
                parts.append(f"align({r['align']})")
            if r.get("packed"):
                parts.append(f"packed({r['packed']})")
            if parts:
                out += f"#[repr({', '.join(parts)})] "
    return out


def hidden(item):
    """Whether the item is marked `#[doc(hidden)]`."""
    return any(isinstance(a, dict) and "doc(hidden)" in a.get("other", "") for a in item.get("attrs", []))


def non_exhaustive(item):
    return "non_exhaustive" in item.get("attrs", [])


def render(krate):
    return Renderer(krate).render()
