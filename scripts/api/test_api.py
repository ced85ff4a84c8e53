"""Unit tests of the API renderers and the semver verdict:
`python3 -B scripts/api/test_api.py` (the lint gates run it before the check
itself; scripts/api-breaks.sh runs the whole check on real changes)."""

import contextlib
import io
import unittest

import baseline
import c_header
import rustdoc


def verdict(version, base_version, base_lines, lines):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        ok = baseline.verdict("k", version, base_version, base_lines, lines)
    return ok, out.getvalue()


class Versions(unittest.TestCase):
    def test_breaking_bumps(self):
        for old, new in [("0.1.0", "0.2.0"), ("0.1.7", "0.2.0-rc.1"), ("1.2.3", "2.0.0"), ("0.0.3", "0.0.4"), ("0.9.0", "1.0.0")]:
            self.assertTrue(baseline.breaking_bump(old, new), (old, new))

    def test_compatible_bumps(self):
        for old, new in [("0.1.0", "0.1.1"), ("0.1.0", "0.1.0"), ("1.2.3", "1.3.0"), ("1.2.3", "1.2.4")]:
            self.assertFalse(baseline.breaking_bump(old, new), (old, new))

    def test_next_breaking(self):
        self.assertEqual(baseline.next_breaking("0.1.3"), "0.2.0")
        self.assertEqual(baseline.next_breaking("2.4.1"), "3.0.0")
        self.assertEqual(baseline.next_breaking("0.0.3"), "0.0.4")


class Verdict(unittest.TestCase):
    base = ["pub fn k::a()", "pub fn k::b(u32)"]

    def test_same_api_passes(self):
        ok, _ = verdict("0.1.0", "0.1.0", self.base, [(t, False) for t in self.base])
        self.assertTrue(ok)

    def test_removal_fails_without_a_breaking_bump(self):
        ok, out = verdict("0.1.1", "0.1.0", self.base, [("pub fn k::a()", False)])
        self.assertFalse(ok)
        self.assertIn("- pub fn k::b(u32)", out)
        self.assertIn("0.2.0 or later", out)

    def test_change_is_a_removal_and_an_addition(self):
        ok, out = verdict("0.1.0", "0.1.0", self.base, [("pub fn k::a()", False), ("pub fn k::b(u64)", False)])
        self.assertFalse(ok)
        self.assertIn("- pub fn k::b(u32)", out)
        self.assertIn("+ pub fn k::b(u64)", out)

    def test_removal_passes_with_a_breaking_bump(self):
        ok, _ = verdict("0.2.0", "0.1.0", self.base, [("pub fn k::a()", False)])
        self.assertTrue(ok)

    def test_addition_passes_and_is_listed(self):
        ok, out = verdict("0.1.0", "0.1.0", self.base, [(t, False) for t in self.base] + [("pub fn k::c()", False)])
        self.assertTrue(ok)
        self.assertIn("+ pub fn k::c()", out)

    def test_breaking_addition_fails(self):
        base = self.base + ["pub enum k::E", "pub struct k::S {}", "pub k::S::x: u32"]
        for new in ["pub k::E::New", "pub k::S::y: u64"]:
            lines = [(t, False) for t in base] + [(new, True)]
            ok, out = verdict("0.1.0", "0.1.0", base, lines)
            self.assertFalse(ok, new)
            self.assertIn(f"+ {new}", out)

    def test_fields_and_variants_of_a_new_type_break_nobody(self):
        base = self.base + ["pub struct k::S {}", "pub k::S::x: u32"]
        new = [("pub struct k::St {}", False), ("pub k::St::frames: u64", True),
               ("pub enum k::E", False), ("pub k::E::A(u8)", True)]
        ok, out = verdict("0.1.0", "0.1.0", base, [(t, False) for t in base] + new)
        self.assertTrue(ok, out)
        self.assertIn("+ pub k::St::frames: u64", out)

    def test_version_older_than_the_baseline_fails(self):
        ok, _ = verdict("0.1.0", "0.2.0", self.base, [(t, False) for t in self.base])
        self.assertFalse(ok)


