"""Expansion: variants x axes (minus exclude) -> a sorted tuple of frozen
instances, with knob overrides, derived rows and seq_q, and the rules that
reject duplicate and shadowed instances (each with its accept case first)."""

import itertools
import json
import os
import re
import tempfile
import unittest

import yaml

from gen_support import MAIN_CONFIG, MINIMAL_CONFIG, SEED_CONFIG, run_cli

from ingot.archs import ARCHS
from ingot.cli import EXIT_OK, load_pack
from ingot.config import validate_and_expand
from ingot.errors import ConfigErrors
from ingot.families import attention_decode as ad
from ingot.load import load_text
from ingot.render import render_pack


with open(MINIMAL_CONFIG, encoding="utf-8") as _f:
    MINIMAL = _f.read()

# One variant; the tests append to it or replace lines of it. Its archs are all
# three so that every tile rule is checked against 64- and 32-lane waves.
HEAD = MINIMAL[MINIMAL.index("pack:"):MINIMAL.index("variants:")].replace(
    "archs: [gfx942, sm_90]", "archs: [gfx942, gfx950, sm_90]") + "variants:\n"


def variant(name, dtype="[bf16]", head_dim="[128]", group="[4]", kv_layout="[contiguous]", extra_axes="",
            heads=None, capacity="[64, 65536]", extra_admit="", extra="", batch="[1, 1]"):
    """heads: None admits by group alone (any Hkv), else the pinned pairs."""
    pin = f"      heads: {heads}\n" if heads is not None else ""
    return (f"  - name: {name}\n{extra}"
            f"    axes:\n      dtype: {dtype}\n      head_dim: {head_dim}\n      group: {group}\n"
            f"      kv_layout: {kv_layout}\n{extra_axes}"
            f"    admit:\n{pin}      batch: {batch}\n      capacity: {capacity}\n"
            f"      masks: [none, causal]\n{extra_admit}")


def expand(*variants):
    return validate_and_expand(load_text(HEAD + "".join(variants), "t.yaml"), "0" * 64)


def expand_errors(*variants):
    try:
        expand(*variants)
    except ConfigErrors as e:
        return [str(x) for x in e.errors]
    raise AssertionError("expected ConfigErrors")


def variant_line(variants, i):
    """The line of `- name:` of variants[i] in the text expand() builds."""
    return HEAD.count("\n") + 1 + sum(v.count("\n") for v in variants[:i])


class RealConfigTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.pack = load_pack(MAIN_CONFIG)
        cls.by_name = {i.name: i for i in cls.pack.instances}

    def test_instance_count_per_variant(self):
        # Derived from the config itself (adding a shape to it must keep this
        # green): each variant makes the product of its axes' lengths, less the
        # excluded combinations; no shipped variant pins heads pairs.
        with open(MAIN_CONFIG, encoding="utf-8") as f:
            cfg = yaml.safe_load(f)
        want = {}
        for var in cfg["variants"]:
            self.assertNotIn("heads", var["admit"], var["name"])
            axes = dict(var["axes"])
            axes.setdefault("max_sq", [1])
            keys = sorted(axes)
            want[var["name"]] = sum(
                1 for combo in itertools.product(*(axes[k] for k in keys))
                if not any(all(dict(zip(keys, combo))[k] == v for k, v in ex.items())
                           for ex in var.get("exclude", [])))
        counts = {}
        for inst in self.pack.instances:
            counts[inst.variant] = counts.get(inst.variant, 0) + 1
        self.assertEqual(counts, want)
        self.assertEqual(len(self.pack.instances), sum(want.values()))
        self.assertEqual(self.pack.archs, tuple(sorted(cfg["archs"])))

    def test_instances_are_sorted_and_named_after_their_shape(self):
        names = [i.name for i in self.pack.instances]
        self.assertEqual(names, sorted(names))
        self.assertEqual(len(set(names)), len(names))
        for inst in self.pack.instances:
            layout = {"contiguous": "contig", "paged": "paged"}[inst.kv_layout]
            tc = {"auto": "_tc", "simt": ""}[inst.math]
            st = f"s{inst.stages}" if inst.stages else ""
            rw = "rw" if inst.row_waves else ""
            occ = f"o{inst.occupancy}" if inst.occupancy else ""
            self.assertEqual(inst.name, f"attention_decode_{inst.dtype}_d{inst.head_dim}_g{inst.group}"
                                        f"_sq{inst.max_sq}_{layout}_w{inst.waves}t{inst.tokens_per_wave}{occ}{tc}{st}{rw}")

    def test_knob_overrides_apply_per_variant(self):
        # Each instance carries the pack's knobs overridden by its variant's (read from the config).
        with open(MAIN_CONFIG, encoding="utf-8") as f:
            cfg = yaml.safe_load(f)
        want = {}
        for var in cfg["variants"]:
            knobs = dict(cfg["knobs"], **var.get("knobs", {}))
            want[var["name"]] = {(knobs["waves"], knobs["tokens_per_wave"], knobs["max_splits"],
                                  knobs.get("math", "simt"))}
        tpw = {}
        for inst in self.pack.instances:
            tpw.setdefault(inst.variant, set()).add((inst.waves, inst.tokens_per_wave, inst.max_splits, inst.math))
        self.assertEqual(tpw, want)
        # variants that override the pack's knobs are in the config (not their values: a YAML edit
        # must keep this test green)
        self.assertTrue(any(v != {(cfg["knobs"]["waves"], cfg["knobs"]["tokens_per_wave"], cfg["knobs"]["max_splits"],
                                   "simt")} for v in want.values()))

    def test_rows_are_group_times_max_sq_capped_at_8(self):
        want = {
            "attention_decode_bf16_d128_g1_sq1_contig_w4t16_tc": 1,
            "attention_decode_bf16_d128_g4_sq1_contig_w4t16_tc": 4,
            "attention_decode_bf16_d128_g8_sq1_contig_w4t16_tc": 8,
            "attention_decode_bf16_d128_g1_sq4_contig_w4t16_tc": 4,
            "attention_decode_bf16_d128_g4_sq4_contig_w4t16_tc": 8,  # 16 rows, two row blocks
            "attention_decode_fp16_d128_g8_sq4_paged_w4t16_tc": 8,  # 32 rows, four row blocks
        }
        self.assertEqual({n: self.by_name[n].rows for n in want}, want)
        self.assertEqual(self.by_name["attention_decode_bf16_d128_g4_sq4_contig_w4t16_tc"].rows_total, 16)

    def test_seq_q_defaults_to_one_up_to_max_sq(self):
        self.assertEqual(self.by_name["attention_decode_bf16_d128_g4_sq1_contig_w4t16_tc"].seq_q, (1, 1))
        self.assertEqual(self.by_name["attention_decode_bf16_d128_g4_sq4_contig_w4t16_tc"].seq_q, (1, 4))

    def test_shipped_kernels_admit_by_group_and_any_kv_heads(self):
        for inst in self.pack.instances:
            self.assertEqual((inst.heads, inst.num_kv_heads), ((), (1, 65535)), inst.name)
            c = inst.constraints()
            lo, hi = inst.group_range
            self.assertLessEqual(lo, inst.group)
            self.assertLessEqual(inst.group, hi)
            self.assertIn({"field": "group", "op": "range", "min": lo, "max": hi}, c)
            self.assertIn({"field": "num_kv_heads", "op": "range", "min": 1, "max": 65535}, c)
            self.assertNotIn("heads", [x["field"] for x in c])
            self.assertLessEqual(inst.capacity[1], inst.capacity_limit, inst.name)
        groups = {(i.head_dim, i.group) for i in self.pack.instances}
        self.assertLessEqual({(d, g) for d in (64, 128, 256) for g in (1, 4, 8)}, groups)

    def test_every_group_and_head_dim_has_a_kernel_on_every_arch(self):
        # Issue 22: any Hq / Hkv (1..65535) and every head dim of the family,
        # for both dtypes (bf16 for 160 and 192), contiguous and paged, one query
        # token and speculative (Sq 4, head dim 128), on each arch of the pack.
        from ingot.families import attention_decode as ad
        for arch in self.pack.archs:
            insts = [i for i in self.pack.instances if arch in i.archs]
            for d in ad.HEAD_DIMS:
                for dtype in (("bf16",) if d in (160, 192) else ("bf16", "fp16")):
                    for layout in ("contiguous", "paged"):
                        for sq in ((1, 4) if d == 128 else (1,)):
                            mine = [i for i in insts if (i.head_dim, i.dtype, i.kv_layout) == (d, dtype, layout)
                                    and i.seq_q[0] <= sq <= i.seq_q[1]]
                            spans = sorted(i.group_range for i in mine)
                            at = 1  # the least group not yet covered
                            for lo, hi in spans:
                                if lo <= at:
                                    at = max(at, hi + 1)
                            self.assertGreater(at, 65535, (arch, d, dtype, layout, sq, spans))

    def test_page_sizes_only_on_paged_instances(self):
        # pages shorter than a wave's chunk are read token by token: every paged
        # kernel takes pages of 1 token up
        for inst in self.pack.instances:
            if inst.kv_layout == "paged":
                self.assertEqual(inst.page_sizes, (1, 2, 4, 8, 16, 32, 64, 128), inst.name)
            else:
                self.assertEqual(inst.page_sizes, (), inst.name)
        self.assertEqual(self.by_name["attention_decode_bf16_d128_g4_sq1_contig_w4t16_tc"].page_sizes, ())

    def test_instances_are_frozen(self):
        inst = self.pack.instances[0]
        with self.assertRaises(AttributeError):
            inst.waves = 8


