"""Values in generated sources are escaped for where they go (issue 21, item
8): c_comment for comments, c_string for string literals, c_ident refuses what
is not an identifier; every template value goes through one of the filters;
a config whose file name holds a line break and `#error` generates sources
that compile as they would without it."""

import os
import random
import re
import shutil
import subprocess
import tempfile
import unittest

from gen_support import MINIMAL_CONFIG, REPO, read_tree, run_cli

from ingot import paths
from ingot.cli import EXIT_OK
from ingot.ctokens import c_comment, c_ident, c_string

TEMPLATES = os.path.join(REPO, "templates")
CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang-22")
CLANG = "/usr/bin/clang-22"
# Filters that make a C token of a value; a template value goes through one of them.
C_FILTERS = {"c_comment", "c_string", "c_ident", "c_int", "c_bool", "c_dtype", "c_math"}
# The one value that is C by design: the family's kernarg expressions (Family.kernarg_expr), a fixed table.
RAW_C = {"a.expr"}
NASTY = ["\n#error injected\n", "*/ int injected; /*", "??/", "\\", "\r", "\t", "\x00", "\x7f", '"', "'",
         "?", "??=", "/*", "*/", "//", "\u00fc", "\u2028", "\U0001F600", "\udc80"]


def random_text(rng, n):
    alphabet = [chr(c) for c in range(0x20, 0x7F)] + NASTY
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, n)))


def compile_and_run(source, tmp, flags=()):
    c = os.path.join(tmp, "t.c")
    exe = os.path.join(tmp, "t")
    with open(c, "w", encoding="ascii") as f:
        f.write(source)
    r = subprocess.run([CC, "-std=c11", "-trigraphs", "-Wall", "-Werror", "-Wno-trigraphs", *flags, "-o", exe, c],
                       capture_output=True, text=True, timeout=120)
    if r.returncode:
        raise AssertionError(f"{CC} failed:\n{r.stderr}\n--- source:\n{source}")
    return subprocess.run([exe], capture_output=True, timeout=60).stdout


class FiltersTest(unittest.TestCase):

    def test_accept_plain_values_unchanged(self):
        self.assertEqual(c_comment("configs/attention_decode.yaml"), "configs/attention_decode.yaml")
        self.assertEqual(c_string("ingot_minimal_dispatch"), '"ingot_minimal_dispatch"')
        self.assertEqual(c_ident("ingot_minimal_dispatch"), "ingot_minimal_dispatch")
        self.assertEqual(c_ident("INGOT_GENERATED_MINIMAL_DISPATCH_H"), "INGOT_GENERATED_MINIMAL_DISPATCH_H")

    def test_c_comment_escapes(self):
        self.assertEqual(c_comment("a\n#error x"), "a\\x0a#error x")
        self.assertEqual(c_comment("x */ y /* z"), "x *\\x2f y /\\x2a z")
        self.assertEqual(c_comment("ends in \\"), "ends in \\x5c")
        self.assertEqual(c_comment("??/"), "?\\x3f/")
        self.assertEqual(c_comment("\u00fc\U0001F600"), "\\xfc\\U0001f600")
        for bad in (None, 3, b"bytes"):
            with self.assertRaises(TypeError):
                c_comment(bad)

    def test_c_string_escapes(self):
        self.assertEqual(c_string('say "hi"\\'), '"say \\"hi\\"\\\\"')
        self.assertEqual(c_string("a\nb"), '"a\\012b"')
        self.assertEqual(c_string("??="), '"\\?\\?="')
        self.assertEqual(c_string("\u00fc1"), '"\\303\\2741"')  # octal, so the '1' after stays a '1'
        with self.assertRaises(TypeError):
            c_string(7)

    def test_c_ident_refuses_non_identifiers(self):
        for bad in ("", "1abc", "a-b", "a b", "a\nb", "a;b", "int", "class", "\u00fc", "a.b", None, 12):
            with self.subTest(value=bad), self.assertRaises(ValueError):
                c_ident(bad)

    @unittest.skipUnless(CC, "no C compiler")
    def test_random_strings_survive_a_c_compiler(self):
        rng = random.Random()
        values = [random_text(rng, 40) for _ in range(60)] + NASTY
        lines = ["#include <stdio.h>", "static void hex(const char *s, size_t n) {",
                 "  for (size_t i = 0; i < n; ++i) printf(\"%02x\", (unsigned char)s[i]);",
                 "  putchar('\\n');", "}", "int main(void) {", "  int live = 0;"]
        for i, v in enumerate(values):
            lines.append(f"  // {c_comment(v)}")
            lines.append(f"  live += 1; /* {c_comment(v)} */ live += 1;")
            lines.append(f"  hex({c_string(v)}, sizeof({c_string(v)}) - 1);")
        lines += ['  printf("%d", live);', "  return 0;", "}", ""]
        out = compile_and_run("\n".join(lines), tempfile.mkdtemp(prefix="ingot-esc-"))
        *strings, count = out.decode("ascii").split("\n")
        self.assertEqual(count, str(2 * len(values)))  # no comment swallowed a statement
        self.assertEqual(strings, [v.encode("utf-8", "surrogateescape").hex() for v in values])


