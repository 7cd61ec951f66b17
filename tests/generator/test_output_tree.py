"""How generate writes a pack tree (issue 21, items 5, 6 and 12): runs on one
output take turns on a lock; a pack tree is written whole or not at all, also
when the run is SIGKILLed; unchanged files keep their inode and mtime; what a
killed run leaves is cleaned by the next; files ingot did not write are kept
unless --prune-unknown."""

import fcntl
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from unittest import mock

from gen_support import MINIMAL_CONFIG, REPO, read_tree, run_cli, snapshot

import ingot.write
from ingot.cli import EXIT_CONFIG, EXIT_DRIFT, EXIT_OK, render_all

PACK = "minimal"


def configs(tmp):
    """Two valid configs of pack 'minimal', both named minimal.yaml (so the
    sources they share are byte-identical): a (1 instance), b (2 instances)."""
    with open(MINIMAL_CONFIG, encoding="utf-8") as f:
        text = f.read()
    out = {}
    for name, t in (("a", text), ("b", text.replace("head_dim: [128]", "head_dim: [64, 128]")),
                    ("c", text.replace("archs: [gfx942, sm_90]", "archs: [gfx942, gfx950, sm_90]"))):
        os.makedirs(os.path.join(tmp, name))
        out[name] = os.path.join(tmp, name, "minimal.yaml")
        with open(out[name], "w", encoding="utf-8") as f:
            f.write(t)
    return out


def temporaries(root):
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        found += [os.path.join(dirpath, n) for n in dirnames + filenames if n.startswith(".ingot-")]
    return found


def env():
    return dict(os.environ, PYTHONPATH=os.path.join(REPO, "generator"))


# Runs `ingot generate` with every write step slowed down, and says on stdout when
# the write phase starts, so that the test can kill it inside that phase.
SLOW_GENERATE = r"""
import os, shutil, sys, time
import ingot.write as w
pause = float(os.environ["INGOT_TEST_PAUSE"])
def slow(f):
    def g(*a, **k):
        time.sleep(pause)
        r = f(*a, **k)
        time.sleep(pause)
        return r
    return g
for name in ("_put_file", "_link", "_makedirs", "swap_in", "recover"):
    setattr(w, name, slow(getattr(w, name)))
shutil.rmtree = slow(shutil.rmtree)
if os.environ.get("INGOT_TEST_NO_EXCHANGE"):
    w._exchange = lambda a, b: False
real = w.write_packs
def marked(*a, **k):
    print("writing", flush=True)
    return real(*a, **k)
w.write_packs = marked
from ingot.cli import main
sys.exit(main(sys.argv[1:]))
"""


class TreeTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ingot-tree-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.cfg = configs(self.tmp)
        self.want = {k: render_all([p])[PACK][1] for k, p in self.cfg.items()}
        self.out = os.path.join(self.tmp, "out")
        self.root = os.path.join(self.out, PACK)

    def generate(self, which, *extra):
        return run_cli(["generate", "--out", self.out, *extra, self.cfg[which]])

    def tree(self):
        return read_tree(self.root) if os.path.isdir(self.root) else None


