"""tools/check_wait_order.py's SASS reading, on synthetic listings in
cuobjdump's format: a global load before the grid dependency wait is found
(predicated or not, any width), loads after it and constant loads are not, and
a kernel without the wait is reported."""

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


if __name__ == "__main__":
    unittest.main()
