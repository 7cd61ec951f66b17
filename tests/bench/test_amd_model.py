"""bench/amd_model.py: the static AMD model's arithmetic on synthetic KDP entries
(the real objects' table is in docs/PERFORMANCE.md)."""

import unittest

import amd_model


def kd(head_dim=128, tokens_per_wave=16, waves=4):
    return {"metadata": {"head_dim": head_dim, "tokens_per_wave": tokens_per_wave, "waves": waves}}


def obj(vgpr, lds, agpr=0, agpr_spill=0):
    return {"resources": {"split": {"vgpr": vgpr, "agpr": agpr, "agpr_spill": agpr_spill, "sgpr": 60, "lds": lds}}}


class AmdModelTest(unittest.TestCase):
    def test_chunk_loads_follow_the_lanes_a_token_takes(self):
        # D 128: 16 lanes a token, 4 tokens a load, 16 tokens = 4 loads of K and 4 of V
        self.assertEqual(amd_model.chunk_loads(kd()["metadata"]), 8)
        # D 96: 12 data lanes round up to 16, as D 128
        self.assertEqual(amd_model.chunk_loads(kd(head_dim=96)["metadata"]), 8)
        # D 64: 8 lanes, 8 tokens a load; D 256 at 4 tokens a wave: 32 lanes, 2 tokens a load
        self.assertEqual(amd_model.chunk_loads(kd(head_dim=64)["metadata"]), 4)
        self.assertEqual(amd_model.chunk_loads(kd(head_dim=256, tokens_per_wave=4)["metadata"]), 4)

    def test_waves_workgroups_and_the_bound(self):
        # 220 VGPRs -> 224 allocated -> 2 waves per SIMD -> 4 SIMDs x 2 / 4 waves = 2 workgroups per CU
        x = amd_model.model(kd(), "gfx942", obj(220, 9344))
        self.assertEqual((x["waves_per_simd"], x["blocks"]), (2, 2))
        # one chunk a wave: 16 tokens x 128 x 2 bytes x (K, V) = 8 KiB, x 8 waves
        self.assertEqual(x["inflight"], 64 * 1024)
        need_2us = 5.3e12 / 304 * 2e-6
        self.assertAlmostEqual(x["need"][1], need_2us)
        self.assertEqual(x["bound"], 1.0)
        # 376 VGPRs: one wave per SIMD, one workgroup, 32 KiB: short of MI355X's need at 2 us
        y = amd_model.model(kd(), "gfx950", obj(376, 18688, agpr=120, agpr_spill=120))
        self.assertEqual((y["waves_per_simd"], y["blocks"]), (1, 1))
        self.assertAlmostEqual(y["bound"], 32 * 1024 / (8.0e12 / 256 * 2e-6))
        self.assertLess(y["bound"], 0.6)

    def test_lds_limits_the_workgroups(self):
        # 2 workgroups by registers, but 40 KiB of LDS each: one fits gfx942's 64 KiB
        x = amd_model.model(kd(), "gfx942", obj(200, 40 * 1024))
        self.assertEqual(x["blocks"], 1)
        self.assertEqual(amd_model.model(kd(), "gfx950", obj(200, 40 * 1024))["blocks"], 2)


if __name__ == "__main__":
    unittest.main()
