"""The KV-cache append family's generator module (generator/ingot/families/kv_append.py):
the shipped config expands to one kernel per dtype and layout with the admission
the runtime matches on; the config's rules refuse what no kernel runs, naming the
key; and the bounds it shares with the host planner
(runtime/src/families/kv_append/ingot_kv_append_plan.h) and the kernel header
are the same numbers on both sides."""

import os
import re
import unittest

from gen_support import REPO

from ingot.config import validate_and_expand
from ingot.errors import ConfigErrors
from ingot.families import kv_append
from ingot.load import load_text

CONFIG = os.path.join(REPO, "configs", "kv_append.yaml")
ABI_H = os.path.join(REPO, "templates", "ingot_abi.h")  # the constants the planner takes from the module


def load(text):
    return validate_and_expand(load_text(text, "kv.yaml"), "0" * 64)


def errors(text):
    try:
        load(text)
    except ConfigErrors as e:
        return [str(x) for x in e.errors]
    raise AssertionError("expected ConfigErrors")


class ShippedConfigTest(unittest.TestCase):
    def setUp(self):
        with open(CONFIG, encoding="utf-8") as f:
            self.text = f.read()

    def test_one_kernel_per_dtype_and_layout(self):
        pack = load(self.text)
        names = sorted(i.name for i in pack.instances)
        self.assertEqual(names, ["kv_append_bf16_contig_t256", "kv_append_bf16_paged_t256",
                                 "kv_append_fp16_contig_t256", "kv_append_fp16_paged_t256"])
        for inst in pack.instances:
            adm = inst.admission()
            self.assertEqual(adm["head_dim"], (8, 512))
            self.assertEqual(adm["batch"], (1, kv_append.batch_limit(256)))
            self.assertEqual(adm["page_size"], (1, 1 << 20) if inst.kv_layout == "paged" else frozenset([0]))
            self.assertEqual(set(adm["arch"]), {"gfx942", "gfx950", "sm_90"})
            fields = [c["field"] for c in inst.constraints()]
            self.assertEqual("page_size" in fields, inst.kv_layout == "paged")

    def test_threads_must_be_whole_waves_of_every_arch(self):
        bad = self.text.replace("threads: 256", "threads: 96")  # 3 NVIDIA warps, 1.5 AMD waves
        errs = errors(bad)
        self.assertEqual(len(errs), 1, errs)
        self.assertIn("threads 96 is not a whole number of 64-lane waves of gfx942", errs[0])

    def test_page_size_only_for_paged_variants(self):
        bad = self.text.replace("kv_layout: [contiguous, paged]", "kv_layout: [contiguous]")
        errs = errors(bad)
        self.assertTrue(any("page_size given, but the variant has no paged kv_layout" in e for e in errs), errs)

    def test_batch_past_the_work_item_limit(self):
        bad = self.text.replace("      page_size: [1, 1048576]", "      page_size: [1, 1048576]\n"
                                "      batch: [1, 2147483647]")
        errs = errors(bad)
        self.assertTrue(any("batch up to 2147483647 is past what 256-thread workgroups allow" in e for e in errs),
                        errs)

    def test_head_dims_without_a_multiple_of_eight(self):
        bad = self.text.replace("      page_size: [1, 1048576]", "      page_size: [1, 1048576]\n"
                                "      head_dim: [9, 15]")
        errs = errors(bad)
        self.assertTrue(any("head_dim [9, 15] holds no multiple of 8" in e for e in errs), errs)


class SharedBoundsTest(unittest.TestCase):
    def test_planner_and_module_agree(self):
        with open(ABI_H, encoding="utf-8") as f:
            text = f.read()
        defines = {m.group(1): int(m.group(2)) for m in re.finditer(r"#define INGOT_KVA_(\w+) (\d+)", text)}
        self.assertEqual(defines["HEAD_DIM_STEP"], kv_append.HEAD_DIM_STEP)
        self.assertEqual(defines["MAX_HEAD_DIM"], kv_append.MAX_HEAD_DIM)
        self.assertEqual(defines["MAX_THREADS"], kv_append.MAX_THREADS)

    def test_kernarg_expressions_cover_the_signature(self):
        names = [n for n, _kind, _size in kv_append.SIGNATURE]
        self.assertEqual(sorted(names), sorted(kv_append.KERNARG_EXPR))
        with open(os.path.join(REPO, "templates", "ingot_kva_append.h"), encoding="utf-8") as f:
            header = f.read()
        params = re.search(r"#define INGOT_KVA_PARAMS(.*?)\n\n", header, re.S).group(1)
        in_kernel = re.findall(r"(\w+)\s*(?:,|\\\s*$|$)", params.replace("\\\n", " "))
        self.assertEqual([n for n in in_kernel if n in names], names)


if __name__ == "__main__":
    unittest.main()