class TemplatesTest(unittest.TestCase):

    def test_every_template_value_goes_through_a_c_filter(self):
        seen = 0
        for name in sorted(os.listdir(TEMPLATES)):
            if not name.endswith(".j2"):
                continue
            with open(os.path.join(TEMPLATES, name), encoding="utf-8") as f:
                text = f.read()
            for expr in re.findall(r"\{\{(.*?)\}\}", text, re.S):
                seen += 1
                expr = expr.strip()
                last = expr.rsplit("|", 1)[-1].strip() if "|" in expr else None
                with self.subTest(template=name, value=expr):
                    self.assertTrue(last in C_FILTERS or expr in RAW_C, f"{{{{ {expr} }}}} has no C filter")
        self.assertGreater(seen, 20)


class HostileConfigNameTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ingot-esc-")
        self.addCleanup(shutil.rmtree, self.tmp)
        # A file name cannot hold '/', so no '*/'; a backslash before the line break would splice.
        self.name = "evil\n#error injected ??=\\\n.yaml"
        self.config = os.path.join(self.tmp, self.name)
        shutil.copyfile(MINIMAL_CONFIG, self.config)
        self.out = os.path.join(self.tmp, "out")
        rc, _, stderr = run_cli(["generate", "--quiet", "--out", self.out, self.config])
        self.assertEqual(rc, EXIT_OK, stderr)
        self.files = read_tree(os.path.join(self.out, "minimal"))

    def test_no_line_of_any_source_is_injected(self):
        for rel, text in self.files.items():
            with self.subTest(file=rel):
                self.assertFalse([l for l in text.splitlines() if l.lstrip().startswith("#error")])
        hip = self.files["kernels/gfx942/minimal_bf16_d128_g4_sq1_contig_w4t16.hip"]
        self.assertEqual(hip.splitlines()[0], "// Generated by ingot from evil\\x0a#error injected ?\\x3f=\\x5c"
                                              "\\x0a.yaml for gfx942; do not edit.")
        stub = self.files["dispatch/minimal_dispatch.c"]
        self.assertTrue(stub.startswith("/* Generated by ingot from evil\\x0a#error injected ?\\x3f=\\x5c"
                                        "\\x0a.yaml; do not edit.\n"), stub[:200])
        # JSON escapes it by itself: the KDP names the config as it is.
        import json
        kdp = json.loads(self.files["descriptors/minimal.kdp.json"])
        self.assertEqual(kdp["provenance"]["config"], self.name)

    @unittest.skipUnless(os.access(CLANG, os.X_OK), "clang-22 not installed")
    def test_the_sources_compile(self):
        root = os.path.join(self.out, "minimal")
        includes = [arg for d in (*paths.include_dirs(), TEMPLATES, os.path.join(root, "dispatch"))
                    for arg in ("-I", d)]
        r = subprocess.run([CLANG, "-std=c11", "-trigraphs", "-Wno-trigraphs", "-fsyntax-only", *includes,
                            os.path.join(root, "dispatch", "minimal_dispatch.c")],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = subprocess.run([CLANG, "-x", "hip", "-std=c++17", "--offload-arch=gfx942", "-nogpuinc", "-nogpulib",
                            "--cuda-device-only", "-fsyntax-only", "-I", TEMPLATES,
                            os.path.join(root, "kernels", "gfx942", "minimal_bf16_d128_g4_sq1_contig_w4t16.hip")],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main()
