"""bench/targets.py: issue 5's targets judged on synthetic benchmark rows."""

import contextlib
import io
import math
import os
import shutil
import tempfile
import unittest

import targets


def row(B, hq, hkv, L, t, bw, floor=4.0, peer=None):
    return {"B": B, "Hq": hq, "Hkv": hkv, "L": L, "ingot_graph": t, "ingot_bw": bw, "floor_graph": floor,
            "best_peer": t * 1.1 if peer is None else peer}


def passing_rows():
    return [row(1, 8, 2, 1024, 5.0, 0.05), row(1, 8, 2, 4096, 5.1, 0.16), row(1, 8, 2, 16384, 6.5, 0.61),
            row(1, 8, 2, 65536, 18.0, 0.86), row(1, 8, 2, 262144, 63.0, 0.95),
            row(1, 8, 2, 1048576, 240.0, 1.04), row(16, 32, 8, 8192, 120.0, 0.95),
            row(64, 32, 8, 8192, 460.0, 1.05)]


class TargetsTest(unittest.TestCase):

    def judged(self, rows):
        return {t: (m, ok) for t, m, ok, _ in targets.evaluate(rows)}

    def test_every_target_met(self):
        res = targets.evaluate(passing_rows())
        self.assertTrue(all(ok for _, _, ok, _ in res), [r for r in res if not r[2]])
        self.assertTrue(all(b == "" for _, _, _, b in res))  # no read_floor times: no bound column
        self.assertNotIn("bare read", targets.markdown(res))
        # 4 bandwidth points, 6 seed peers, 2 floor points, 2 x 2 batched
        self.assertEqual(len(res), 16)
        self.assertIn("16 of 16 targets met.", targets.markdown(res))

    def test_a_point_just_under_its_bandwidth_fails(self):
        rows = passing_rows()
        rows[3]["ingot_bw"] = 0.8499
        j = self.judged(rows)
        self.assertEqual(j["B=1 8/2: >= 85% of copy bandwidth at L=65536"], ("85.0%", False))
        self.assertEqual(sum(1 for _, ok in j.values() if not ok), 1)

    def test_a_tie_with_the_peer_is_not_faster(self):
        rows = passing_rows()
        rows[5]["best_peer"] = rows[5]["ingot_graph"]
        self.assertEqual(self.judged(rows)["B=1: faster than the best SDPA backend at L=1048576"],
                         ("1.00x", False))

    def test_the_rounds_range_is_shown_beside_the_median_judgement(self):
        rows = passing_rows()
        rows[5]["best_peer"] = rows[5]["ingot_graph"] * 1.002
        rows[5]["speedup_lo"], rows[5]["speedup_hi"] = 0.9981, 1.0064
        self.assertEqual(self.judged(rows)["B=1: faster than the best SDPA backend at L=1048576"],
                         ("1.00x (rounds 0.998-1.006)", True))
        rows[5]["speedup_lo"] = float("nan")  # no rounds: the median alone
        self.assertEqual(self.judged(rows)["B=1: faster than the best SDPA backend at L=1048576"],
                         ("1.00x", True))

    def test_no_peer_is_not_a_win(self):
        rows = passing_rows()
        rows[6]["best_peer"] = float("nan")
        self.assertEqual(self.judged(rows)["B=16 32/8 L=8192: faster than the best SDPA backend"],
                         ("no peer ran", False))

    def test_the_floor_ratio_bound_is_inclusive(self):
        rows = passing_rows()
        rows[0]["ingot_graph"], rows[0]["floor_graph"] = 5.2, 4.0  # exactly 1.3x
        rows[1]["ingot_graph"], rows[1]["floor_graph"] = 5.21, 4.0
        rows[0]["best_peer"] = rows[1]["best_peer"] = 9.0
        j = self.judged(rows)
        self.assertEqual(j["B=1: within 1.3x of the plan's floor at L=1024"], ("1.30x", True))
        self.assertEqual(j["B=1: within 1.3x of the plan's floor at L=4096"], ("1.30x", False))

    def test_missing_points_are_not_met(self):
        res = targets.evaluate([row(1, 8, 2, 65536, 18.0, 0.86)])
        missing = [t for t, m, ok, _ in res if m == "not measured"]
        self.assertFalse(any(ok for t, m, ok, _ in res if m == "not measured"))
        self.assertIn("B=1 8/2: >= 60% of copy bandwidth at L=16384", missing)
        self.assertIn("B=16 32/8 L=8192: >= 90% and faster than the best peer", missing)
        self.assertIn("B=1: within 1.3x of the plan's floor at L <= 4096", missing)

    def test_the_last_run_on_the_h200(self):
        # results/decode.csv (2026-11-30, 5 rounds): 4 bandwidth targets of 6, 7 peer comparisons
        # of 8 (B=16 is slower in every round) and neither floor ratio hold.
        rows = [row(1, 8, 2, 1024, 4.63, 0.053, 3.09, 6.35), row(1, 8, 2, 4096, 6.31, 0.156, 3.95, 8.13),
                row(1, 8, 2, 16384, 9.35, 0.421, 4.58, 11.91), row(1, 8, 2, 65536, 20.73, 0.759, 4.58, 23.47),
                row(1, 8, 2, 262144, 65.48, 0.962, 4.67, 68.02),
                row(1, 8, 2, 1048576, 244.55, 1.030, 5.38, 245.42),
                row(16, 32, 8, 8192, 125.06, 1.007, 4.25, 124.24), row(64, 32, 8, 8192, 479.67, 1.050, 4.46, 485.93)]
        rows[5]["speedup_lo"], rows[5]["speedup_hi"] = 1.003, 1.004
        rows[6]["speedup_lo"], rows[6]["speedup_hi"] = 0.990, 0.994
        j = self.judged(rows)
        self.assertFalse(j["B=1 8/2: >= 85% of copy bandwidth at L=65536"][1])
        self.assertTrue(j["B=1 8/2: >= 90% of copy bandwidth at L=262144"][1])
        self.assertEqual(j["B=1: faster than the best SDPA backend at L=1048576"], ("1.00x (rounds 1.003-1.004)", True))
        self.assertEqual(j["B=16 32/8 L=8192: faster than the best SDPA backend"], ("0.99x (rounds 0.990-0.994)", False))
        self.assertTrue(j["B=64 32/8 L=8192: faster than the best SDPA backend"][1])
        self.assertFalse(j["B=1: within 1.3x of the plan's floor at L=1024"][1])
        self.assertEqual(sum(1 for _, ok in j.values() if ok), 11)