class ExpansionRuleTest(unittest.TestCase):

    def test_axes_are_a_cartesian_product(self):
        pack = expand(variant("v", dtype="[bf16, fp16]", kv_layout="[contiguous, paged]",
                              extra_admit="      page_sizes: [16]\n"))
        self.assertEqual([i.name for i in pack.instances], [
            "minimal_bf16_d128_g4_sq1_contig_w4t16", "minimal_bf16_d128_g4_sq1_paged_w4t16",
            "minimal_fp16_d128_g4_sq1_contig_w4t16", "minimal_fp16_d128_g4_sq1_paged_w4t16"])

    def test_exclude_removes_matching_combinations(self):
        base = dict(dtype="[bf16, fp16]", kv_layout="[contiguous, paged]", extra_admit="      page_sizes: [16]\n")
        one = expand(variant("v", **base, extra="    exclude:\n      - {dtype: fp16, kv_layout: paged}\n"))
        self.assertEqual([i.name for i in one.instances], [
            "minimal_bf16_d128_g4_sq1_contig_w4t16", "minimal_bf16_d128_g4_sq1_paged_w4t16",
            "minimal_fp16_d128_g4_sq1_contig_w4t16"])
        two = expand(variant("v", **base, extra="    exclude:\n      - {dtype: fp16}\n      - {kv_layout: contiguous}\n"))
        self.assertEqual([i.name for i in two.instances], ["minimal_bf16_d128_g4_sq1_paged_w4t16"])

    def test_without_a_pin_every_group_is_an_instance_for_any_kv_heads(self):
        pack = expand(variant("v", group="[1, 4, 8]"))
        self.assertEqual([i.name for i in pack.instances], [
            "minimal_bf16_d128_g1_sq1_contig_w4t16", "minimal_bf16_d128_g4_sq1_contig_w4t16",
            "minimal_bf16_d128_g8_sq1_contig_w4t16"])
        for inst in pack.instances:
            self.assertEqual((inst.heads, inst.num_kv_heads, inst.group_range), ((), (1, 65535), (inst.group,) * 2))
            c = inst.constraints()
            self.assertEqual(c[4:6], [{"field": "group", "op": "range", "min": inst.group, "max": inst.group},
                                      {"field": "num_kv_heads", "op": "range", "min": 1, "max": 65535}])
            self.assertNotIn("heads", [x["field"] for x in c])

    def test_groups_give_each_kernel_a_range_of_groups(self):
        pack = expand(variant("v", group="[1, 4, 8]", extra_admit="      groups: [[2, 4], [5, 71]]\n"))
        got = {i.group: i.group_range for i in pack.instances}
        self.assertEqual(got, {1: (1, 1), 4: (2, 4), 8: (5, 71)})
        for inst in pack.instances:
            lo, hi = inst.group_range
            self.assertIn({"field": "group", "op": "range", "min": lo, "max": hi}, inst.constraints())
            # rows stay sized for the kernel's own group
            self.assertEqual(inst.rows, min(inst.group, 8))
        # a pin takes the pairs of the range: [48, 8] (group 6) goes to the group-8 kernel
        pack = expand(variant("v", group="[4, 8]", heads="[[48, 8], [16, 4]]",
                              extra_admit="      groups: [[2, 4], [5, 71]]\n"))
        self.assertEqual({i.group: i.heads for i in pack.instances}, {4: ((16, 4),), 8: ((48, 8),)})

    def test_bad_groups_are_named(self):
        cases = {
            "      groups: [[5, 9]]\n": "groups [5, 9] hold 0 of the axis' groups (none); each range must hold exactly one (axis groups: 4)",
            "      groups: [[1, 4], [4, 4]]\n": "group 4 has two ranges in groups",
            "      groups: [[0, 4]]\n": "groups[0]",
            "      groups: [[4, 2]]\n": "inverted",
        }
        for extra, want in cases.items():
            with self.subTest(extra=extra):
                errs = expand_errors(variant("v", extra_admit=extra))
                self.assertTrue(any(want in e for e in errs), errs)

    def test_every_head_dim_multiple_of_16_from_64_to_256_expands(self):
        from ingot.families import attention_decode as ad
        self.assertEqual(ad.HEAD_DIMS, tuple(d for d in range(64, 257, 16) if d not in (144, 176, 208, 224, 240)))
        for d in ad.HEAD_DIMS:
            knobs = "    knobs: {tokens_per_wave: 8}\n" if d > 128 else ""
            (inst,) = expand(variant("v", head_dim=f"[{d}]", extra=knobs)).instances
            lpt = 1 << (d // 8 - 1).bit_length()
            self.assertEqual((inst.head_dim, inst.lanes_per_token), (d, lpt))
            self.assertGreaterEqual(lpt, d // 8)
            self.assertLess(lpt, 2 * (d // 8))
        errs = expand_errors(variant("v", head_dim="[72]"))
        self.assertTrue(any("head dim 72 is not supported" in e for e in errs), errs)

    def test_num_kv_heads_narrows_the_range(self):
        (inst,) = expand(variant("v", extra_admit="      num_kv_heads: [2, 16]\n")).instances
        self.assertEqual(inst.num_kv_heads, (2, 16))
        self.assertIn({"field": "num_kv_heads", "op": "range", "min": 2, "max": 16}, inst.constraints())

    def test_a_pin_admits_its_pairs_and_leaves_a_group_without_one_no_instance(self):
        pack = expand(variant("v", group="[1, 4]", heads="[[32, 8], [8, 2]]"))
        (inst,) = pack.instances
        self.assertEqual(inst.name, "minimal_bf16_d128_g4_sq1_contig_w4t16")
        self.assertEqual(inst.heads, ((8, 2), (32, 8)))
        c = inst.constraints()
        self.assertEqual(c[4]["field"], "group")  # the group first: its decline is the plainer one
        self.assertIn({"field": "heads", "op": "in", "values": [[8, 2], [32, 8]]}, c)

    def test_reject_pinned_pairs_outside_the_group_or_num_kv_heads(self):
        errs = expand_errors(variant("v", heads="[[8, 2], [12, 5], [64, 16]]",
                                     extra_admit="      num_kv_heads: [1, 8]\n"))
        self.assertEqual([e[e.index("variants[0]"):] for e in errs], [
            "variants[0].admit.heads[1]: Hq 12 is not a multiple of Hkv 5",
            "variants[0].admit.heads[2]: heads [64, 16] have Hkv 16 outside the variant's num_kv_heads [1, 8]"])
        self.assertTrue(all(e.startswith("t.yaml:") for e in errs), errs)

    def test_reject_num_kv_heads_and_batch_past_the_grid(self):
        for extra_admit, batch, want in (
                ("      num_kv_heads: [1, 65536]\n", "[1, 1]", "admit.num_kv_heads: range [1, 65536] leaves the allowed 1..65535"),
                ("      num_kv_heads: [0, 8]\n", "[1, 1]", "admit.num_kv_heads: range [0, 8] leaves the allowed 1..65535"),
                ("      num_kv_heads: [8, 2]\n", "[1, 1]", "admit.num_kv_heads: range [8, 2] is inverted"),
                ("", "[1, 65536]", "admit.batch: range [1, 65536] leaves the allowed 1..65535")):
            with self.subTest(extra_admit=extra_admit, batch=batch):
                errs = expand_errors(variant("v", extra_admit=extra_admit, batch=batch))
                self.assertEqual(len(errs), 1, errs)
                self.assertIn(want, errs[0])
        (inst,) = expand(variant("v", batch="[1, 65535]")).instances  # the accept case at the limit
        self.assertEqual(inst.batch, (1, 65535))

    def test_capacity_up_to_the_kernels_int32_token_indices(self):
        # 4 waves x 16 tokens: a tile of 64; the indices run 8 tiles past the capacity.
        (inst,) = expand(variant("v", capacity="[1, 2147483135]")).instances
        self.assertEqual((inst.capacity, inst.capacity_limit), ((1, 2147483135), 2**31 - 1 - 8 * 64))
        vs = [variant("v", capacity="[1, 2147483136]")]
        line = variant_line(vs, 0) + 8  # the capacity line of the variant
        self.assertEqual(expand_errors(*vs), [
            f"t.yaml:{line}:17: variants[0].admit.capacity: capacity up to 2147483136 is past what instance "
            "minimal_bf16_d128_g4_sq1_contig_w4t16's int32 token indices allow: they run 8 tiles of 64 tokens "
            "past the capacity (allowed: at most 2147483135 = 2^31 - 1 - 8 x 64)"])

    def test_token_index_tiles_match_the_plan(self):
        # The generator's bound and the plan's refusal are one number (ingot_abi.h, which the
        # planner includes and uses in its refusals).
        with open(os.path.join(os.path.dirname(MAIN_CONFIG), "..", "templates", "ingot_abi.h"),
                  encoding="utf-8") as f:
            header = f.read()
        m = re.search(r"#define INGOT_AD_TOKEN_INDEX_TILES (\d+)", header)
        self.assertIsNotNone(m)
        self.assertEqual(int(m.group(1)), ad.TOKEN_INDEX_TILES)
        m = re.search(r"#define INGOT_AD_MAX_KV_HEADS (\d+)", header)
        self.assertEqual(int(m.group(1)), ad.MAX_KV_HEADS)
        with open(os.path.join(os.path.dirname(MAIN_CONFIG), "..", "runtime", "src", "families",
                               "attention_decode", "ingot_attention_decode_plan.h"), encoding="utf-8") as f:
            planner = f.read()
        self.assertIn("Hkv > INGOT_AD_MAX_KV_HEADS", planner)
        self.assertIn("INGOT_AD_TOKEN_INDEX_TILES", planner)
        self.assertIn("B > INGOT_AD_MAX_BATCH", planner)
        m = re.search(r"#define INGOT_AD_MAX_BATCH (\d+)", header)
        self.assertEqual(int(m.group(1)), ad.MAX_BATCH)

    def test_variant_knobs_override_the_pack_knobs(self):
        pack = expand(variant("v", extra="    knobs: {waves: 2, tokens_per_wave: 8, max_splits: 64}\n"))
        (inst,) = pack.instances
        self.assertEqual((inst.waves, inst.tokens_per_wave, inst.max_splits), (2, 8, 64))
        self.assertEqual(inst.name, "minimal_bf16_d128_g4_sq1_contig_w2t8")
        self.assertEqual(inst.metadata()["max_splits"], 64)

    def test_stages_knob_names_sizes_and_renders_the_ring(self):
        (reg,) = expand(variant("v", extra="    knobs: {math: auto, waves: 2}\n")).instances
        (ring,) = expand(variant("v", extra="    knobs: {math: auto, waves: 2, stages: 2}\n")).instances
        self.assertEqual((reg.stages, ring.stages), (0, 2))
        self.assertEqual(ring.name, "minimal_bf16_d128_g4_sq1_contig_w2t16_tcs2")
        self.assertNotEqual(reg.code_key, ring.code_key)
        # The ring is NVIDIA's (the tensor-core path): 2 waves x 2 stages x 16 tokens x 128 x 2 (K, V) x 2 bytes.
        self.assertEqual(ring.lds_bytes(ARCHS["sm_90"]), 2 * 2 * 16 * 128 * 2 * 2)
        self.assertEqual(ring.lds_bytes(ARCHS["gfx942"]), reg.lds_bytes(ARCHS["gfx942"]))
        self.assertLess(reg.lds_bytes(ARCHS["sm_90"]), ring.lds_bytes(ARCHS["sm_90"]))
        files = render_pack(expand(variant("v", extra="    knobs: {math: auto, waves: 2, stages: 2}\n")))
        for arch in ("gfx942", "sm_90"):
            self.assertIn("/*stages*/ 2>", files[f"kernels/{arch}/{ring.name}.hip"])
        self.assertEqual((ring.dynamic_lds(ARCHS["sm_90"]), ring.dynamic_lds(ARCHS["gfx942"])), (0, 0))

    def test_a_ring_past_the_static_limit_takes_dynamic_lds_on_nvidia(self):
        extra = "    knobs: {math: auto, waves: 4, stages: 3}\n"
        (ring,) = expand(variant("v", extra=extra)).instances
        sm90, gfx = ARCHS["sm_90"], ARCHS["gfx942"]
        # 4 waves x 3 stages x 16 tokens x 128 x 2 (K, V) x 2 bytes = 96 KiB: past sm_90's 48 KiB static.
        self.assertEqual(ring.dynamic_lds(sm90), 4 * 3 * 16 * 128 * 2 * 2)
        self.assertLessEqual(ring.lds_bytes(sm90), sm90.max_lds_bytes)  # the merge's static LDS only
        self.assertEqual(ring.dynamic_lds(gfx), 0)  # AMD runs the register pipeline: no ring
        files = render_pack(expand(variant("v", extra=extra)))
        self.assertIn("/*stages*/ 3, /*trace*/ 0,\n                            /*dynamic_lds*/ 98304>",
                      files[f"kernels/sm_90/{ring.name}.hip"])
        self.assertIn("/*stages*/ 3>", files[f"kernels/gfx942/{ring.name}.hip"])
        kdp = next(json.loads(t) for n, t in files.items() if n.endswith(".kdp.json"))
        self.assertEqual(kdp["kernelDescriptors"][0]["kernel_source"]["dynamic_lds"], {"sm_90": {"split": 98304, "balanced_split": 98304}})
        # Without a dynamic ring the authored KDP names none (the shipped pack's stays as it was).
        files = render_pack(expand(variant("v", extra="    knobs: {math: auto, waves: 2, stages: 2}\n")))
        kdp = next(json.loads(t) for n, t in files.items() if n.endswith(".kdp.json"))
        self.assertNotIn("dynamic_lds", kdp["kernelDescriptors"][0]["kernel_source"])
        # A ring of exactly the static limit (2 waves x 3 stages: 48 KiB) is dynamic as well: the
        # balanced split's own static LDS (BalanceShared, 48 bytes at 2 waves) would pass the limit
        # (ptxas refused a 48 KiB ring's balanced split with 0xc040 bytes of 0xc000).
        (edge,) = expand(variant("v", extra="    knobs: {math: auto, waves: 2, stages: 3}\n")).instances
        self.assertEqual(edge.split_lds_bytes(sm90), sm90.max_lds_bytes)
        self.assertEqual(edge.dynamic_lds(sm90), sm90.max_lds_bytes)

    def test_trace_knob_names_renders_and_needs_nvidia_tensor_cores(self):
        extra = "    archs: [sm_90]\n    knobs: {math: auto, trace: 1}\n"
        (inst,) = expand(variant("v", extra=extra)).instances
        (reg,) = expand(variant("v", extra="    archs: [sm_90]\n    knobs: {math: auto}\n")).instances
        self.assertEqual((inst.trace, reg.trace), (1, 0))
        self.assertNotEqual(reg.code_key, inst.code_key)
        self.assertEqual(inst.name, "minimal_bf16_d128_g4_sq1_contig_w4t16_tcx")
        files = render_pack(expand(variant("v", extra=extra)))
        self.assertIn("/*stages*/ 0, /*trace*/ 1>", files[f"kernels/sm_90/{inst.name}.hip"])
        # Without the knob the kernel source names no trace argument (the shipped pack's sources stay as they were).
        files = render_pack(expand(variant("v", extra="    archs: [sm_90]\n    knobs: {math: auto}\n")))
        self.assertIn("/*stages*/ 0>", files[f"kernels/sm_90/{reg.name}.hip"])
        for extra in ("    knobs: {math: auto, trace: 1}\n",  # the pack's AMD archs too
                      "    archs: [sm_90]\n    knobs: {trace: 1}\n"):
            errs = expand_errors(variant("v", extra=extra))
            self.assertEqual(len(errs), 1, errs)
            self.assertIn("knobs.trace: trace 1 needs math 'auto' and NVIDIA archs only", errs[0])

    def test_max_rows_knob_caps_rows(self):
        (inst,) = expand(variant("v", extra="    knobs: {max_rows: 2}\n")).instances
        self.assertEqual((inst.rows, inst.rows_total), (2, 4))
        (inst,) = expand(variant("v", extra="    knobs: {max_rows: 64}\n",
                                 extra_axes="      max_sq: [4]\n")).instances
        self.assertEqual((inst.rows, inst.rows_total), (8, 16))  # the SIMT path's own cap
        # 16 rows a wave where every arch of the instance runs a tensor- or matrix-core path (both
        # halves of the 16-row tile); one SIMT arch keeps the instance at 8.
        (inst,) = expand(variant("v", extra="    knobs: {max_rows: 64, math: auto}\n",
                                 extra_axes="      max_sq: [4]\n")).instances
        self.assertEqual((inst.rows, inst.rows_total), (16, 16))
        self.assertTrue(all(inst.matrix_path(ARCHS[a]) for a in ("gfx942", "gfx950", "sm_90")))
        (inst,) = expand(variant("v", group="[8]", extra="    knobs: {max_rows: 64, math: auto}\n",
                                 extra_axes="      max_sq: [4]\n", head_dim="[256]")).instances
        self.assertFalse(inst.matrix_path(ARCHS["gfx942"]))  # head dim 256 runs SIMT on AMD
        self.assertEqual((inst.rows, inst.rows_total), (8, 32))

    def test_row_waves_hold_a_waves_rows_times_the_waves(self):
        # Each wave holds its rows of the same tokens: a workgroup holds waves x a wave's rows, and
        # a step takes one wave's chunk of tokens.
        (inst,) = expand(variant("v", group="[64]", extra="    archs: [gfx942]\n"
                                 "    knobs: {waves: 4, row_waves: true}\n")).instances
        self.assertEqual((inst.rows, inst.wave_rows, inst.token_waves, inst.tile), (32, 8, 1, 16))
        self.assertTrue(inst.name.endswith("_w4t16rw"), inst.name)
        self.assertTrue(inst.metadata()["row_waves"])
        # a group below waves x 8 rows: the waves' share, rounded up
        (inst,) = expand(variant("v", group="[12]", extra="    archs: [gfx942]\n"
                                 "    knobs: {waves: 4, row_waves: true}\n")).instances
        self.assertEqual((inst.rows, inst.wave_rows), (12, 3))
        # without the knob: the rows and tile of old
        (inst,) = expand(variant("v", group="[64]", extra="    archs: [gfx942]\n    knobs: {waves: 4}\n")).instances
        self.assertEqual((inst.rows, inst.wave_rows, inst.tile, inst.row_waves), (8, 8, 64, False))
        self.assertNotIn("row_waves", inst.name)
        # sm_90's tensor-core path shares a ring among the waves: a ring of the workgroup's
        (inst,) = expand(variant("v", group="[64]", extra="    archs: [sm_90]\n"
                                 "    knobs: {math: auto, waves: 8, row_waves: true, stages: 4}\n")).instances
        arch = ARCHS["sm_90"]
        self.assertEqual(inst.split_lds_bytes(arch), max(4 * (8 * 16 * 8 + 64 * 2 + 64 * 128), 4 * 2 * 16 * 128 * 2))
        files = render_pack(expand(variant("v", group="[64]", extra="    archs: [sm_90]\n"
                                           "    knobs: {math: auto, waves: 8, row_waves: true, stages: 4}\n")))
        self.assertIn("/*rows*/ 8,", files[f"kernels/sm_90/{inst.name}.hip"])
        self.assertIn("/*dynamic_lds*/ 0, /*row_waves*/ 1>", files[f"kernels/sm_90/{inst.name}.hip"])

    def test_matrix_cores_at_head_dims_64_and_128(self):
        # The AMD matrix-core split (uses_mfma, traits kMfmaFits): math auto, head dim 64 or 128
        # (decision 0029: a lane's V of a token is one 8-byte load at 64), 4 rows or more,
        # 16-token tiles; on the emulated 64-lane wave too, never on sm_90's 32 lanes.
        def path(head_dim, group="[8]", knobs="{math: auto}"):
            (inst,) = expand(variant("v", head_dim=head_dim, group=group, extra="    archs: [gfx942]\n"
                                     f"    knobs: {knobs}\n")).instances
            return inst.uses_mfma(ARCHS["gfx942"]), inst.uses_mfma(ARCHS["sm_90_w64"]), inst.uses_mfma(ARCHS["sm_90"])
        self.assertEqual(path("[64]"), (True, True, False))
        self.assertEqual(path("[128]"), (True, True, False))
        self.assertEqual(path("[64]", group="[32]", knobs="{math: auto, waves: 4, row_waves: true, tokens_per_wave: 32}"),
                         (True, True, False))
        for head_dim in ("[80]", "[96]", "[256]"):
            self.assertEqual(path(head_dim)[0], False, head_dim)
        self.assertEqual(path("[64]", group="[1]")[0], False)  # one row: the SIMT split
        self.assertEqual(path("[64]", knobs="{math: auto, tokens_per_wave: 8}")[0], False)
        self.assertEqual(path("[64]", knobs="{math: simt}")[0], False)

    def test_row_waves_errors(self):
        errs = expand_errors(variant("v", group="[64]", extra="    knobs: {waves: 1, row_waves: true}\n"))
        self.assertEqual(len(errs), 1, errs)
        self.assertIn("knobs.row_waves: row_waves needs 2 or more waves to share a step's tokens", errs[0])
        errs = expand_errors(variant("v", group="[64]", extra="    archs: [sm_90]\n"
                                     "    knobs: {math: auto, waves: 4, row_waves: true}\n"))
        self.assertEqual(len(errs), 1, errs)
        self.assertIn("row_waves shares a shared-memory ring among the waves: it needs stages 2..8", errs[0])
        errs = expand_errors(variant("v", group="[64]", extra="    knobs: {waves: 4, row_waves: 2}\n"))
        self.assertEqual(len(errs), 1, errs)
        self.assertIn("row_waves", errs[0])

    def test_seq_q_default_follows_max_sq(self):
        (inst,) = expand(variant("v", extra_axes="      max_sq: [2]\n")).instances
        self.assertEqual((inst.max_sq, inst.seq_q), (2, (1, 2)))
        (inst,) = expand(variant("v", extra_axes="      max_sq: [4]\n", extra_admit="      seq_q: [2, 3]\n")).instances
        self.assertEqual(inst.seq_q, (2, 3))

    def test_archs_default_to_the_packs_and_a_variant_may_narrow_them(self):
        (a,) = expand(variant("v")).instances
        (b,) = expand(variant("v", extra="    archs: [sm_90]\n")).instances
        self.assertEqual((a.archs, b.archs), (("gfx942", "gfx950", "sm_90"), ("sm_90",)))
        pack = expand(variant("v", extra="    archs: [sm_90, gfx950]\n"))
        self.assertEqual(pack.instances[0].archs, ("gfx950", "sm_90"))  # the pack's order
        self.assertEqual(pack.archs, ("gfx942", "gfx950", "sm_90"))
        files = render_pack(pack)
        self.assertEqual(sorted(f for f in files if f.startswith("kernels/")),
                         ["kernels/gfx950/minimal_bf16_d128_g4_sq1_contig_w4t16.hip",
                          "kernels/sm_90/minimal_bf16_d128_g4_sq1_contig_w4t16.hip"])

    def test_a_variants_tile_rules_apply_to_its_own_archs_only(self):
        # 2 tokens per wave at D 128: one 32-lane load on sm_90, half of one 64-lane AMD load.
        (inst,) = expand(variant("v", extra="    archs: [sm_90]\n    knobs: {tokens_per_wave: 2}\n")).instances
        self.assertEqual((inst.archs, inst.tokens_per_wave), (("sm_90",), 2))
        errs = expand_errors(variant("v", extra="    knobs: {tokens_per_wave: 2}\n"))
        self.assertEqual([e[e.index("covers on"):e.index(" for head")] for e in errs],
                         ["covers on gfx942", "covers on gfx950"])

    def test_priority_defaults_to_zero_and_is_carried(self):
        (a,) = expand(variant("v")).instances
        (b,) = expand(variant("v", extra="    priority: 7\n")).instances
        self.assertEqual((a.priority, b.priority), (0, 7))


class DuplicateAndShadowTest(unittest.TestCase):

    def test_accept_same_shape_other_tile_disjoint_admission(self):
        pack = expand(variant("small"),
                      variant("large", capacity="[65537, 1048576]", extra="    knobs: {waves: 2}\n"))
        self.assertEqual([i.name for i in pack.instances],
                         ["minimal_bf16_d128_g4_sq1_contig_w2t16", "minimal_bf16_d128_g4_sq1_contig_w4t16"])

    def test_reject_duplicate_instance(self):
        vs = [variant("a"), variant("b", capacity="[65537, 1048576]")]
        self.assertEqual(expand_errors(*vs), [
            f"t.yaml:{variant_line(vs, 1)}:5: variants[1]: duplicate instance "
            "minimal_bf16_d128_g4_sq1_contig_w4t16: variants 'a' and 'b' both produce it"])

    def test_accept_a_higher_priority_variant_for_fewer_archs(self):
        # 'tuned' wins on sm_90, but 'wide' still serves the AMD archs: not shadowed.
        pack = expand(variant("wide"),
                      variant("tuned", extra="    priority: 1\n    archs: [sm_90]\n    knobs: {waves: 2}\n"))
        self.assertEqual([i.archs for i in pack.instances], [("sm_90",), ("gfx942", "gfx950", "sm_90")])

    def test_reject_a_variant_for_fewer_archs_shadowed_by_an_all_arch_one(self):
        vs = [variant("tuned", extra="    archs: [sm_90]\n    knobs: {waves: 2}\n"),
              variant("wide", extra="    priority: 1\n")]
        self.assertEqual(expand_errors(*vs), [
            f"t.yaml:{variant_line(vs, 0)}:5: variants[0]: instance minimal_bf16_d128_g4_sq1_contig_w2t16 "
            "(variant 'tuned') can never be chosen: minimal_bf16_d128_g4_sq1_contig_w4t16 (variant 'wide') "
            "admits every graph it admits and wins the selection"])

    def test_accept_higher_priority_on_a_narrower_range(self):
        # 'fast' wins where it admits, but 'wide' still serves the rest.
        pack = expand(variant("wide"),
                      variant("fast", capacity="[64, 4096]", extra="    priority: 1\n    knobs: {waves: 2}\n"))
        self.assertEqual(len(pack.instances), 2)

    def test_accept_the_tighter_max_sq_is_not_shadowed_by_a_wider_one(self):
        # The sq4 kernel admits seq_q 1 too, but the sq1 kernel wins there (score).
        pack = expand(variant("one"),
                      variant("spec", extra_axes="      max_sq: [4]\n", extra_admit="      seq_q: [1, 4]\n"))
        self.assertEqual([i.name for i in pack.instances],
                         ["minimal_bf16_d128_g4_sq1_contig_w4t16", "minimal_bf16_d128_g4_sq4_contig_w4t16"])

    def test_reject_shadowed_by_higher_priority(self):
        vs = [variant("wide"), variant("fast", extra="    priority: 1\n    knobs: {waves: 2}\n")]
        self.assertEqual(expand_errors(*vs), [
            f"t.yaml:{variant_line(vs, 0)}:5: variants[0]: instance minimal_bf16_d128_g4_sq1_contig_w4t16 (variant 'wide') can never "
            "be chosen: minimal_bf16_d128_g4_sq1_contig_w2t16 (variant 'fast') admits every graph it admits and "
            "wins the selection"])

    def test_reject_shadowed_by_a_tighter_max_sq(self):
        # 'one' (max_sq 1, seq_q 1) admits everything 'two' (max_sq 2) admits, and wins on score.
        vs = [variant("one", extra_admit="      seq_q: [1, 1]\n"),
              variant("two", extra_axes="      max_sq: [2]\n", extra_admit="      seq_q: [1, 1]\n")]
        self.assertEqual(expand_errors(*vs), [
            f"t.yaml:{variant_line(vs, 1)}:5: variants[1]: instance minimal_bf16_d128_g4_sq2_contig_w4t16 (variant 'two') can never "
            "be chosen: minimal_bf16_d128_g4_sq1_contig_w4t16 (variant 'one') admits every graph it admits and "
            "wins the selection"])

    def test_accept_a_higher_priority_pin_beside_a_range(self):
        # 'pinned' wins on its pairs; 'wide' still serves every other Hkv.
        pack = expand(variant("wide"),
                      variant("pinned", heads="[[8, 2]]", extra="    priority: 1\n    knobs: {waves: 2}\n"))
        self.assertEqual(len(pack.instances), 2)

    def test_reject_a_pin_shadowed_by_a_range(self):
        vs = [variant("pinned", heads="[[8, 2], [16, 4]]", extra="    knobs: {waves: 2}\n"),
              variant("wide", extra_admit="      num_kv_heads: [2, 4]\n", extra="    priority: 1\n")]
        self.assertEqual(expand_errors(*vs), [
            f"t.yaml:{variant_line(vs, 0)}:5: variants[0]: instance minimal_bf16_d128_g4_sq1_contig_w2t16 "
            "(variant 'pinned') can never be chosen: minimal_bf16_d128_g4_sq1_contig_w4t16 (variant 'wide') "
            "admits every graph it admits and wins the selection"])

    def test_reject_a_range_shadowed_by_pins_that_cover_it(self):
        vs = [variant("narrow", extra_admit="      num_kv_heads: [2, 3]\n"),
              variant("pins", heads="[[8, 2], [12, 3]]", extra="    priority: 1\n    knobs: {waves: 2}\n")]
        self.assertEqual(expand_errors(*vs), [
            f"t.yaml:{variant_line(vs, 0)}:5: variants[0]: instance minimal_bf16_d128_g4_sq1_contig_w4t16 "
            "(variant 'narrow') can never be chosen: minimal_bf16_d128_g4_sq1_contig_w2t16 (variant 'pins') "
            "admits every graph it admits and wins the selection"])
        # one Hkv of the range without a pin: not shadowed
        pack = expand(variant("narrow", extra_admit="      num_kv_heads: [2, 4]\n"),
                      variant("pins", heads="[[8, 2], [12, 3]]", extra="    priority: 1\n    knobs: {waves: 2}\n"))
        self.assertEqual(len(pack.instances), 2)

    def test_accept_equal_admission_at_one_rank(self):
        # Same score and priority: the plan models both and keeps the faster one
        # graph by graph (INTERNALS.md 3), so neither can never be chosen.
        pack = expand(variant("a"), variant("b", extra="    knobs: {waves: 2}\n"))
        self.assertEqual([i.name for i in pack.instances],
                         ["minimal_bf16_d128_g4_sq1_contig_w2t16", "minimal_bf16_d128_g4_sq1_contig_w4t16"])


class ListJsonTest(unittest.TestCase):
    """What the build reads: a one-line change to a variant shows up as a new
    instance and its files in `ingot list --json`."""

    def list_json(self, path):
        rc, stdout, stderr = run_cli(["list", "--json", path])
        self.assertEqual(rc, EXIT_OK, stderr)
        (entry,) = json.loads(stdout)
        return entry

    def test_adding_a_head_dim_adds_the_instance(self):
        with open(SEED_CONFIG, encoding="utf-8") as f:
            text = f.read()
        self.assertEqual(text.count("head_dim: [128]"), 1)
        before = self.list_json(SEED_CONFIG)
        self.assertEqual(before["instances"], ["test_seed_bf16_d128_g4_sq1_contig_w4t16"])
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "test_seed.yaml")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text.replace("head_dim: [128]", "head_dim: [128, 64]"))
            after = self.list_json(path)
        new = "test_seed_bf16_d64_g4_sq1_contig_w4t16"
        self.assertEqual(after["pack"], "test_seed")
        self.assertEqual(after["archs"], ["gfx942", "gfx950", "sm_90"])
        self.assertEqual(after["instances"], ["test_seed_bf16_d128_g4_sq1_contig_w4t16", new])  # sorted by name
        self.assertEqual(sorted(set(after["files"]) - set(before["files"])),
                         [f"descriptors/{new}.umd.json", f"kernels/gfx942/{new}.hip",
                          f"kernels/gfx950/{new}.hip", f"kernels/sm_90/{new}.hip"])
        self.assertEqual(set(before["files"]) - set(after["files"]), set())


if __name__ == "__main__":
    unittest.main()
