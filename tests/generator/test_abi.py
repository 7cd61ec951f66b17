"""templates/ingot_abi.h, the arch and family constants C, device code and the
generator share, is what `ingot abi` makes from generator/ingot/archs.py and the
families' Family.abi; a stale copy fails the check and nothing is written; and
no C or device header defines one of its constants a second time."""

import os
import re
import tempfile
import unittest

from gen_support import REPO, run_cli

from ingot import abi
from ingot.archs import ARCHS
from ingot.cli import EXIT_DRIFT, EXIT_OK
from ingot.families import FAMILIES
from ingot.families import attention_decode as ad

HEADER = os.path.join(REPO, "templates", "ingot_abi.h")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def c_sources():
    """Every hand-written C, C++ and device source of the runtime, the templates and the tests."""
    for top in ("runtime", "templates", "tests"):
        for dirpath, _dirs, files in os.walk(os.path.join(REPO, top)):
            for fn in files:
                if fn.endswith((".c", ".h", ".cpp", ".j2")) and fn != "ingot_abi.h":
                    yield os.path.join(dirpath, fn)


class AbiHeaderTest(unittest.TestCase):
    def test_the_checked_in_header_is_current(self):
        rc, out, err = run_cli(["abi", "--check"])
        self.assertEqual((rc, err), (EXIT_OK, ""))
        self.assertIn("is current", out)
        self.assertEqual(read(HEADER), abi.render())

    def test_a_stale_header_fails_the_check_and_is_left_alone(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "ingot_abi.h")
            stale = abi.render().replace("#define INGOT_AD_MAX_SPLITS 256", "#define INGOT_AD_MAX_SPLITS 128")
            with open(path, "w", encoding="utf-8") as f:
                f.write(stale)
            rc, out, err = run_cli(["abi", "--check", "--out", path])
            self.assertEqual(rc, EXIT_DRIFT)
            self.assertIn(f"{path} is out of date (run `ingot abi`", err)
            self.assertEqual(read(path), stale)
            missing = os.path.join(d, "none.h")
            rc, _out, err = run_cli(["abi", "--check", "--out", missing])
            self.assertEqual(rc, EXIT_DRIFT)
            self.assertIn("is missing", err)
            self.assertFalse(os.path.exists(missing))
            rc, out, _err = run_cli(["abi", "--out", path])  # writing mends it
            self.assertEqual(rc, EXIT_OK)
            self.assertEqual(read(path), abi.render())
            self.assertEqual(os.listdir(d), ["ingot_abi.h"])  # no temporary left behind

    def test_the_arch_table_is_archs_py(self):
        rows = re.findall(r'X\("(\w+)", INGOT_VENDOR_(\w+), (\d+), (\d+), (\d+), (\d+), (\d+), (\d+)\)',
                          read(HEADER))
        want = [(a.name, a.vendor.upper(), a.wave_size, a.compute_units, a.max_lds_bytes,
                 a.max_dynamic_lds_bytes, a.max_registers, a.code_object_version)
                for a in (ARCHS[n] for n in sorted(ARCHS)) if not a.emulates]
        self.assertEqual([(r[0], r[1], *map(int, r[2:])) for r in rows], want)
        self.assertEqual([r[0] for r in rows], ["gfx942", "gfx950", "sm_90"])
        self.assertEqual({r[0]: int(r[3]) for r in rows}, {"gfx942": 304, "gfx950": 256, "sm_90": 132})

    def test_every_family_constant_is_in_the_header(self):
        text = read(HEADER)
        names = [c.name for f in FAMILIES.values() for c in f.abi]
        self.assertIn("INGOT_AD_MAX_SPLITS", names)
        self.assertIn("INGOT_KVA_ENTRY_APPEND", names)
        self.assertEqual(len(names), len(set(names)))
        for f in FAMILIES.values():
            for c in f.abi:
                m = re.search(rf"^#define {c.name} (\S+)$", text, re.M)
                self.assertIsNotNone(m, c.name)
                self.assertEqual(int(m.group(1), 0), c.value, c.name)
        # the entries follow the UDD's order; the flags do not overlap
        self.assertEqual([c.value for c in ad.ABI if c.name.startswith("INGOT_AD_ENTRY_")],
                         list(range(len(ad.ENTRY_POINTS))))
        v = {c.name: c.value for c in ad.ABI}
        fill = v["INGOT_AD_FLAG_FILL_MASK"] << v["INGOT_AD_FLAG_FILL_SHIFT"]
        bits = [v["INGOT_AD_FLAG_CAUSAL"], v["INGOT_AD_FLAG_WRITE_LSE"], v["INGOT_AD_FLAG_BALANCED"], fill,
                v["INGOT_AD_FLAG_TOP_LEFT"], v["INGOT_AD_FLAG_EVEN"], 0x7fff << v["INGOT_AD_FLAG_BATCH_SHIFT"]]
        for i, a in enumerate(bits):
            for b in bits[i + 1:]:
                self.assertEqual(a & b, 0, (hex(a), hex(b)))

    def test_no_constant_is_defined_a_second_time(self):
        names = [c.name for f in FAMILIES.values() for c in f.abi] + ["INGOT_ARCH_TABLE", "INGOT_DEFAULT_COMPUTE_UNITS"]
        pattern = re.compile(r"^\s*#\s*define\s+(" + "|".join(map(re.escape, names)) + r")\b", re.M)
        found = [(os.path.relpath(p, REPO), m.group(1)) for p in c_sources() for m in pattern.finditer(read(p))]
        self.assertEqual(found, [])
        # nor the arch facts the runtime used to keep as literals
        util = read(os.path.join(REPO, "runtime", "src", "util.c"))
        self.assertNotRegex(util, r'"gfx942"|"sm_90"|\b304\b')
        self.assertIn("INGOT_ARCH_TABLE(", util)


if __name__ == "__main__":
    unittest.main()