# bench/read_floor's bounds table as it prints it (2026-12-01 on the H200, results/read_floor).
READ_FLOOR_H2 = """copy ceiling: 4230 GB/s (a 2 GiB device-to-device copy, bytes read + written)

| L | MB (K+V) | register loads | GB/s | shape | + length load | empty grid (length 0) | bulk copies | GB/s |
|---|---|---|---|---|---|---|---|---|
| 1024 | 1.0 | 2.12 us | 494 | 128t x 16, 2/SM | 2.14 us | 1.20 us | 2.29 us | 457 |
| 4096 | 4.2 | 2.89 us | 1454 | 128t x 16, 2/SM | 2.90 us | 1.05 us | 2.95 us | 1420 |
| 16384 | 16.8 | 5.84 us | 2874 | 128t x 16, 2/SM | 5.84 us | 1.10 us | 5.77 us | 2908 |
| 65536 | 67.1 | 17.30 us | 3879 | 128t x 16, 4/SM | 17.36 us | 1.56 us | 16.76 us | 4005 |
"""
READ_FLOOR_H8 = """| L | MB (K+V) | register loads | GB/s | shape | + length load | empty grid (length 0) | bulk copies | GB/s |
|---|---|---|---|---|---|---|---|---|
| 131072 | 536.9 | 120.81 us | 4444 | 256t x 16, 2/SM | 120.91 us | 1.27 us | 117.78 us | 4558 |
"""


