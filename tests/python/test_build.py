"""`ingot build CONFIG --out DIR`: one command from a provider's YAML to a pack
that ingot-inspect and the Python API open (its dispatch stub shipped as
dispatch/ingot_<pack>_dispatch.so, which libingot loads from the pack), and
incremental: nothing is compiled again when nothing changed, a header edit
recompiles, a descriptor-only edit repackages without compiling. Also the
refusals: a dispatch library that is a symbolic link, a pack without one, a
signed-pack context (the library is not covered by the signature), an unknown
arch, a bad config; and `generate` without --out for a config outside the
source tree's configs/ writes into the current folder, not generated/.

usage: test_build.py LIBINGOT INGOT_INSPECT [unittest args]"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
GENERATOR = os.path.join(REPO, "generator")
CONFIG = os.path.join(REPO, "examples", "provider", "provider_decode.yaml")
PACK = "provider_decode"
KERNEL = "provider_decode_bf16_d128_g2_sq1_contig_w4t16"
LIB = INSPECT = None

GRAPH = """{
  "q": {"dtype": "bf16", "dims": [1, 16, 1, 128]},
  "k": {"dtype": "bf16", "dims": [1, 4096, 8, 128]},
  "v": {"dtype": "bf16", "dims": [1, 4096, 8, 128]},
  "o": {"dtype": "bf16", "dims": [1, 16, 1, 128]},
  "seq_lens": {"dtype": "int32", "dims": [1], "memory": "device"},
  "kv_layout": "contiguous", "capacity": 4096, "mask": "none", "scale": 0.08838834764831845
}
"""


def env_of(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("INGOT_")}
    env["PYTHONPATH"] = GENERATOR
    env["INGOT_NVCC"] = "/nonexistent/nvcc"  # gfx942 only: fast, and the skip warning is checked
    env.update(extra)
    return env


def ingot(*args, cwd=None, **extra):
    return subprocess.run([sys.executable, "-m", "ingot", *args], cwd=cwd, env=env_of(**extra),
                          capture_output=True, text=True, timeout=900)


class BuildTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ingot-build-test-")
        cls.out = os.path.join(cls.tmp, "out")
        cls.config = os.path.join(cls.tmp, f"{PACK}.yaml")
        shutil.copyfile(CONFIG, cls.config)
        cls.templates = os.path.join(cls.tmp, "templates")
        shutil.copytree(os.path.join(REPO, "templates"), cls.templates)
        cls.graph = os.path.join(cls.tmp, "graph.json")
        with open(cls.graph, "w") as f:
            f.write(GRAPH)
        cls.first = cls.build()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    @classmethod
    def build(cls, *extra):
        return ingot("build", cls.config, "--out", cls.out, "--archs", "gfx942,sm_90", *extra,
                     INGOT_TEMPLATE_DIR=cls.templates)

    def pack_dir(self):
        return os.path.join(self.out, PACK)

    def match(self, pack_dir=None, *keyargs):
        return subprocess.run([INSPECT, "match", self.graph, pack_dir or self.pack_dir(), "--arch", "gfx942"],
                              capture_output=True, text=True, timeout=120)

    def test_1_first_build(self):
        r = self.first
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("sm_90 code objects of pack provider_decode are skipped", r.stderr)
        self.assertIn(f"compiled gfx942/{KERNEL}.gfx942.co", r.stdout)
        self.assertRegex(r.stdout, r"provider_decode: 1 instances x gfx942 \(1 compiled, 0 reused\)")
        files = sorted(os.path.relpath(os.path.join(dp, f), self.pack_dir())
                       for dp, _, fs in os.walk(self.pack_dir()) for f in fs)
        self.assertIn(f"code/gfx942/{KERNEL}.gfx942.co", files)
        self.assertIn("dispatch/ingot_provider_decode_dispatch.so", files)
        self.assertIn("provider_decode.kdp.json", files)
        self.assertFalse([f for f in files if "sm_90" in f])

    def test_2_inspect_and_python_open_it(self):
        r = self.match()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"kernel: {KERNEL}\n", r.stdout)
        r = ingot("census", self.pack_dir())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("pack provider_decode: 1 kernels, archs gfx942,", r.stdout)
        code = ("import ingot\nctx = ingot.Runtime().context('none', arch='gfx942')\n"
                "[ctx.open_pack(p) for p in ingot.paths.pack_dirs()]\nprint(ctx.kernel_count)\n"
                "from ingot.runtime import TensorDesc\n")
        r = subprocess.run([sys.executable, "-c", code], env=env_of(INGOT_LIBRARY=LIB, INGOT_PACKS=self.out),
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "1\n")

    def test_3_incremental(self):
        r = self.build()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("provider_decode: up to date", r.stdout)
        self.assertNotIn("compiled", r.stdout.replace("(0 compiled)", ""))
        kdp = os.path.join(self.pack_dir(), f"{PACK}.kdp.json")
        before = os.stat(kdp).st_mtime_ns
        # a header the kernel includes: recompiled; the object comes out the same (a comment), so the
        # pack is not rewritten
        with open(os.path.join(self.templates, "ingot_arch.h"), "a") as f:
            f.write("\n/* edited by test_build */\n")
        r = self.build()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"compiled gfx942/{KERNEL}.gfx942.co", r.stdout)
        self.assertIn("provider_decode: up to date", r.stdout)
        self.assertIn("(1 compiled)", r.stdout)
        self.assertEqual(os.stat(kdp).st_mtime_ns, before)
        # a descriptor-only edit (the admitted batch): repackaged, nothing compiled
        with open(self.config) as f:
            text = f.read()
        self.assertIn("batch: [1, 64]", text)
        with open(self.config, "w") as f:
            f.write(text.replace("batch: [1, 64]", "batch: [1, 32]"))
        r = self.build()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("(0 compiled, 1 reused)", r.stdout)
        self.assertNotEqual(os.stat(kdp).st_mtime_ns, before)
        with open(os.path.join(self.pack_dir(), f"{KERNEL}.umd.json")) as f:
            umd = f.read()
        self.assertRegex(umd, r'"field": "batch",\s+"max": 32,')
        self.assertEqual(self.match().returncode, 0)

    def test_4_dispatch_library_refusals(self):
        bad = os.path.join(self.tmp, "bad")
        shutil.copytree(self.pack_dir(), bad)
        so = os.path.join(bad, "dispatch", "ingot_provider_decode_dispatch.so")
        real = os.path.join(self.tmp, "elsewhere.so")
        shutil.move(so, real)
        os.symlink(real, so)
        r = self.match(bad)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("dispatch/ingot_provider_decode_dispatch.so: a symbolic link (allowed: a regular file)",
                      r.stderr)
        os.remove(so)
        r = self.match(bad)
        self.assertEqual(r.returncode, 2)
        self.assertIn("is neither compiled into libingot, nor exported by the program, nor in the pack's "
                      "dispatch/ingot_provider_decode_dispatch.so", r.stderr)
        # other bytes than the KDP records: refused before anything is loaded
        recorded, junk = self.library_record(bad)["sha256"], b"\x7fELF not really"
        with open(so, "wb") as f:
            f.write(junk)
        r = self.match(bad)
        self.assertEqual(r.returncode, 2)
        self.assertIn(f"dispatch/ingot_provider_decode_dispatch.so: hashes to {hashlib.sha256(junk).hexdigest()}, "
                      f"but the KDP records {recorded}", r.stderr)
        # recorded, but no shared object / without the entry
        self.library_record(bad, so)
        r = self.match(bad)
        self.assertEqual(r.returncode, 2)
        self.assertIn("dispatch/ingot_provider_decode_dispatch.so: cannot be loaded", r.stderr)
        cc = shutil.which("cc") or shutil.which("gcc")
        if cc:  # a real shared object without the entry
            src = os.path.join(self.tmp, "other.c")
            with open(src, "w") as f:
                f.write("int ingot_something_else = 1;\n")
            subprocess.run([cc, "-shared", "-fPIC", "-o", so, src], check=True)
            self.library_record(bad, so)
            r = self.match(bad)
            self.assertEqual(r.returncode, 2)
            self.assertIn("does not define the dispatch entry ingot_provider_decode_dispatch", r.stderr)
        # a library the KDP does not record
        shutil.copyfile(real, so)
        self.library_record(bad, None)
        r = self.match(bad)
        self.assertEqual(r.returncode, 2)
        self.assertIn("dispatch/ingot_provider_decode_dispatch.so: the KDP does not record the library", r.stderr)
        # a record for another file name
        self.library_record(bad, so)
        kdp = self.kdp_path(bad)
        with open(kdp, encoding="utf-8") as f:
            doc = json.load(f)
        doc["dispatch_library"]["path"] = "dispatch/other.so"
        with open(kdp, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        r = self.match(bad)
        self.assertEqual(r.returncode, 2)
        self.assertIn('dispatch_library.path: "dispatch/other.so" (allowed: "dispatch/ingot_provider_decode_dispatch.so"',
                      r.stderr)
        self.library_record(bad, so)  # the real library's record again
        # the folder itself a symbolic link to one holding the real library
        shutil.rmtree(os.path.join(bad, "dispatch"))
        os.symlink(os.path.join(self.pack_dir(), "dispatch"), os.path.join(bad, "dispatch"))
        r = self.match(bad)
        self.assertEqual(r.returncode, 2)
        self.assertIn("dispatch/: not a folder (allowed: a folder holding ingot_provider_decode_dispatch.so, no "
                      "symbolic link)", r.stderr)

    def kdp_path(self, pack):
        return os.path.join(pack, f"{PACK}.kdp.json")

    def library_record(self, pack, so=""):
        """The KDP's dispatch_library record; with so, rewritten for that file's bytes (None: removed)."""
        with open(self.kdp_path(pack), encoding="utf-8") as f:
            doc = json.load(f)
        if so == "":
            return doc["dispatch_library"]
        if so is None:
            doc.pop("dispatch_library", None)
        else:
            with open(so, "rb") as f:
                doc["dispatch_library"] = {"path": f"dispatch/{os.path.basename(so)}",
                                           "sha256": hashlib.sha256(f.read()).hexdigest()}
        with open(self.kdp_path(pack), "w", encoding="utf-8") as f:
            json.dump(doc, f)
        return doc.get("dispatch_library")

    @unittest.skipUnless(shutil.which("openssl"), "openssl not found")
    def test_5_signed_context_checks_the_library(self):
        signed = os.path.join(self.tmp, "signed")
        shutil.copytree(self.pack_dir(), signed)
        priv, pub = os.path.join(self.tmp, "k.pem"), os.path.join(self.tmp, "k.pub.pem")
        subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", priv], check=True,
                       capture_output=True)
        subprocess.run(["openssl", "pkey", "-in", priv, "-pubout", "-out", pub], check=True, capture_output=True)
        r = subprocess.run([INSPECT, "sign", "--key", priv, signed], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        # the KDP records the library's sha256, so the signature covers it: the signed pack opens
        r = subprocess.run([INSPECT, "verify", "--key", pub, signed], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # a library swapped after signing is refused, signature or not
        so = os.path.join(signed, "dispatch", "ingot_provider_decode_dispatch.so")
        with open(so, "ab") as f:
            f.write(b"\0")
        r = subprocess.run([INSPECT, "verify", "--key", pub, signed], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("dispatch/ingot_provider_decode_dispatch.so: hashes to", r.stderr)
        self.assertEqual(self.match(signed).returncode, 2)

    def test_6_bad_input(self):
        r = ingot("build", self.config, "--out", os.path.join(self.tmp, "o2"), "--archs", "gfx1100")
        self.assertEqual(r.returncode, 2)
        self.assertIn("arch(s) gfx1100 not in pack provider_decode (it has: gfx942, gfx950, sm_90)", r.stderr)
        broken = os.path.join(self.tmp, "broken.yaml")
        with open(broken, "w") as f:
            f.write("pack: x\nfamily: nope\n")
        r = ingot("build", broken, "--out", os.path.join(self.tmp, "o3"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("error:", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "o3")))
        afile = os.path.join(self.tmp, "afile")
        open(afile, "w").close()
        r = ingot("build", self.config, "--out", afile)
        self.assertEqual(r.returncode, 2)
        self.assertIn("not a folder", r.stderr)

    def test_7_generate_default_out(self):
        cwd = os.path.join(self.tmp, "cwd")
        os.makedirs(cwd)
        before = sorted(os.listdir(os.path.join(REPO, "generated")))
        r = ingot("generate", "--quiet", self.config, cwd=cwd)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.isfile(os.path.join(cwd, PACK, "dispatch", f"{PACK}_dispatch.c")))
        self.assertEqual(sorted(os.listdir(os.path.join(REPO, "generated"))), before)
        # the source tree's own configs keep generated/ (the drift check): check from elsewhere finds it
        r = ingot("check", os.path.join(REPO, "configs", "attention_decode.yaml"), cwd=cwd)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, re.escape("ingot check: 1 pack(s) up to date"))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    LIB, INSPECT = os.path.abspath(sys.argv.pop(1)), os.path.abspath(sys.argv.pop(1))
    unittest.main()
