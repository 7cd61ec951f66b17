"""tools/check_wait_order.py's SASS reading, on synthetic listings in
cuobjdump's format: a global load before the grid dependency wait is found
(predicated or not, any width), loads after it and constant loads are not, and
a kernel without the wait is reported. The q-order note: a 16-byte register
load after a ring kernel's first cp.async copy is reported, one before it (or
in a kernel without copies) is not."""

import unittest

import check_wait_order as cwo


def listing(*functions):
    """cuobjdump -sass text: (name, [instruction, ...]) per function."""
    lines = []
    for name, code in functions:
        lines.append(f"\t\tFunction : {name}")
        for i, ins in enumerate(code):
            lines.append(f"        /*{i * 16:04x}*/                   {ins} ;   /* 0x000000000000794d */")
    return "\n".join(lines) + "\n"


class CheckWaitOrderTest(unittest.TestCase):
    def test_loads_after_the_wait_pass(self):
        out = cwo.check_sass(listing(("k_split", [
            "LDC R1, c[0x0][0x28]", "ULDC.64 UR8, c[0x0][0x208]", "ACQBULK",
            "LDG.E.CG R2, desc[UR8][R2.64]", "@!P0 LDG.E.128.CONSTANT R4, desc[UR8][R6.64]", "EXIT"])))
        self.assertEqual(out, {"k_split": None})

    def test_a_load_before_the_wait_fails(self):
        for load in ("LDG.E.CONSTANT R2, desc[UR8][R2.64]", "@!P1 LDG.E.128 R4, desc[UR4][R2.64]",
                     "LD.E R3, desc[UR4][R4.64]"):
            with self.subTest(load=load):
                out = cwo.check_sass(listing(("k", ["LDC R1, c[0x0][0x28]", load, "ACQBULK", "EXIT"])))
                self.assertIn("global load before the wait", out["k"])
                self.assertIn(load.lstrip("@!P1 ").split()[0], out["k"])

    def test_shared_and_constant_loads_are_not_global(self):
        out = cwo.check_sass(listing(("k", ["LDS R2, [R3]", "LDSM.16.M88.4 R4, [R5]", "LDC R1, c[0x0][0x28]",
                                            "ACQBULK", "EXIT"])))
        self.assertEqual(out, {"k": None})

    def test_every_function_is_judged_alone(self):
        out = cwo.check_sass(listing(("a_split", ["LDG.E R1, desc[UR4][R2.64]", "ACQBULK"]),
                                     ("a_merge", ["ACQBULK", "LDG.E R1, desc[UR4][R2.64]"]),
                                     ("b_split", ["EXIT"])))
        self.assertIn("global load before the wait", out["a_split"])
        self.assertIsNone(out["a_merge"])
        self.assertEqual(out["b_split"], "no griddepcontrol.wait")


class QOrderTest(unittest.TestCase):
    # The seed split's prologue as ptxas laid it out at 7a2fd2e (q beside the length) and from
    # c75145a on (q after the first stage's copies): results/h200_2026-12-02_seed_bisect/sass_q_loads_*.
    BEFORE = ["ACQBULK", "LDG.E.STRONG.SM R22, desc[UR10][R2.64]", "@P2 LDG.E.128.STRONG.SM R4, desc[UR10][R4.64]",
              "@P2 LDG.E.128.STRONG.SM R8, desc[UR10][R8.64]", "LDGSTS.E.BYPASS.128 [R29], desc[UR10][R12.64], !P4",
              "LDGDEPBAR", "DEPBAR.LE SB0, 0x2", "EXIT"]
    AFTER = ["ACQBULK", "LDG.E.STRONG.SM R10, desc[UR10][R10.64]", "LDGSTS.E.BYPASS.128 [R37], desc[UR10][R14.64], !P4",
             "LDGDEPBAR", "@P0 LDG.E.128.STRONG.SM R20, desc[UR10][R20.64]", "LDGDEPBAR", "EXIT"]

    def test_q_loads_after_the_first_copy_are_noted(self):
        out = cwo.q_order(listing(("seed_split", self.AFTER)))
        self.assertIn("after the first chunk copy", out["seed_split"])
        self.assertIn("LDG.E.128.STRONG.SM R20", out["seed_split"])
        self.assertEqual(cwo.check_sass(listing(("seed_split", self.AFTER))), {"seed_split": None})  # not a failure

    def test_q_loads_before_the_first_copy_and_register_pipelines_are_not(self):
        register_pipeline = ["ACQBULK", "LDG.E.STRONG.SM R2, desc[UR4][R2.64]", "LDG.E.128 R4, desc[UR4][R6.64]",
                             "LDG.E.128 R8, desc[UR4][R10.64]", "EXIT"]  # K and V in registers: no copies
        out = cwo.q_order(listing(("a_split", self.BEFORE), ("b_split", register_pipeline),
                                  ("c_split", self.AFTER)))
        self.assertEqual((out["a_split"], out["b_split"]), (None, None))
        self.assertIsNotNone(out["c_split"])  # each function judged alone


if __name__ == "__main__":
    unittest.main()
