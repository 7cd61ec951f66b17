"""Inputs a careless user or an attacker gives the generator (issue 21, items 3
and 4): every one is a message and exit 2 (3 only for the generator's own
defects), never a traceback, a hang or exit 1. The bad configs themselves are
in bad_configs/ (yaml_anchor, yaml_billion_laughs, yaml_invalid_date, ...);
this file has what a YAML file cannot show: the time an alias bomb takes, a
config that is a folder or a FIFO, and the output side."""

import errno
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from unittest import mock

from gen_support import BAD_CONFIG_DIR, MINIMAL_CONFIG, REPO, run_cli, snapshot

import ingot.cli
import ingot.write
from ingot.cli import EXIT_CONFIG, EXIT_OK, EXIT_RENDER


def minimal_text():
    with open(MINIMAL_CONFIG, encoding="utf-8") as f:
        return f.read()


def write_config(folder, name, text):
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def run_module(args, timeout=60):
    """`python3 -m ingot ARGS` as the build runs it, in a fresh process."""
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "generator"))
    return subprocess.run([sys.executable, "-m", "ingot"] + args, env=env, capture_output=True, text=True,
                          timeout=timeout)


class PlainYamlTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ingot-hostile-")
        self.addCleanup(shutil.rmtree, self.tmp)

    def test_accept_quoted_ampersands_stars_and_core_tags(self):
        # Accept case first: '&', '*' and '!' inside quoted strings are text, and the
        # core tags construct what they name.
        text = minimal_text().replace("pack: minimal", 'pack: minimal\ndescription: "a & b, *c, !d"')
        text = text.replace("  waves: 4", '  waves: !!int "4"').replace("sdk_version: 0.1.0", "sdk_version: !!str 0.1.0")
        path = write_config(self.tmp, "ok.yaml", text)
        rc, _, stderr = run_cli(["generate", "--quiet", "--out", os.path.join(self.tmp, "out"), path])
        self.assertEqual(rc, EXIT_OK, stderr)
        pack = ingot.cli.load_pack(path)
        self.assertEqual(pack.description, "a & b, *c, !d")
        self.assertEqual(pack.instances[0].waves, 4)

    def test_alias_bombs_are_refused_in_milliseconds(self):
        for name in ("yaml_billion_laughs.yaml", "yaml_recursive_alias.yaml"):
            with self.subTest(config=name):
                start = time.monotonic()
                rc, _, stderr = run_cli(["generate", "--out", os.path.join(self.tmp, "out"),
                                         os.path.join(BAD_CONFIG_DIR, name)])
                self.assertLess(time.monotonic() - start, 5.0)
                self.assertEqual(rc, EXIT_CONFIG)
                self.assertIn("YAML anchors and aliases are not allowed", stderr)

    def test_a_bigger_alias_bomb_too(self):
        # 12 levels of 10: 10^12 if expanded; the first anchor stops it.
        levels = 'a0: &a0 "x"\n' + "".join(
            f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 13))
        path = write_config(self.tmp, "bomb.yaml", levels + minimal_text())
        start = time.monotonic()
        rc, _, stderr = run_cli(["list", path])
        self.assertLess(time.monotonic() - start, 5.0)
        self.assertEqual(rc, EXIT_CONFIG)
        self.assertEqual(stderr.splitlines()[0], "error: bomb.yaml:1:5: a0: YAML anchors and aliases are not "
                                                 "allowed (found anchor '&a0'; write the value out in full)")

    def test_no_traceback_from_any_bad_config_in_a_fresh_process(self):
        # The in-process runs of test_bad_configs cannot see what the interpreter
        # prints at exit; the build runs `python3 -m ingot`, so run it that way.
        for name in ("yaml_deep_nesting.yaml", "yaml_huge_integer.yaml", "yaml_invalid_date.yaml",
                     "yaml_int_tag_not_an_int.yaml", "yaml_recursive_alias.yaml", "not_utf8.yaml"):
            with self.subTest(config=name):
                r = run_module(["generate", "--out", os.path.join(self.tmp, "out"),
                                os.path.join(BAD_CONFIG_DIR, name)])
                self.assertEqual(r.returncode, EXIT_CONFIG, r.stderr)
                self.assertNotIn("Traceback", r.stderr)
                self.assertTrue(r.stderr.startswith("error: tests/generator/bad_configs/" + name + ":"), r.stderr)
                self.assertFalse(os.path.exists(os.path.join(self.tmp, "out")))


class UnreadableConfigTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ingot-hostile-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.out = os.path.join(self.tmp, "out")

    def assert_refused(self, config, message):
        rc, stdout, stderr = run_cli(["generate", "--out", self.out, config])
        self.assertEqual(rc, EXIT_CONFIG)
        self.assertEqual(stdout, "")
        self.assertEqual(stderr.splitlines(), [message, "ingot: 1 error(s); nothing was written"])
        self.assertFalse(os.path.exists(self.out))

    def test_a_folder(self):
        folder = os.path.join(self.tmp, "cfg.yaml")
        os.mkdir(folder)
        self.assert_refused(folder, "error: cfg.yaml:1:1: cannot read config: a folder (allowed: a YAML file)")

    def test_a_missing_file(self):
        self.assert_refused(os.path.join(self.tmp, "nope.yaml"),
                            "error: nope.yaml:1:1: cannot read config: No such file or directory")

    def test_a_fifo_does_not_hang(self):
        fifo = os.path.join(self.tmp, "fifo.yaml")
        os.mkfifo(fifo)
        r = run_module(["generate", "--out", self.out, fifo], timeout=30)
        self.assertEqual(r.returncode, EXIT_CONFIG)
        self.assertEqual(r.stderr.splitlines()[0],
                         "error: fifo.yaml:1:1: cannot read config: not a regular file (allowed: a YAML file)")

    def test_a_config_too_large(self):
        path = write_config(self.tmp, "big.yaml", minimal_text() + "#" * (1 << 20) + "\n")
        size = os.path.getsize(path)
        self.assert_refused(path, f"error: big.yaml:1:1: config of {size} bytes is too large "
                                  "(allowed: at most 1048576 bytes)")

    @unittest.skipIf(os.geteuid() == 0, "root reads a file of mode 000")
    def test_an_unreadable_file(self):
        path = write_config(self.tmp, "secret.yaml", minimal_text())
        os.chmod(path, 0)
        self.assert_refused(path, "error: secret.yaml:1:1: cannot read config: Permission denied")

    def test_no_config_given_and_none_found(self):
        with mock.patch.object(ingot.cli, "default_configs", return_value=[]):
            for command in ("generate", "check", "list"):
                with self.subTest(command=command):
                    rc, stdout, stderr = run_cli([command] + (["--out", self.out] if command != "list" else []))
                    self.assertEqual(rc, EXIT_CONFIG)
                    self.assertEqual(stdout, "")
                    self.assertIn("no config given and no *.yaml found here", stderr)
        self.assertFalse(os.path.exists(self.out))


