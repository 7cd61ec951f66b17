"""Every bad config in bad_configs/ is rejected with exactly the errors its
first lines promise (`# expect: error: <file>:<line>:<col>: <path>: <message>`),
all of them in one run, exit code 2, and nothing written. Each file is
data/minimal.yaml with one change (or a few, where the file says so)."""

import glob
import os
import shutil
import tempfile
import unittest
from unittest import mock

from gen_support import BAD_CONFIG_DIR, MINIMAL_CONFIG, REPO, run_cli, snapshot

import ingot.ctokens
from ingot.cli import EXIT_CONFIG, EXIT_OK

EXPECT = b"# expect: "


def expectations(path):
    """The leading `# expect: ` lines of a file, without the prefix. Read as
    bytes: one bad config is deliberately not UTF-8 past its header."""
    lines = []
    with open(path, "rb") as f:
        for raw in f:
            if not raw.startswith(EXPECT):
                break
            lines.append(raw[len(EXPECT):].rstrip(b"\n").decode("utf-8"))
    return lines


def bad_configs():
    return sorted(glob.glob(os.path.join(BAD_CONFIG_DIR, "*.yaml")))


class MinimalConfigTest(unittest.TestCase):
    """The accept case first: the config every bad one is derived from is good."""

    def test_minimal_config_generates(self):
        with tempfile.TemporaryDirectory() as out:
            rc, stdout, stderr = run_cli(["generate", "--out", out, MINIMAL_CONFIG])
            self.assertEqual(rc, EXIT_OK, stderr)
            self.assertEqual(stderr, "")
            self.assertIn("ingot: minimal: 1 instances, 2 kernel sources for 2 archs, 11 files (11 written, 0 removed)", stdout)
            self.assertTrue(os.path.isfile(os.path.join(
                out, "minimal", "kernels", "gfx942", "minimal_bf16_d128_g4_sq1_contig_w4t16.hip")))


class BadConfigTest(unittest.TestCase):

    def test_there_are_enough_bad_configs(self):
        self.assertGreaterEqual(len(bad_configs()), 30)

    def test_every_bad_config_promises_errors_naming_itself(self):
        for path in bad_configs():
            rel = os.path.relpath(path, REPO)
            with self.subTest(config=rel):
                lines = expectations(path)
                self.assertTrue(lines, f"{rel} has no `# expect:` line")
                for line in lines:
                    self.assertTrue(line.startswith(f"error: {rel}:"), line)

    def test_each_bad_config_reports_exactly_its_errors_and_writes_nothing(self):
        for path in bad_configs():
            rel = os.path.relpath(path, REPO)
            with self.subTest(config=rel), tempfile.TemporaryDirectory() as out:
                want = expectations(path)
                rc, stdout, stderr = run_cli(["generate", "--out", out, path])
                self.assertEqual(rc, EXIT_CONFIG)
                self.assertEqual(stdout, "")
                self.assertEqual(stderr.splitlines(),
                                 want + [f"ingot: {len(want)} error(s); nothing was written"])
                self.assertEqual(os.listdir(out), [])

    def test_check_and_list_reject_a_bad_config_the_same_way(self):
        path = os.path.join(BAD_CONFIG_DIR, "several_schema_errors.yaml")
        want = expectations(path)
        self.assertEqual(len(want), 4)
        for command in (["check"], ["list"], ["list", "--json"]):
            with self.subTest(command=command), tempfile.TemporaryDirectory() as out:
                args = command + ([] if command[0] == "list" else ["--out", out]) + [path]
                rc, stdout, stderr = run_cli(args)
                self.assertEqual(rc, EXIT_CONFIG)
                self.assertEqual(stdout, "")
                self.assertEqual(stderr.splitlines(), want + ["ingot: 4 error(s); nothing was written"])

    def test_errors_of_several_configs_are_reported_together(self):
        a = os.path.join(BAD_CONFIG_DIR, "head_dim_72.yaml")
        b = os.path.join(BAD_CONFIG_DIR, "unknown_arch.yaml")
        with tempfile.TemporaryDirectory() as out:
            rc, _, stderr = run_cli(["generate", "--out", out, a, b])
            self.assertEqual(rc, EXIT_CONFIG)
            self.assertEqual(stderr.splitlines(),
                             expectations(a) + expectations(b) + ["ingot: 2 error(s); nothing was written"])
            self.assertEqual(os.listdir(out), [])

    def test_two_configs_of_one_pack_are_an_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            elsewhere = os.path.join(tmp, "copy.yaml")
            shutil.copyfile(MINIMAL_CONFIG, elsewhere)
            out = os.path.join(tmp, "out")
            rc, _, stderr = run_cli(["generate", "--out", out, MINIMAL_CONFIG, elsewhere])
            self.assertEqual(rc, EXIT_CONFIG)
            # A config outside the repo is named by its file name, never by an absolute path.
            self.assertEqual(stderr.splitlines(), [
                "error: copy.yaml:1:1: pack: pack 'minimal' is also defined by another config",
                "ingot: 1 error(s); nothing was written"])
            self.assertFalse(os.path.exists(out))


