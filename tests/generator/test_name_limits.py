"""Pack names are capped where the runtime would refuse a name derived from
them (issue 21, item 7): the dispatch symbol (128 bytes, dispatch_registry.c)
and every descriptor string (INGOT_MAX_STRING_BYTES, internal.h). The limits
are read from the C source here, so the generator and the runtime cannot drift
apart."""

import json
import os
import re
import shutil
import tempfile
import unittest
from unittest import mock

from gen_support import MINIMAL_CONFIG, REPO, package_with_fake_objects, run_cli

import ingot.descriptors as descriptors
from ingot.archs import ARCHS
from ingot.cli import EXIT_CONFIG, EXIT_OK

RUNTIME_SRC = os.path.join(REPO, "runtime", "src")


def c_source(name):
    with open(os.path.join(RUNTIME_SRC, name), encoding="utf-8") as f:
        return f.read()


def c_constant(token):
    """token itself when it is a number, else the value of the #define of that name in runtime/src."""
    if token.isdigit():
        return int(token)
    for name in sorted(os.listdir(RUNTIME_SRC)):
        if name.endswith((".h", ".c")):
            m = re.search(rf"^#define\s+{re.escape(token)}\s+\(?(\d+)\)?", c_source(name), re.M)
            if m:
                return int(m.group(1))
    raise AssertionError(f"no #define {token} in runtime/src")


def runtime_dispatch_symbol_limit():
    src = c_source("dispatch_registry.c")
    body = re.search(r"static int generated_name\(const char \*s\) \{(.*?)\n\}", src, re.S)
    assert body, "generated_name() not found in dispatch_registry.c"
    limits = re.findall(r"\bn\s*>\s*(\w+)", body.group(1))
    assert len(limits) == 1, limits
    return c_constant(limits[0])


def config_with_pack(tmp, name):
    with open(MINIMAL_CONFIG, encoding="utf-8") as f:
        text = f.read()
    path = os.path.join(tmp, "long.yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace("pack: minimal", f"pack: {name}"))
    return path


class RuntimeLimitsTest(unittest.TestCase):

    def test_the_generator_knows_the_runtimes_limits(self):
        self.assertEqual(descriptors.MAX_DISPATCH_SYMBOL_BYTES, runtime_dispatch_symbol_limit())
        self.assertEqual(descriptors.MAX_STRING_BYTES, c_constant("INGOT_MAX_STRING_BYTES"))


class PackNameTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ingot-names-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.longest = descriptors.MAX_DISPATCH_SYMBOL_BYTES - len("ingot__dispatch")

    def test_accept_the_longest_pack_name_and_package_it(self):
        name = "p" * self.longest
        out = os.path.join(self.tmp, "gen")
        rc, _, stderr = run_cli(["generate", "--quiet", "--out", out, config_with_pack(self.tmp, name)])
        self.assertEqual(rc, EXIT_OK, stderr)
        with open(os.path.join(out, name, "descriptors", f"{name}.udd.json"), encoding="utf-8") as f:
            symbol = json.load(f)["dispatch_symbol"]
        self.assertEqual(len(symbol), descriptors.MAX_DISPATCH_SYMBOL_BYTES)
        # The packaged KDP's strings are where limited_names says, and within the limit.
        rc, packed, err = package_with_fake_objects(os.path.join(out, name), self.tmp)
        self.assertEqual(rc, 0, err)
        with open(os.path.join(packed, f"{name}.kdp.json"), encoding="utf-8") as f:
            kdp = json.load(f)
        (kd,) = kdp["kernelDescriptors"]
        for arch, obj in kd["kernel_source"]["objects"].items():
            self.assertEqual(obj["path"], descriptors.packaged_object_path(kd["name"], ARCHS[arch]))
            self.assertLessEqual(len(obj["path"]), descriptors.MAX_STRING_BYTES)

    def test_one_character_more_is_refused_naming_the_limit(self):
        name = "p" * (self.longest + 1)
        out = os.path.join(self.tmp, "gen")
        rc, stdout, stderr = run_cli(["generate", "--out", out, config_with_pack(self.tmp, name)])
        self.assertEqual(rc, EXIT_CONFIG)
        self.assertEqual(stdout, "")
        (line, last) = stderr.splitlines()
        self.assertTrue(line.startswith(f"error: long.yaml:4:7: pack: pack name of {self.longest + 1} characters "
                                        "is too long: the dispatch symbol 'ingot_ppp"), line)
        self.assertTrue(line.endswith(f"would be 129 bytes, over the runtime's limit of 128 bytes on dispatch "
                                      f"symbols (runtime/src/dispatch_registry.c) (allowed: a pack name of at "
                                      f"most {self.longest} characters)"), line)
        self.assertFalse(os.path.exists(out))

    def test_a_name_that_passes_the_string_limit_is_refused_too(self):
        # With the pack name below the dispatch limit no kernel name reaches 256 bytes
        # today; a looser dispatch limit shows the string rule at work on its own.
        with mock.patch.object(descriptors, "DISPATCH_LIMIT", ("dispatch symbols", 4096)):
            ok = "q" * 200
            rc, _, stderr = run_cli(["list", config_with_pack(self.tmp, ok)])
            self.assertEqual(rc, EXIT_OK, stderr)
            name = "q" * 240
            rc, _, stderr = run_cli(["list", config_with_pack(self.tmp, name)])
        self.assertEqual(rc, EXIT_CONFIG)
        inst = f"{name}_bf16_d128_g4_sq1_contig_w4t16"
        path = f"code/sm_90/{inst}.sm_90.cubin"
        # The first name past the limit is named; the allowed length counts every name.
        self.assertIn(f": pack: pack name of 240 characters is too long: kernel {inst[:12]}", stderr)
        self.assertIn(f"'s name '{inst[:20]}", stderr)
        self.assertIn(f"would be {len(inst)} bytes, over the runtime's limit of 256 bytes on descriptor strings "
                      f"(INGOT_MAX_STRING_BYTES, runtime/src/internal.h) (allowed: a pack name of at most "
                      f"{240 - (len(path) - 256)} characters for these variants)", stderr)

if __name__ == "__main__":
    unittest.main()
