"""`ingot check` is what CI runs: exit 0 when generated/ is what the configs
produce, exit 1 with a unified diff naming the file when it is not. The drift
cases run on a copy of the tree in a temporary folder; the real generated/ is
only ever read."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from gen_support import REPO, snapshot

PACK = "attention_decode"
KERNEL = "kernels/gfx950/attention_decode_bf16_d128_g4_sq1_contig_w4t16_tc.hip"


def run_check(root):
    """Runs `python3 -m ingot check` with the generator, templates and configs of root."""
    env = {k: v for k, v in os.environ.items() if k not in ("INGOT_TEMPLATE_DIR", "PYTHONPATH")}
    env["PYTHONPATH"] = os.path.join(root, "generator")
    return subprocess.run([sys.executable, "-m", "ingot", "check"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


class CommittedTreeTest(unittest.TestCase):

    def test_committed_generated_tree_is_up_to_date(self):
        before = snapshot(os.path.join(REPO, "generated"))
        r = run_check(REPO)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout, "ingot check: 2 pack(s) up to date\n")
        self.assertEqual(r.stderr, "")
        self.assertEqual(snapshot(os.path.join(REPO, "generated")), before)


class DriftTest(unittest.TestCase):

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="ingot-drift-")
        self.addCleanup(shutil.rmtree, self.root)
        ignore = shutil.ignore_patterns("__pycache__")
        for d in ("generator", "templates", "configs", "generated"):
            shutil.copytree(os.path.join(REPO, d), os.path.join(self.root, d), ignore=ignore)
        self.gen = os.path.join(self.root, "generated", PACK)
        self.assertTrue(os.path.isfile(os.path.join(self.gen, KERNEL)))

    def test_the_copy_is_up_to_date(self):
        # Control: the copy itself does not drift, so the diffs below come from the edits.
        r = run_check(self.root)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def assert_drift(self, r, diff_header):
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(r.stderr, "ingot check: generated/ differs from what the configs produce; "
                                   "run `ingot generate`\n")
        self.assertTrue(r.stdout.startswith(diff_header), r.stdout[:400])

    def test_an_edited_file_is_drift_with_a_diff_naming_it(self):
        path = os.path.join(self.gen, KERNEL)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        (line,) = [l for l in text.splitlines() if "/*waves*/ 4," in l]
        edited = line.replace("/*waves*/ 4,", "/*waves*/ 8,")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace(line, edited))
        r = run_check(self.root)
        self.assert_drift(r, f"--- a/generated/{PACK}/{KERNEL}\n+++ b/generated/{PACK}/{KERNEL}\n@@ ")
        lines = r.stdout.splitlines()
        # on disk (a/) the edit, what the config produces (b/) the original
        self.assertEqual([l for l in lines if l.startswith("-") and not l.startswith("---")], ["-" + edited])
        self.assertEqual([l for l in lines if l.startswith("+") and not l.startswith("+++")], ["+" + line])
        self.assertEqual(sum(l.startswith("--- ") for l in lines), 1)  # only that file

    def test_a_deleted_file_is_drift(self):
        os.unlink(os.path.join(self.gen, KERNEL))
        r = run_check(self.root)
        self.assert_drift(r, f"--- /dev/null\n+++ b/generated/{PACK}/{KERNEL}\n")

    def test_a_stray_file_is_drift(self):
        stray = "descriptors/stray.umd.json"
        with open(os.path.join(self.gen, stray), "w", encoding="utf-8") as f:
            f.write("{}\n")
        r = run_check(self.root)
        self.assert_drift(r, f"--- a/generated/{PACK}/{stray}\n+++ /dev/null\n@@ -1 +0,0 @@\n-{{}}\n")

    def test_a_config_edit_without_regenerating_is_drift(self):
        cfg = os.path.join(self.root, "configs", f"{PACK}.yaml")
        with open(cfg, encoding="utf-8") as f:
            text = f.read()
        self.assertEqual(text.count("ctas_per_cu: 2"), 1)
        with open(cfg, "w", encoding="utf-8") as f:
            f.write(text.replace("ctas_per_cu: 2", "ctas_per_cu: 3"))
        r = run_check(self.root)
        self.assertEqual(r.returncode, 1)
        names = [l[4:] for l in r.stdout.splitlines() if l.startswith("--- ")]
        # The split policy lives in the dispatch stub and the UDD; the config's
        # hash in the provenance of the KDP. Nothing else changes.
        self.assertEqual(names, [f"a/generated/{PACK}/descriptors/{PACK}.kdp.json",
                                 f"a/generated/{PACK}/descriptors/{PACK}.udd.json",
                                 f"a/generated/{PACK}/dispatch/{PACK}_dispatch.c"])


if __name__ == "__main__":
    unittest.main()