class AtomicTreeTest(TreeTest):

    def test_accept_a_changed_config_replaces_the_whole_tree(self):
        rc, _, _ = self.generate("a")
        self.assertEqual(rc, EXIT_OK)
        self.assertEqual(self.tree(), self.want["a"])
        rc, stdout, _ = self.generate("b")
        self.assertEqual(rc, EXIT_OK)
        self.assertEqual(self.tree(), self.want["b"])
        self.assertIn("14 files (5 written, 0 removed)", stdout)  # KDP, MANIFEST, d64's 2 sources, its UMD
        self.assertEqual(temporaries(self.out), [])

    def test_unchanged_files_keep_their_inode_and_mtime(self):
        self.generate("a")
        shared = os.path.join(self.root, "kernels", "gfx942", "minimal_bf16_d128_g4_sq1_contig_w4t16.hip")
        kdp = os.path.join(self.root, "descriptors", "minimal.kdp.json")
        before, kdp_before, root_before = os.stat(shared), os.stat(kdp), os.stat(self.root)
        rc, _, _ = self.generate("b")
        self.assertEqual(rc, EXIT_OK)
        after = os.stat(shared)
        self.assertEqual((after.st_ino, after.st_mtime_ns), (before.st_ino, before.st_mtime_ns))
        self.assertNotEqual(os.stat(kdp).st_ino, kdp_before.st_ino)  # control: the KDP was rewritten
        self.assertNotEqual(os.stat(self.root).st_ino, root_before.st_ino)  # in a new tree

    def test_exchange_works_here(self):
        # The SIGKILL test below relies on renameat2(RENAME_EXCHANGE) on this filesystem.
        a, b = os.path.join(self.tmp, "x"), os.path.join(self.tmp, "y")
        os.mkdir(a)
        os.mkdir(b)
        open(os.path.join(a, "in_a"), "w").close()
        if not ingot.write._exchange(a, b):
            self.skipTest("renameat2(RENAME_EXCHANGE) is not available here")
        self.assertEqual(os.listdir(b), ["in_a"])
        self.assertEqual(os.listdir(a), [])

    def sigkill_runs(self, rounds, no_exchange=False):
        rc, _, _ = self.generate("a")
        self.assertEqual(rc, EXIT_OK)
        rng = random.Random()
        e = dict(env(), INGOT_TEST_PAUSE="0.002")
        if no_exchange:
            e["INGOT_TEST_NO_EXCHANGE"] = "1"
        def start(target):
            p = subprocess.Popen([sys.executable, "-c", SLOW_GENERATE, "generate", "--quiet", "--out",
                                  self.out, self.cfg[target]], env=e, stdout=subprocess.PIPE, text=True)
            self.assertEqual(p.stdout.readline(), "writing\n")
            return p, time.monotonic()

        # How long the slowed write phase takes here, from the mark to the exit (a to b and back).
        spans = []
        for target in ("b", "a"):
            p, t0 = start(target)
            self.assertEqual(p.wait(timeout=120), 0)
            spans.append(time.monotonic() - t0)
            p.stdout.close()
        span = max(spans)
        current, outcomes = "a", {"old": 0, "new": 0, "between": 0}
        for _ in range(rounds):
            target = "b" if current == "a" else "a"
            p, t0 = start(target)
            try:
                p.wait(timeout=rng.uniform(0, span))  # a random moment of the write phase
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGKILL)
            p.wait()
            p.stdout.close()
            tree = self.tree()
            if tree == self.want[current]:
                outcomes["old"] += 1
            elif tree == self.want[target]:
                outcomes["new"] += 1
            else:
                # Only the two-rename fallback has a moment without the pack folder:
                # then its old tree is beside it, whole, under the journal's name.
                self.assertTrue(no_exchange and tree is None, f"a mixed tree after SIGKILL: {sorted(tree or [])}")
                (old,) = [n for n in os.listdir(self.out) if n.startswith(".ingot-old-minimal-")]
                self.assertEqual(read_tree(os.path.join(self.out, old)), self.want[current])
                outcomes["between"] += 1
            # The next run cleans up after the killed one and writes its tree whole.
            rc, _, stderr = self.generate(target)
            self.assertEqual(rc, EXIT_OK, stderr)
            self.assertEqual(self.tree(), self.want[target])
            self.assertEqual(temporaries(self.out), [])
            current = target
        return outcomes

    def test_sigkill_during_the_write_leaves_the_old_or_the_new_tree(self):
        outcomes = self.sigkill_runs(40)
        # Both outcomes were seen, so the kills did land inside the write phase.
        self.assertGreater(outcomes["old"], 0, outcomes)
        self.assertGreater(outcomes["new"], 0, outcomes)

    def test_sigkill_with_the_two_rename_fallback(self):
        outcomes = self.sigkill_runs(25, no_exchange=True)
        self.assertGreater(outcomes["old"] + outcomes["between"], 0, outcomes)

    def test_fallback_swap_without_exchange(self):
        self.generate("a")
        with mock.patch.object(ingot.write, "_exchange", return_value=False):
            rc, _, _ = self.generate("b")
        self.assertEqual(rc, EXIT_OK)
        self.assertEqual(self.tree(), self.want["b"])
        self.assertEqual(temporaries(self.out), [])

    def test_what_a_killed_run_left_is_cleaned(self):
        self.generate("a")
        stage = os.path.join(self.out, ".ingot-stage-minimal-0badf00d")
        os.makedirs(os.path.join(stage, "kernels"))
        open(os.path.join(stage, "kernels", "half.hip"), "w").close()
        # A per-file temporary of an older ingot inside the tree.
        with open(os.path.join(self.root, "kernels", "gfx942", ".ingot-k2j3h4"), "w") as f:
            f.write("half a kernel")
        rc, stdout, _ = self.generate("a")
        self.assertEqual(rc, EXIT_OK)
        self.assertIn("11 files (0 written, 1 removed)", stdout)
        self.assertEqual(self.tree(), self.want["a"])
        self.assertEqual(temporaries(self.out), [])

    def test_an_old_tree_without_its_pack_folder_goes_back(self):
        # Killed between the fallback's two renames: the old tree under the journal's name.
        self.generate("a")
        old = os.path.join(self.out, ".ingot-old-minimal-12345678")
        os.rename(self.root, old)
        with open(os.path.join(old, "notes.txt"), "w") as f:
            f.write("mine\n")
        rc, stdout, _ = self.generate("b")
        self.assertEqual(rc, EXIT_OK)
        self.assertEqual(self.tree(), dict(self.want["b"], **{"notes.txt": "mine\n"}))
        self.assertEqual(temporaries(self.out), [])


