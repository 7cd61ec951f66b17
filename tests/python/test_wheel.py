"""The wheel (setup_backend.py, what `pip install .` builds) holds exactly the
expected files: the generator's modules, templates, schemas, configs, the
headers a dispatch stub compiles against (STUB_HEADERS), and, from the build folder, only
libingot.so, ingot-inspect and the packaged packs of configs/*.yaml. Anything
else (a static library, a test library, a test pack, build/lib at the top of
site-packages, a __pycache__) fails the test, and so does a missing file.

usage: test_wheel.py BUILD_DIR [unittest args]   (BUILD_DIR: a complete build)"""

import fnmatch
import glob
import importlib.util
import os
import sys
import tempfile
import unittest
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = None

# What the wheel may hold: (pattern, what it is). fnmatch's * crosses "/".
ALLOWED = [
    ("ingot/*.py", "the generator and the runtime API"),
    ("ingot/families/*.py", "the generator's families"),
    ("ingot/share/templates/*.j2", "templates"),
    ("ingot/share/templates/*.h", "the hand-written kernel and dispatch headers"),
    ("ingot/share/schemas/*.schema.json", "descriptor schemas"),
    ("ingot/share/configs/*.yaml", "pack configs"),
    ("ingot/share/include/ingot/ingot.h", "the runtime header"),
    ("ingot/share/include/ingot/kv_append.h", "the KV-cache append family's header"),
    ("ingot/share/include/ingot/dispatch/dispatch.h", "the dispatch stub contract"),
    ("ingot/share/include/ingot/dispatch/ingot_*_plan.h", "a family's planner (its stubs include it)"),
    ("ingot/lib/libingot.so", "the runtime"),
    ("ingot/bin/ingot-inspect", "the inspection tool"),
    ("ingot/share/packs/*/*.json", "a shipped pack's descriptors"),
    ("ingot/share/packs/*/code/*/*.co", "a shipped pack's AMD code objects"),
    ("ingot/share/packs/*/code/*/*.cubin", "a shipped pack's NVIDIA code objects"),
    ("ingot-*.dist-info/METADATA", "metadata"),
    ("ingot-*.dist-info/WHEEL", "metadata"),
    ("ingot-*.dist-info/entry_points.txt", "console scripts"),
    ("ingot-*.dist-info/RECORD", "metadata"),
]

# The headers a dispatch stub of either family compiles against: wheel name -> tree path (the sdist's).
# Written out, so a header the backend stops shipping fails the test; a family added later adds its
# planner here.
STUB_HEADERS = {
    "ingot/share/include/ingot/ingot.h": "runtime/include/ingot/ingot.h",
    "ingot/share/include/ingot/kv_append.h": "runtime/include/ingot/kv_append.h",
    "ingot/share/include/ingot/dispatch/dispatch.h": "runtime/src/dispatch.h",
    "ingot/share/include/ingot/dispatch/ingot_attention_decode_plan.h":
        "runtime/src/families/attention_decode/ingot_attention_decode_plan.h",
    "ingot/share/include/ingot/dispatch/ingot_kv_append_plan.h": "runtime/src/families/kv_append/ingot_kv_append_plan.h",
}


def unexpected(names):
    """The names no pattern allows, and the shipped-pack files of packs that are not configs/*.yaml's."""
    packs = {os.path.splitext(os.path.basename(c))[0] for c in glob.glob(os.path.join(REPO, "configs", "*.yaml"))}
    bad = []
    for n in names:
        if not any(fnmatch.fnmatchcase(n, p) for p, _ in ALLOWED) or "__pycache__" in n:
            bad.append(n)
        elif n.startswith("ingot/share/packs/") and n.split("/")[3] not in packs:
            bad.append(n)
    return bad