class OutputLocationTest(unittest.TestCase):
    """Every output location is tried before any pack is written; an I/O error is
    `error: <path>: <reason>`, exit 2."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ingot-hostile-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.second = write_config(self.tmp, "second.yaml", minimal_text().replace("pack: minimal", "pack: second"))

    def test_accept_two_packs_in_one_output(self):
        out = os.path.join(self.tmp, "out")
        rc, stdout, stderr = run_cli(["generate", "--out", out, MINIMAL_CONFIG, self.second])
        self.assertEqual(rc, EXIT_OK, stderr)
        self.assertEqual(sorted(os.listdir(out)), ["minimal", "second"])

    def test_out_is_a_file(self):
        out = os.path.join(self.tmp, "file")
        open(out, "w").close()
        for command in ("generate", "check"):
            with self.subTest(command=command):
                rc, stdout, stderr = run_cli([command, "--out", out, MINIMAL_CONFIG])
                self.assertEqual(rc, EXIT_CONFIG)
                self.assertEqual(stderr.splitlines()[0].split(": ", 2)[:2], ["error", out])
                self.assertIn("not a folder", stderr)

    def test_out_below_a_file(self):
        blocker = os.path.join(self.tmp, "file")
        open(blocker, "w").close()
        rc, _, stderr = run_cli(["generate", "--out", os.path.join(blocker, "out"), MINIMAL_CONFIG])
        self.assertEqual(rc, EXIT_CONFIG)
        self.assertEqual(stderr.splitlines(), [
            f"error: {os.path.join(blocker, 'out')}: cannot create the output folder: Not a directory",
            "ingot: nothing was written"])

    def test_out_not_writable(self):
        if os.geteuid() != 0:
            out = os.path.join(self.tmp, "ro")
            os.mkdir(out)
            os.chmod(out, 0o555)
            self.addCleanup(os.chmod, out, 0o755)
        elif os.path.isdir("/sys") and not os.access("/proc/self", os.W_OK):
            out = "/sys/ingot-test-not-writable"  # root may write anywhere but sysfs
        else:
            self.skipTest("no folder here that this user cannot write")
        r = run_module(["generate", "--out", out, MINIMAL_CONFIG])
        self.assertEqual(r.returncode, EXIT_CONFIG, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        self.assertRegex(r.stderr.splitlines()[0], r"^error: /\S+: .*(Permission denied|Operation not permitted)")
        self.assertEqual(r.stderr.splitlines()[-1], "ingot: nothing was written")

    def test_a_blocked_second_pack_folder_stops_the_first_too(self):
        out = os.path.join(self.tmp, "out")
        rc, _, _ = run_cli(["generate", "--quiet", "--out", out, MINIMAL_CONFIG])
        self.assertEqual(rc, EXIT_OK)
        with open(os.path.join(out, "second"), "w") as f:
            f.write("a file where pack 'second' goes\n")
        changed = write_config(self.tmp, "minimal.yaml", minimal_text().replace("head_dim: [128]", "head_dim: [64, 128]"))
        before = snapshot(out)
        rc, stdout, stderr = run_cli(["generate", "--out", out, changed, self.second])
        self.assertEqual(rc, EXIT_CONFIG)
        self.assertEqual(stdout, "")
        self.assertEqual(stderr.splitlines(), [
            f"error: {os.path.join(out, 'second')}: a file, not a folder, is where pack 'second' is written "
            "(allowed: a folder, or nothing; move it away)", "ingot: nothing was written"])
        self.assertEqual(snapshot(out), before)

    def test_an_io_error_while_writing_leaves_the_old_trees(self):
        out = os.path.join(self.tmp, "out")
        rc, _, _ = run_cli(["generate", "--quiet", "--out", out, MINIMAL_CONFIG])
        self.assertEqual(rc, EXIT_OK)
        before = snapshot(out)
        changed = write_config(self.tmp, "minimal.yaml", minimal_text().replace("head_dim: [128]", "head_dim: [64, 128]"))
        real, calls = ingot.write._put_file, []

        def full_disk(path, data):
            calls.append(path)
            if len(calls) == 3:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
            real(path, data)

        with mock.patch.object(ingot.write, "_put_file", full_disk):
            rc, stdout, stderr = run_cli(["generate", "--out", out, changed, self.second])
        self.assertEqual(rc, EXIT_CONFIG)
        lines = stderr.splitlines()
        self.assertEqual(len(lines), 2, stderr)
        self.assertRegex(lines[0], r"^error: .*/\.ingot-stage-minimal-[0-9a-f]{8}/\S+: No space left on device$")
        self.assertEqual(lines[1], "ingot: nothing was written")
        self.assertEqual(snapshot(out), before)  # no staging folder left, the old tree as it was

    def test_an_output_folder_that_refuses_new_entries(self):
        # What an existing folder without write permission answers (root may write
        # anywhere, so the refusal is injected where the staging folder is made).
        out = os.path.join(self.tmp, "out")
        os.mkdir(out)
        real = os.mkdir

        def refuse(path, *a, **k):
            if os.path.basename(path).startswith(".ingot-stage-"):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
            return real(path, *a, **k)

        with mock.patch.object(ingot.write.os, "mkdir", refuse):
            rc, stdout, stderr = run_cli(["generate", "--out", out, MINIMAL_CONFIG, self.second])
        self.assertEqual(rc, EXIT_CONFIG)
        self.assertEqual(stderr.splitlines(), [
            f"error: {out}: cannot write in the output folder: Permission denied", "ingot: nothing was written"])
        self.assertEqual(os.listdir(out), [])

    def test_a_failed_swap_names_the_packs_written(self):
        out = os.path.join(self.tmp, "out")
        rc, _, _ = run_cli(["generate", "--quiet", "--out", out, MINIMAL_CONFIG, self.second])
        self.assertEqual(rc, EXIT_OK)
        second_before = snapshot(os.path.join(out, "second"))
        changed = minimal_text().replace("head_dim: [128]", "head_dim: [64, 128]")
        a = write_config(self.tmp, "minimal.yaml", changed)
        b = write_config(self.tmp, "second.yaml", changed.replace("pack: minimal", "pack: second"))
        real, calls = ingot.write.swap_in, []

        def fail_second(plan, stage, out_):
            calls.append(plan.name)
            if plan.name == "second":
                raise OSError(errno.EIO, os.strerror(errno.EIO), plan.root)
            real(plan, stage, out_)

        with mock.patch.object(ingot.write, "swap_in", fail_second):
            rc, stdout, stderr = run_cli(["generate", "--out", out, a, b])
        self.assertEqual(calls, ["minimal", "second"])
        self.assertEqual(rc, EXIT_CONFIG)
        self.assertEqual(stderr.splitlines(), [f"error: {os.path.join(out, 'second')}: Input/output error",
                                               "ingot: pack(s) minimal were written, the others were not"])
        self.assertEqual(snapshot(os.path.join(out, "second")), second_before)
        self.assertEqual(sorted(os.listdir(out)), ["minimal", "second"])  # no staging folder left
        self.assertTrue(os.path.isfile(os.path.join(out, "minimal", "kernels", "gfx942",
                                                    "minimal_bf16_d64_g4_sq1_contig_w4t16.hip")))

    def test_an_unexpected_exception_is_one_line_and_exit_3(self):
        with mock.patch.object(ingot.cli, "render_all", side_effect=KeyError("boom")):
            rc, stdout, stderr = run_cli(["generate", "--out", os.path.join(self.tmp, "o"), MINIMAL_CONFIG])
        self.assertEqual(rc, EXIT_RENDER)
        self.assertEqual(stderr.splitlines(), [
            "error: internal error in the generator (a defect, please report it): KeyError: 'boom'",
            "ingot: nothing was written"])


if __name__ == "__main__":
    unittest.main()