class EnsureFolderTest(unittest.TestCase):
    """ingot.write.ensure_folder judges the path after trying to make it, so a folder that a
    concurrent run creates between the look and the attempt is taken, not refused (CI saw one of
    eight concurrent generates refuse 'not a folder' that way)."""

    def test_a_folder_made_meanwhile_is_taken(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out")
            real_isdir, calls = os.path.isdir, []

            def isdir(path):  # the first look: not there yet; meanwhile another run makes it
                calls.append(path)
                if len(calls) == 1:
                    os.mkdir(out)
                    return False
                return real_isdir(path)

            with mock.patch("ingot.write.os.path.isdir", isdir):
                ingot.write.ensure_folder(out)
            self.assertTrue(real_isdir(out))
            self.assertGreaterEqual(len(calls), 2)

    def test_a_file_or_a_dangling_link_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            f, link = os.path.join(tmp, "f"), os.path.join(tmp, "l")
            with open(f, "w") as fh:
                fh.write("x\n")
            os.symlink(os.path.join(tmp, "missing"), link)
            for path in (f, link):
                with self.subTest(path=path):
                    with self.assertRaisesRegex(ingot.write.OutputError, "not a folder"):
                        ingot.write.ensure_folder(path)
            with open(f) as fh:
                self.assertEqual(fh.read(), "x\n")  # nothing written
            self.assertFalse(os.path.exists(os.path.join(tmp, "missing")))

    def test_a_missing_folder_is_made(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "a", "b")
            ingot.write.ensure_folder(out)
            self.assertTrue(os.path.isdir(out))


class LockTest(TreeTest):

    def test_concurrent_generates_take_turns(self):
        for round_ in range(10):
            procs = [subprocess.Popen([sys.executable, "-m", "ingot", "generate", "--quiet", "--out", self.out,
                                       self.cfg["ab"[(i + round_) % 2]]], env=env(),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                     for i in range(8)]
            results = [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in procs]
            for p in procs:
                p.stdout.close()
                p.stderr.close()
            self.assertEqual(results, [(0, "", "")] * 8, f"round {round_}")
            self.assertIn(self.tree(), (self.want["a"], self.want["b"]))
            self.assertEqual(temporaries(self.out), [])

    def hold_lock(self):
        os.makedirs(self.out, exist_ok=True)
        fd = os.open(self.out, os.O_RDONLY | os.O_DIRECTORY)
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd

    def test_a_held_lock_times_out_with_a_message(self):
        self.generate("a")
        before = snapshot(self.out)
        fd = self.hold_lock()
        try:
            for command in ("generate", "check"):
                with self.subTest(command=command):
                    rc, stdout, stderr = run_cli([command, "--lock-timeout", "0.3", "--out", self.out,
                                                  self.cfg["b"]])
                    self.assertEqual(rc, EXIT_CONFIG)
                    self.assertEqual(stdout, "")
                    self.assertEqual(stderr.splitlines(), [
                        f"error: {self.out}: another ingot run has held this output folder's lock for 0.3 s; "
                        "gave up waiting (allowed: --lock-timeout SECONDS)", "ingot: nothing was written"])
        finally:
            os.close(fd)
        self.assertEqual(snapshot(self.out), before)
        rc, _, _ = self.generate("b")  # and once it is let go, the run goes through
        self.assertEqual(rc, EXIT_OK)


class ForeignFilesTest(TreeTest):

    def add_foreign(self):
        with open(os.path.join(self.root, "notes.txt"), "w") as f:
            f.write("my notes\n")
        with open(os.path.join(self.root, "README"), "w") as f:
            f.write("read me\n")
        os.makedirs(os.path.join(self.root, "mine", "empty"))
        with open(os.path.join(self.root, "kernels", "gfx942", "experiment.hip"), "w") as f:
            f.write("// mine\n")
        os.mkfifo(os.path.join(self.root, "pipe"))  # never opened, or the run would hang

    def test_files_ingot_did_not_write_are_kept(self):
        self.generate("a")
        self.add_foreign()
        rc, stdout, stderr = self.generate("b")
        self.assertEqual(rc, EXIT_OK, stderr)
        self.assertIn("14 files (5 written, 0 removed) in ", stdout)
        self.assertTrue(stdout.rstrip().endswith(
            "; kept 4 file(s) ingot did not write: README, kernels/gfx942/experiment.hip, notes.txt, pipe "
            "(--prune-unknown removes them)"), stdout)
        self.assertEqual(read_tree_but_fifo(self.root), dict(
            self.want["b"], **{"notes.txt": "my notes\n", "README": "read me\n",
                               "kernels/gfx942/experiment.hip": "// mine\n"}))
        self.assertTrue(os.path.isdir(os.path.join(self.root, "mine", "empty")))
        # Back to a: b's own d64 files go, the others' stay.
        rc, stdout, _ = self.generate("a")
        self.assertIn("11 files (2 written, 3 removed)", stdout)
        self.assertEqual(read_tree_but_fifo(self.root), dict(
            self.want["a"], **{"notes.txt": "my notes\n", "README": "read me\n",
                               "kernels/gfx942/experiment.hip": "// mine\n"}))

    def test_prune_unknown_removes_them(self):
        self.generate("a")
        self.add_foreign()
        rc, stdout, _ = self.generate("a", "--prune-unknown")
        self.assertEqual(rc, EXIT_OK)
        self.assertIn("11 files (0 written, 4 removed) in ", stdout)
        self.assertTrue(stdout.rstrip().endswith(
            "; of the removed, 4 ingot did not write: README, kernels/gfx942/experiment.hip, notes.txt, pipe"))
        self.assertEqual(self.tree(), self.want["a"])
        self.assertFalse(os.path.exists(os.path.join(self.root, "mine")))

    def test_a_tree_of_an_older_ingot_without_manifest(self):
        self.generate("b")
        os.unlink(os.path.join(self.root, "MANIFEST.ingot"))
        with open(os.path.join(self.root, "notes.txt"), "w") as f:
            f.write("my notes\n")
        rc, stdout, _ = self.generate("a")
        self.assertEqual(rc, EXIT_OK)
        # Its own folders were the generator's: d64's files go; notes.txt stays.
        self.assertIn("11 files (2 written, 3 removed)", stdout)
        self.assertEqual(self.tree(), dict(self.want["a"], **{"notes.txt": "my notes\n"}))

    def test_a_file_where_a_new_folder_goes_is_refused(self):
        self.generate("a")
        blocker = os.path.join(self.root, "kernels", "gfx950")
        with open(blocker, "w") as f:
            f.write("mine\n")
        before = snapshot(self.out)
        rc, stdout, stderr = self.generate("c")
        self.assertEqual(rc, EXIT_CONFIG)
        self.assertEqual(stderr.splitlines(), [
            f"error: {blocker}: a file ingot did not write is where ingot writes the folder kernels/gfx950/ "
            "of pack 'minimal' (move it away, or use --prune-unknown)", "ingot: nothing was written"])
        self.assertEqual(snapshot(self.out), before)
        rc, _, _ = self.generate("c", "--prune-unknown")
        self.assertEqual(rc, EXIT_OK)
        self.assertEqual(self.tree(), self.want["c"])

    def test_check_reports_any_file_ingot_did_not_write(self):
        from ingot.write import diff_tree

        self.generate("a")
        self.assertEqual(diff_tree(self.root, self.want["a"], "g/minimal"), "")  # control
        os.mkfifo(os.path.join(self.root, "pipe"))
        with open(os.path.join(self.root, "notes.txt"), "w") as f:
            f.write("my notes\n")
        rc, stdout, stderr = run_cli(["check", "--out", self.out, self.cfg["a"]])
        self.assertEqual(rc, EXIT_DRIFT)
        heads = [l for l in stdout.splitlines() if l.startswith(("--- ", "+++ "))]
        label = os.path.join(os.path.relpath(self.out, REPO), PACK)
        self.assertEqual(heads, [f"--- a/{label}/notes.txt", "+++ /dev/null",
                                 f"--- a/{label}/pipe", "+++ /dev/null"])
        self.assertIn("-<a FIFO, not a regular file>", stdout)


def read_tree_but_fifo(root):
    out = {}
    for dirpath, _, filenames in os.walk(root):
        for n in filenames:
            p = os.path.join(dirpath, n)
            if os.path.isfile(p):
                with open(p, encoding="utf-8") as f:
                    out[os.path.relpath(p, root)] = f.read()
    return out


if __name__ == "__main__":
    unittest.main()