def load_backend():
    spec = importlib.util.spec_from_file_location("setup_backend", os.path.join(REPO, "setup_backend.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def tree(root, rel_prefix, keep):
    out = set()
    for dp, dn, fs in os.walk(root):
        dn[:] = [d for d in dn if d != "__pycache__"]
        for f in fs:
            rel = os.path.relpath(os.path.join(dp, f), root).replace(os.sep, "/")
            if keep(rel):
                out.add(f"{rel_prefix}/{rel}")
    return out


class WheelTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.environ["INGOT_BUILD_DIR"] = BUILD
        cls.tmp = tempfile.TemporaryDirectory()
        backend = load_backend()
        cls.wheel = os.path.join(cls.tmp.name, backend.build_wheel(cls.tmp.name))
        with zipfile.ZipFile(cls.wheel) as z:
            cls.infos = {i.filename: i for i in z.infolist()}
            cls.entry_points = z.read(next(n for n in cls.infos if n.endswith("entry_points.txt"))).decode()
            cls.record = z.read(next(n for n in cls.infos if n.endswith("/RECORD"))).decode()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_nothing_unexpected(self):
        self.assertEqual(unexpected(sorted(self.infos)), [])

    def test_everything_expected(self):
        names = set(self.infos)
        want = tree(os.path.join(REPO, "generator", "ingot"), "ingot", lambda r: r.endswith(".py"))
        want |= tree(os.path.join(REPO, "templates"), "ingot/share/templates", lambda r: True)
        want |= tree(os.path.join(REPO, "schemas"), "ingot/share/schemas", lambda r: r.endswith(".schema.json"))
        want |= tree(os.path.join(REPO, "configs"), "ingot/share/configs", lambda r: r.endswith(".yaml"))
        want |= set(STUB_HEADERS) | {"ingot/lib/libingot.so", "ingot/bin/ingot-inspect"}
        for c in glob.glob(os.path.join(REPO, "configs", "*.yaml")):
            pack = os.path.splitext(os.path.basename(c))[0]
            want |= tree(os.path.join(BUILD, "packs", pack), f"ingot/share/packs/{pack}", lambda r: True)
        self.assertIn("ingot/share/templates/attention_decode.hip.j2", want)  # what the issue found missing
        self.assertIn("ingot/share/packs/attention_decode/attention_decode.kdp.json", want)
        self.assertEqual(sorted(want - names), [])
        self.assertEqual(sorted(n for n in names - want if ".dist-info/" not in n), [])

    def test_native_tag_and_scripts(self):
        self.assertRegex(os.path.basename(self.wheel), r"^ingot-0\.1\.0-py3-none-linux_[a-z0-9_]+\.whl$")
        self.assertIn("ingot = ingot.cli:main", self.entry_points)
        self.assertIn("ingot-inspect = ingot.paths:inspect_main", self.entry_points)
        mode = self.infos["ingot/bin/ingot-inspect"].external_attr >> 16
        self.assertTrue(mode & 0o111, oct(mode))
        lib = self.infos["ingot/lib/libingot.so"]
        self.assertGreater(lib.file_size, 10000)
        # RECORD: every file with its sha256, RECORD itself without
        lines = [ln for ln in self.record.splitlines() if ln]
        self.assertEqual(len(lines), len(self.infos))
        for ln in lines:
            name, digest, size = ln.rsplit(",", 2)
            self.assertIn(name, self.infos)
            if not name.endswith("/RECORD"):
                self.assertTrue(digest.startswith("sha256="), ln)
                self.assertEqual(int(size), self.infos[name].file_size)

    def test_without_a_build_the_generator_alone(self):
        # `pip install .` before `make`: a pure wheel, nothing from a build, and a note saying so
        import contextlib
        import io
        with tempfile.TemporaryDirectory() as empty, tempfile.TemporaryDirectory() as out:
            os.environ["INGOT_BUILD_DIR"] = empty
            err = io.StringIO()
            try:
                with contextlib.redirect_stderr(err):
                    name = load_backend().build_wheel(out)
            finally:
                os.environ["INGOT_BUILD_DIR"] = BUILD
            self.assertEqual(name, "ingot-0.1.0-py3-none-any.whl")
            self.assertIn("the wheel holds the generator only", err.getvalue())
            with zipfile.ZipFile(os.path.join(out, name)) as z:
                names = z.namelist()
                wheel_meta = z.read("ingot-0.1.0.dist-info/WHEEL").decode()
        self.assertEqual(unexpected(names), [])
        self.assertIn("ingot/share/templates/attention_decode.hip.j2", names)
        self.assertFalse([n for n in names if n.startswith(("ingot/lib/", "ingot/bin/", "ingot/share/packs/"))])
        self.assertIn("Root-Is-Purelib: true\nTag: py3-none-any\n", wheel_meta)

    def test_the_sdist_builds_the_pure_wheel(self):
        # the sdist holds the tree files the pure wheel is made of, and its own backend builds that wheel
        import subprocess
        import tarfile
        with tempfile.TemporaryDirectory() as out:
            name = load_backend().build_sdist(out)
            self.assertEqual(name, "ingot-0.1.0.tar.gz")
            with tarfile.open(os.path.join(out, name)) as tar:
                members = tar.getmembers()
                tar.extractall(out, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(out)
            names = {m.name for m in members}
            want = {"ingot-0.1.0/" + n for n in ("pyproject.toml", "setup_backend.py", "README.md", "PKG-INFO",
                                                 *STUB_HEADERS.values())}
            want |= tree(os.path.join(REPO, "generator", "ingot"), "ingot-0.1.0/generator/ingot",
                         lambda r: r.endswith(".py"))
            want |= tree(os.path.join(REPO, "templates"), "ingot-0.1.0/templates", lambda r: True)
            want |= tree(os.path.join(REPO, "schemas"), "ingot-0.1.0/schemas", lambda r: r.endswith(".schema.json"))
            want |= tree(os.path.join(REPO, "configs"), "ingot-0.1.0/configs", lambda r: r.endswith(".yaml"))
            self.assertEqual(sorted(names ^ want), [])
            self.assertTrue(all(m.isfile() and m.mode == 0o644 for m in members))
            with open(os.path.join(out, "ingot-0.1.0", "PKG-INFO"), encoding="utf-8") as f:
                self.assertIn("Name: ingot\nVersion: 0.1.0\n", f.read())
            # the extracted sdist's backend, on its own (no build folder): the generator-only wheel
            src, wheels = os.path.join(out, "ingot-0.1.0"), os.path.join(out, "wheels")
            env = dict(os.environ, INGOT_BUILD_DIR=os.path.join(out, "no-build"))
            r = subprocess.run([sys.executable, "-c", f"import setup_backend as b; print(b.build_wheel({wheels!r}))"],
                               cwd=src, env=env, capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.strip(), "ingot-0.1.0-py3-none-any.whl")
            with zipfile.ZipFile(os.path.join(wheels, r.stdout.strip())) as z:
                built = set(z.namelist())
        self.assertEqual(unexpected(sorted(built)), [])
        self.assertIn("ingot/share/templates/attention_decode.hip.j2", built)
        self.assertIn("ingot/share/include/ingot/dispatch/dispatch.h", built)
        pure = {n for n in self.infos if not n.startswith(("ingot/lib/", "ingot/bin/", "ingot/share/packs/"))
                and ".dist-info/" not in n}
        self.assertEqual(sorted(pure ^ {n for n in built if ".dist-info/" not in n}), [])

    def test_checker_refuses_what_the_issue_found(self):
        # negative control: the libraries setuptools used to pick up from build/lib, a test pack, a cache
        for bad in ("libingot_static.a", "libingot_gputest.a", "libingot_testutil.a", "libingot.so.0",
                    "ingot/lib/libingot_static.a", "ingot/share/packs/test_seed/test_seed.kdp.json",
                    "ingot/__pycache__/cli.cpython-311.pyc", "generated/attention_decode/x.hip"):
            self.assertEqual(unexpected(["ingot/cli.py", bad]), [bad])


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    BUILD = os.path.abspath(sys.argv.pop(1))
    if not os.path.isfile(os.path.join(BUILD, "lib", "libingot.so")):
        sys.exit(f"{BUILD}: no lib/libingot.so (a complete build is needed)")
    unittest.main()