class CHeader(unittest.TestCase):
    def lines(self, header, nm=""):
        return c_header.render(header, nm)

    def test_prototypes_without_parameter_names(self):
        out = self.lines("int f(const char *name, struct s by_value, struct s, unsigned int n, size_t, int a[4]);")
        self.assertEqual(out, [("int f(const char *, struct s, struct s, unsigned int, size_t, int[4])", False)])

    def test_function_pointers_without_parameter_names(self):
        out = self.lines("typedef void (*cb_t)(void *user, int (*inner)(int x));")
        self.assertEqual(out, [("typedef void(*cb_t)(void *, int(*)(int))", False)])

    def test_comments_cplusplus_and_guard_are_left_out(self):
        header = '#ifndef G_H\n#define G_H\n#ifdef __cplusplus\nextern "C" {\n#endif\n' \
                 "/* a comment; with a semicolon */\n#define K 4u  // four\nvoid f(void);\n" \
                 "#ifdef __cplusplus\n}\n#endif\n#endif\n"
        self.assertEqual([t for t, _ in self.lines(header)], ["#define K 4u", "void f(void)"])

    def test_enum_values_explicit_and_implicit(self):
        out = [t for t, _ in self.lines("enum e { A, B, C = -5, D, E = X, F };")]
        self.assertEqual(out, ["enum e A = 0", "enum e B = 1", "enum e C = -5", "enum e D = -4", "enum e E = X", "enum e F = (X) + 1"])

    def test_struct_fields_numbered_and_growth(self):
        out = self.lines("typedef struct vecring_counters { uint64_t a; uint64_t b; } vecring_counters_t;\n"
                         "struct other { int x; void (*cb)(int y); };")
        self.assertEqual(out, [
            ("struct vecring_counters #0: uint64_t a", False),
            ("struct vecring_counters #1: uint64_t b", False),
            ("typedef struct vecring_counters vecring_counters_t", False),
            ("struct other #0: int x", True),
            ("struct other #1: void(*cb)(int)", True),
        ])

    def test_exported_symbols(self):
        nm = "0000000000001000 T vecring_open\n0000000000002000 D vecring_table\n                 w __gmon_start__\n"
        self.assertEqual(self.lines("", nm), [("symbol vecring_open (function)", False), ("symbol vecring_table (data)", False)])


def krate(items, root_items):
    """A minimal rustdoc JSON crate: `items` by id, the root module's items."""
    index = {str(k): v for k, v in items.items()}
    index["0"] = {"id": 0, "crate_id": 0, "name": "k", "visibility": "public", "attrs": [],
                  "inner": {"module": {"is_crate": True, "items": root_items, "is_stripped": False}}}
    return {"root": 0, "index": index, "paths": {}, "format_version": 57}


def item(id_, name, inner, vis="public", attrs=()):
    return {"id": id_, "crate_id": 0, "name": name, "visibility": vis, "attrs": list(attrs), "inner": inner}


NO_GENERICS = {"params": [], "where_predicates": []}


class Rustdoc(unittest.TestCase):
    def test_struct_fields_break_when_added_only_if_exhaustive(self):
        field = item(2, "x", {"struct_field": {"primitive": "u32"}})
        for attrs, stripped, breaks in [((), False, True), (("non_exhaustive",), False, False), ((), True, False)]:
            s = item(1, "S", {"struct": {"kind": {"plain": {"fields": [2], "has_stripped_fields": stripped}},
                                         "generics": NO_GENERICS, "impls": []}}, attrs=attrs)
            lines = dict(rustdoc.render(krate({1: s, 2: field}, [1])))
            self.assertEqual(lines["pub k::S::x: u32"], breaks, (attrs, stripped))

    def test_reexport_renders_the_item_at_both_paths(self):
        f = item(2, "f", {"function": {"sig": {"inputs": [["n", {"primitive": "u8"}]], "output": None},
                                       "generics": NO_GENERICS, "has_body": True,
                                       "header": {"is_const": False, "is_unsafe": False, "is_async": False, "abi": "Rust"}}})
        m = item(1, "m", {"module": {"is_crate": False, "items": [2], "is_stripped": False}})
        use = item(3, None, {"use": {"source": "m::f", "name": "g", "id": 2, "is_glob": False}})
        lines = [t for t, _ in rustdoc.render(krate({1: m, 2: f, 3: use}, [1, 3]))]
        self.assertEqual(lines, ["pub fn k::g(u8)", "pub mod k::m", "pub fn k::m::f(u8)"])


if __name__ == "__main__":
    unittest.main()