class BoundsTest(unittest.TestCase):

    def test_parse_reads_the_table_rows_only(self):
        b = targets.parse_read_floor(READ_FLOOR_H2)
        self.assertEqual(sorted(b), [1024, 4096, 16384, 65536])
        self.assertEqual(b[16384], {"loads": 5.84, "loads_len": 5.84, "empty": 1.10, "bulk": 5.77})
        self.assertEqual(targets.parse_read_floor("read_floor: token count 100: allowed are ...\n"), {})
        self.assertEqual(targets.parse_read_floor("| L | a | b | c | d | e | f | g | h |"), {})

    def rows(self):
        # 2026-12-01's run (results/decode.csv): ingot, its bandwidth, floor, best peer.
        rows = [row(1, 8, 2, 1024, 4.73, 0.052, 3.14, 6.93), row(1, 8, 2, 4096, 5.76, 0.172, 3.73, 8.20),
                row(1, 8, 2, 16384, 9.12, 0.434, 3.89, 11.90), row(1, 8, 2, 65536, 20.50, 0.772, 4.23, 23.24),
                row(16, 32, 8, 8192, 121.95, 1.038, 2.46, 121.61), row(2, 8, 2, 512, 3.0, 0.01, 2.9, 5.0)]
        targets.attach_bounds(rows, {2: targets.parse_read_floor(READ_FLOOR_H2),
                                     8: targets.parse_read_floor(READ_FLOOR_H8)})
        return rows

    def test_attach_takes_the_faster_read_and_batches_as_token_rows(self):
        rows = self.rows()
        self.assertEqual(rows[2]["read_us"], 5.77)      # bulk copies beat the loads at 16K
        self.assertEqual(rows[3]["read_us"], 16.76)
        self.assertEqual(rows[4]["read_us"], 117.78)    # B=16 x 8K = 131072 token rows of 8 heads
        self.assertEqual((rows[0]["read_len_us"], rows[0]["empty_us"]), (2.14, 1.20))
        self.assertEqual(rows[5]["read_us"], 2.12)  # B=2 x 512: the bytes of 1024 token rows
        rows[5]["L"] = 256  # 512 token rows: not in the table
        targets.attach_bounds(rows, {2: targets.parse_read_floor(READ_FLOOR_H2)})
        self.assertTrue(math.isnan(rows[5]["read_us"]))

    def test_each_target_shows_what_the_bare_read_leaves(self):
        res = {t: (ok, b) for t, _, ok, b in targets.evaluate(self.rows())}
        ok, b = res["B=1 8/2: >= 60% of copy bandwidth at L=16384"]
        # 60% of the ceiling is 9.12 * 0.434 / 0.6 = 6.60 us; the bare read takes 5.77.
        self.assertFalse(ok)
        self.assertEqual(b, "bare read 5.77 us; the target's 6.60 us leaves 0.83 us beyond it")
        _, b = res["B=1: within 1.3x of the plan's floor at L=4096"]
        self.assertEqual(b, "the bare read adds 1.85 us to an empty grid; the ratio allows 1.12 us over the floor")
        _, b = res["B=16 32/8 L=8192: faster than the best SDPA backend"]
        self.assertEqual(b, "bare read 117.78 us; the best peer is +3.3% over it")
        ok, b = res["B=16 32/8 L=8192: >= 90% of copy bandwidth"]
        self.assertTrue(ok)
        self.assertTrue(b.startswith("bare read 117.78 us; the target's "))
        _, b = res["B=1 8/2: >= 90% of copy bandwidth at L=262144"]
        self.assertEqual(b, "")  # not measured
        md = targets.markdown(targets.evaluate(self.rows()))
        self.assertIn("| target | measured | met | against the bare read (bench/read_floor) |", md)

    def test_a_target_below_the_bare_read_says_so(self):
        rows = self.rows()
        rows[3]["ingot_bw"] = 0.6  # a ceiling so low that 85% would be under the read
        res = {t: b for t, _, _, b in targets.evaluate(rows)}
        self.assertTrue(res["B=1 8/2: >= 85% of copy bandwidth at L=65536"].startswith("bare read 16.76 us: over"))

    def fake(self, body):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        path = os.path.join(d, "read_floor")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + body)
        os.chmod(path, 0o755)
        return path

    def test_run_asks_one_run_per_head_count_for_the_rows_bytes(self):
        # The fake prints its arguments and the table for its head count.
        path = self.fake('echo "args: $*"\n'
                         'if [ "$2" = 8 ]; then cat <<EOF\n' + READ_FLOOR_H8 + 'EOF\n'
                         'else cat <<EOF\n' + READ_FLOOR_H2 + 'EOF\nfi\n')
        rows = [row(1, 8, 2, 16384, 9.12, 0.434, 3.89, 11.90), row(2, 8, 2, 512, 3.0, 0.01, 2.9, 5.0),
                row(16, 32, 8, 8192, 121.95, 1.038, 2.46, 121.61), row(1, 8, 2, 100, 1.0, 0.01, 1.0, 2.0)]
        text = targets.run_read_floor(path, rows)
        self.assertIn("args: --heads 2 --tokens 1024,16384", text)  # 100 rows: below read_floor's limits
        self.assertIn("args: --heads 8 --tokens 131072", text)
        self.assertEqual([r["read_us"] for r in rows[:3]], [5.77, 2.12, 117.78])
        self.assertTrue(math.isnan(rows[3]["read_us"]))

    def test_a_failing_read_floor_leaves_the_rows_alone(self):
        path = self.fake('echo "read_floor: no CUDA device" >&2\nexit 1\n')
        rows = [row(1, 8, 2, 16384, 9.12, 0.434)]
        with contextlib.redirect_stdout(io.StringIO()) as out:
            self.assertEqual(targets.run_read_floor(path, rows), "")
        self.assertIn("failed with 1: read_floor: no CUDA device", out.getvalue())
        self.assertNotIn("read_us", rows[0])
        with contextlib.redirect_stdout(io.StringIO()) as out:
            self.assertEqual(targets.run_read_floor(path + ".missing", rows), "")
        self.assertIn("did not run", out.getvalue())


if __name__ == "__main__":
    unittest.main()
