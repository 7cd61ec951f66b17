"""bench/ragged_plot.py (issue 23's plot of ratio against the spread of lengths): it reads the table
bench/decode.py --ragged writes, places every batch where its numbers say (balanced and not, the
x axis log 2 of the spread, y the ratio), draws the two targets, and refuses a file that is no such
table with a message, not a traceback."""

import os
import random
import re
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

import ragged_plot

NS = "{http://www.w3.org/2000/svg}"
HEADER = ("| batch | tokens | max / mean length | balanced | uniform, same tokens | ratio | no balance | ratio |\n"
          "|---|---|---|---|---|---|---|---|\n")


def table(rows):
    return "caption line\n\n" + HEADER + "".join(
        f"| {r['case']} | {r['tokens']} | {r['spread']:.1f} | {r['balanced']:.1f} us | {r['uniform']:.1f} us | "
        f"{r['ratio']:.2f}x | {r['unbalanced']:.1f} us | {r['ratio_unbalanced']:.2f}x |\n" for r in rows)


def random_rows(rng, n):
    rows = []
    for i in range(n):
        uniform = rng.uniform(20, 300)
        ratio, ratio_u = round(rng.uniform(0.8, 1.6), 2), round(rng.uniform(1.0, 5.0), 2)
        rows.append({"case": f"B={rng.choice((8, 32, 64))} case {i} <&>", "tokens": rng.randint(1000, 300000),
                     "spread": round(rng.uniform(1.0, 30.0), 1), "balanced": round(uniform * ratio, 1),
                     "uniform": round(uniform, 1), "ratio": ratio, "unbalanced": round(uniform * ratio_u, 1),
                     "ratio_unbalanced": ratio_u})
    return rows


class RaggedPlotTest(unittest.TestCase):
    def test_the_table_round_trips(self):
        rows = random_rows(random.Random(os.urandom(8)), 7)
        parsed = ragged_plot.parse_table(table(rows))
        self.assertEqual(len(parsed), 7)
        for want, got in zip(rows, parsed):
            self.assertEqual(got["case"], want["case"])
            for k in ("tokens", "spread", "ratio", "ratio_unbalanced", "balanced", "uniform"):
                self.assertAlmostEqual(got[k], want[k], places=6, msg=k)

    def test_points_sit_where_the_numbers_say(self):
        rows = ragged_plot.parse_table(table(random_rows(random.Random(os.urandom(8)), 6)))
        root = ET.fromstring(ragged_plot.svg(rows))  # well-formed, the case names escaped
        balanced = root.findall(f"{NS}circle[@class='balanced']")
        unbalanced = root.findall(f"{NS}rect[@class='unbalanced']")
        self.assertEqual((len(balanced), len(unbalanced)), (6, 6))
        xs = [float(c.get("cx")) for c in balanced]
        yb = [float(c.get("cy")) for c in balanced]
        yu = [float(r.get("y")) + 4 for r in unbalanced]
        # x grows with the spread (log scale: equal ratios, equal steps), y falls as the ratio grows.
        for i in range(6):
            for j in range(6):
                if rows[i]["spread"] < rows[j]["spread"]:
                    self.assertLess(xs[i], xs[j])
                if rows[i]["ratio"] > rows[j]["ratio"]:
                    self.assertLess(yb[i], yb[j])
            self.assertAlmostEqual(float(unbalanced[i].get("x")) + 4, xs[i], places=1)
            if rows[i]["ratio_unbalanced"] > rows[i]["ratio"]:
                self.assertLess(yu[i], yb[i])
        # The same mapping for both series: a balanced and an unbalanced point of equal ratio share a y.
        one = dict(rows[0], ratio=1.3, ratio_unbalanced=1.3)
        r2 = ET.fromstring(ragged_plot.svg([one]))
        self.assertAlmostEqual(float(r2.find(f"{NS}circle[@class='balanced']").get("cy")),
                               float(r2.find(f"{NS}rect[@class='unbalanced']").get("y")) + 4, places=1)

    def test_a_batch_of_empty_sequences_sits_at_spread_one(self):
        rows = random_rows(random.Random(os.urandom(8)), 2)
        rows[0]["spread"], rows[1]["spread"] = 0.0, 1.0  # decode.py's max / max(1, mean) of all-zero lengths
        root = ET.fromstring(ragged_plot.svg(rows))
        xs = [float(c.get("cx")) for c in root.findall(f"{NS}circle[@class='balanced']")]
        self.assertAlmostEqual(xs[0], xs[1], places=3)

    def test_targets_and_labels_are_drawn(self):
        text = ragged_plot.svg(ragged_plot.parse_table(table(random_rows(random.Random(1), 3))))
        self.assertIn("target 1.15x", text)
        self.assertIn("1.25x", text)
        self.assertIn("max / mean, log scale", text)
        self.assertIn("&lt;&amp;&gt;", text)

    def test_the_measured_table_plots(self):
        path = os.path.join(os.path.dirname(__file__), "..", "..", "results", "h200_2026-12-01_late",
                            "decode_ragged.md")
        with open(path) as f:
            rows = ragged_plot.parse_table(f.read())
        self.assertEqual([r["ratio"] for r in rows], [1.19, 1.07, 0.88, 1.00, 1.03, 1.27])

    def test_bad_input_is_refused_with_a_message(self):
        with self.assertRaisesRegex(ValueError, "no rows of a decode_ragged.md table"):
            ragged_plot.parse_table("| a | b |\n|---|---|\n| 1 | 2 |\n")
        with self.assertRaisesRegex(ValueError, "no rows to plot"):
            ragged_plot.svg([])
        script = ragged_plot.__file__
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.md")
            with open(bad, "w") as f:
                f.write("not a table\n")
            for args, message in (([bad, os.path.join(d, "o.svg")], "ragged_plot: no rows"),
                                  ([os.path.join(d, "missing.md"), os.path.join(d, "o.svg")], "No such file"),
                                  ([], "ragged_plot.py decode_ragged.md decode_ragged.svg")):
                p = subprocess.run([sys.executable, script] + args, capture_output=True, text=True)
                self.assertEqual(p.returncode, 2, args)
                self.assertIn(message, p.stderr)
                self.assertNotIn("Traceback", p.stderr)
            self.assertFalse(os.path.exists(os.path.join(d, "o.svg")))


if __name__ == "__main__":
    unittest.main()