def _changed_minimal(tmp):
    """A valid variant of minimal.yaml whose output differs from minimal's in
    files that exist (descriptors, dispatch) and in files that do not (d64)."""
    with open(MINIMAL_CONFIG, encoding="utf-8") as f:
        text = f.read()
    assert text.count("head_dim: [128]") == 1
    path = os.path.join(tmp, "minimal_changed.yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace("head_dim: [128]", "head_dim: [64, 128]"))
    return path


class NothingIsWrittenTest(unittest.TestCase):
    """An existing output folder is left byte for byte as it was when any config
    has an error, or when rendering fails halfway through."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ingot-test-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.out = os.path.join(self.tmp, "generated")
        rc, _, stderr = run_cli(["generate", "--quiet", "--out", self.out, MINIMAL_CONFIG])
        self.assertEqual(rc, EXIT_OK, stderr)
        self.before = snapshot(self.out)
        self.assertEqual(len([k for k in self.before if not k.endswith("/")]), 11)
        self.changed = _changed_minimal(self.tmp)

    def test_the_changed_config_would_write(self):
        # Control for the two tests below: without the error it does write.
        rc, stdout, _ = run_cli(["generate", "--out", self.out, self.changed])
        self.assertEqual(rc, EXIT_OK)
        self.assertIn("2 instances, 4 kernel sources for 2 archs, 14 files (9 written, 0 removed)", stdout)
        self.assertNotEqual(snapshot(self.out), self.before)

    def test_config_error_leaves_output_untouched(self):
        bad = os.path.join(BAD_CONFIG_DIR, "lds_too_big.yaml")
        rc, stdout, stderr = run_cli(["generate", "--out", self.out, self.changed, bad])
        self.assertEqual(rc, EXIT_CONFIG)
        self.assertEqual(stdout, "")
        self.assertEqual(stderr.splitlines()[-1], "ingot: 2 error(s); nothing was written")
        self.assertEqual(snapshot(self.out), self.before)

    def test_render_failure_midway_leaves_output_untouched(self):
        real = ingot.ctokens.c_dtype
        calls = []

        def fail_after_first_file(value):
            calls.append(value)
            if len(calls) > 1:
                raise ValueError("injected render failure")
            return real(value)

        with mock.patch("ingot.ctokens.c_dtype", fail_after_first_file):
            rc, stdout, stderr = run_cli(["generate", "--out", self.out, self.changed])
        self.assertEqual(len(calls), 2, "the first kernel file must have rendered before the failure")
        self.assertEqual(rc, 3)
        self.assertEqual(stdout, "")
        self.assertEqual(stderr.splitlines(), [
            "error: minimal: rendering failed: ValueError: injected render failure",
            "ingot: nothing was written"])
        self.assertEqual(snapshot(self.out), self.before)


if __name__ == "__main__":
    unittest.main()
