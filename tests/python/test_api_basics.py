"""The `ingot` package without torch: importing it imports neither torch nor
libingot; the runtime names are loaded on first use; ingot.paths finds libingot
and the packs from INGOT_LIBRARY / INGOT_PACKS; ingot.decode without torch is an
IngotError that says so; the ctypes Runtime opens the default packs.

usage: test_api_basics.py LIBINGOT MAIN_PACK [unittest args]"""

import os
import subprocess
import sys
import tempfile
import unittest

GENERATOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "generator")
sys.path.insert(0, GENERATOR)
import ingot  # noqa: E402
from ingot import paths  # noqa: E402

LIB = PACK = None


def run_python(code, env_extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("INGOT_")}
    env["PYTHONPATH"] = os.path.abspath(GENERATOR)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


class ImportTest(unittest.TestCase):
    def test_import_loads_nothing_heavy(self):
        r = run_python("import sys, ingot\n"
                       "bad = [m for m in ('torch', 'ctypes', 'ingot.runtime', 'ingot.torch_api', 'jinja2') "
                       "if m in sys.modules]\n"
                       "print('loaded:', bad)\n"
                       "e = ingot.IngotError\n"
                       "print('torch' in sys.modules, 'ingot.runtime' in sys.modules)")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "loaded: []\nFalse True\n")

    def test_submodules_on_first_use(self):
        r = run_python("import ingot\nprint(ingot.paths.installed(), ingot.runtime.IngotError is ingot.IngotError)")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "False True\n")

    def test_unknown_attribute(self):
        with self.assertRaises(AttributeError):
            ingot.no_such_thing  # noqa: B018

    def test_decode_without_torch(self):
        # torch made unimportable, whether or not it is installed
        r = run_python("import sys\nsys.modules['torch'] = None\nimport ingot\n"
                       "try:\n    ingot.decode(1, 2, 3, 4)\nexcept ingot.IngotError as e:\n    print(e)\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ingot.decode and DecodePlan need PyTorch", r.stdout)

    def test_generator_still_runs(self):
        r = run_python("import sys\nsys.modules['torch'] = None\nfrom ingot.cli import main\n"
                       "sys.exit(main(['list', sys.argv[1] if len(sys.argv) > 1 else '']))")
        self.assertEqual(r.returncode, 2)  # an empty config name: a config error, not a crash
        self.assertIn("error:", r.stderr)


class PathsTest(unittest.TestCase):
    def test_environment_wins(self):
        with tempfile.TemporaryDirectory() as d:
            packs = os.path.join(d, "packs")
            for name in ("b_pack", "a_pack", "not_a_pack"):
                os.makedirs(os.path.join(packs, name))
            for name in ("a_pack", "b_pack"):
                open(os.path.join(packs, name, f"{name}.kdp.json"), "w").close()
            r = run_python("from ingot import paths\nprint(paths.library())\nprint(paths.pack_dirs())",
                           {"INGOT_LIBRARY": "/x/libingot.so",
                            "INGOT_PACKS": os.pathsep.join([packs, os.path.join(packs, "a_pack")])})
            self.assertEqual(r.returncode, 0, r.stderr)
            lib, dirs = r.stdout.splitlines()
            self.assertEqual(lib, "/x/libingot.so")
            self.assertEqual(eval(dirs), [os.path.join(packs, "a_pack"), os.path.join(packs, "b_pack"),
                                          os.path.join(packs, "a_pack")])

    def test_source_tree_defaults(self):
        self.assertFalse(paths.installed())
        self.assertTrue(paths.in_source_tree())
        self.assertTrue(os.path.isfile(os.path.join(paths.template_dir(), "attention_decode.hip.j2")))
        self.assertTrue(os.path.isfile(os.path.join(paths.schema_dir(), "kdp.schema.json")))
        for d in paths.include_dirs():
            self.assertTrue(os.path.isdir(d), d)

    def test_missing_library_is_an_ingot_error(self):
        r = run_python("import ingot\ntry:\n    ingot.Runtime()\nexcept ingot.IngotError as e:\n    print(e)",
                       {"INGOT_LIBRARY": "/nonexistent/libingot.so"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Runtime: INGOT_LIBRARY = '/nonexistent/libingot.so': no such file", r.stdout)


class RuntimeTest(unittest.TestCase):
    def test_default_packs_open_on_a_host_context(self):
        os.environ["INGOT_LIBRARY"], os.environ["INGOT_PACKS"] = LIB, PACK
        try:
            rt = ingot.Runtime()
            self.assertEqual(rt.version, ingot.__version__)
            ctx = rt.context("none", arch="gfx950")
            for p in paths.pack_dirs():
                ctx.open_pack(p)
            self.assertGreater(ctx.kernel_count, 0)
            self.assertEqual(ctx.arch, "gfx950")
        finally:
            del os.environ["INGOT_LIBRARY"], os.environ["INGOT_PACKS"]


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    LIB, PACK = os.path.abspath(sys.argv.pop(1)), os.path.abspath(sys.argv.pop(1))
    unittest.main()
