"""Families are plug-ins: the core (config, render, descriptors) expands,
renders and describes a family it has never heard of. A toy family, defined
here and registered in FAMILIES for each test only, with its templates in
data/toy_family/, goes through the same validate_and_expand and render_pack
as attention decode; the tests check what comes out, file by file. And the
core's modules name no family: a new one touches none of them."""

import os
import re
import unittest
from dataclasses import dataclass
from unittest import mock

from gen_support import REPO

from ingot import descriptors
from ingot.config import validate_and_expand
from ingot.errors import ConfigErrors
from ingot.families import FAMILIES
from ingot.families.family import Family
from ingot.load import load_text
from ingot.render import environment, render_pack
from ingot.schema import Int, Map, Range, Str

TOY_TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "toy_family")
# The generator's core: what a new family must not have to touch.
CORE = ("load", "schema", "config", "render", "write", "descriptors", "package", "cli", "build")


@dataclass(frozen=True)
class ToyInstance:
    """y = scale * x in blocks of `width`: one entry point, two axes, one knob."""
    pack: str
    variant: str
    priority: int
    dtype: str
    width: int
    unroll: int
    n: tuple
    archs: tuple

    @property
    def name(self):
        return f"{self.pack}_{self.dtype}_w{self.width}"

    def filename(self, arch):
        return f"kernels/{arch}/{self.name}.hip"

    def symbol(self, entry):
        return f"{self.name}_{entry}"

    @property
    def code_key(self):
        return (self.dtype, self.width, self.unroll)

    def admission(self):
        return {"dtype": frozenset([self.dtype]), "n": self.n, "arch": frozenset(self.archs)}

    @property
    def rank(self):
        return (self.priority,)

    def metadata(self):
        return {"dtype": self.dtype, "width": self.width}

    def constraints(self):
        return [{"field": "dtype", "op": "eq", "value": self.dtype},
                {"field": "n", "op": "range", "min": self.n[0], "max": self.n[1]}]

    def spec(self):
        return {"width": self.width}

    def entry_dynamic_lds(self, arch):
        # A wide block stages through dynamic LDS on the NVIDIA arch only.
        return {"main": 256 * self.width} if self.width >= 8 and arch.vendor == "nvidia" else {}


def _toy_check_variant(var, ctx):
    ok = True
    for i, w in enumerate(var.axes["width"]):
        if w & (w - 1):
            ctx.error(var.path + ("axes", "width", i), f"width {w} is not a power of two")
            ok = False
    return ok


def _toy_expand(var, points, ctx):
    out = []
    for p in points:
        if p["width"] * var.knobs["unroll"] > 64:
            ctx.error(var.path + ("knobs", "unroll"), f"unroll {var.knobs['unroll']} x width {p['width']} "
                      "is past 64 elements a thread")
            return None
        if p["dtype"] == "fp16" and p["width"] == 1:
            continue  # no scalar fp16 kernel: not an instance
        out.append(ToyInstance(pack=var.pack, variant=var.name, priority=var.priority, dtype=p["dtype"],
                               width=p["width"], unroll=var.knobs["unroll"], n=tuple(var.admit["n"]),
                               archs=tuple(a.name for a in var.archs)))
    return out


TOY = Family(
    name="toy",
    axes={"dtype": Str(choices=["bf16", "fp16"]), "width": Int(1, 64)},
    axis_defaults={"width": [4]},
    knobs={"unroll": Int(1, 8), "threads": Int(32, 1024)},
    optional_knobs={"threads": 256},
    admit=Map({"n": (Range(1, 1 << 30), True, None)}),
    pack_keys={"block": (Map({"rows": (Int(1, 16), False, 2)}), False, {"rows": 2})},
    check_variant=_toy_check_variant,
    expand=_toy_expand,
    no_instance_reason="every combination is excluded or a scalar fp16 one",
    metadata_types={"dtype": "string", "width": "int"},
    entry_points=("main",),
    kernargs=(("x", "global_buffer", 8), ("n", "by_value", 4), ("y", "global_buffer", 8),
              ("scale", "by_value", 4)),
    graph_constraints=[{"field": "x.layout", "op": "eq", "value": "contiguous"}],
    workspace=lambda pack: {"policy": "none", "rows": pack.setting("block")["rows"]},
    kernel_template="toy.hip.j2",
    dispatch_source_template="toy_dispatch.c.j2",
    dispatch_header_template="toy_dispatch.h.j2",
    kernarg_expr={"x": "b->q", "n": "p->capacity", "y": "b->o", "scale": "p->scale"},
    kernel_context=lambda inst, arch: {"lanes": arch.wave_size // inst.width},
    dispatch_context=lambda pack: {"unroll": max(i.unroll for i in pack.instances)},
)

HEAD = """\
pack: toys
family: toy
engine: ingot:Toy
sdk_version: 0.1.0
archs: [sm_90, gfx942]
metadata_fields:
  - {name: dtype, type: string}
  - {name: width, type: int, default: 4}
knobs:
  unroll: 2
variants:
"""

VARIANTS = """\
  - name: wide
    axes:
      dtype: [bf16, fp16]
      width: [1, 8]
    exclude:
      - {dtype: bf16, width: 1}
    knobs: {unroll: 4}
    admit:
      n: [1, 4096]
  - name: plain
    priority: 1
    archs: [gfx942]
    axes:
      dtype: [fp16]
    admit:
      n: [16, 65536]
"""


def toy_pack(text=HEAD + VARIANTS):
    return validate_and_expand(load_text(text, "toy.yaml"), "0" * 64)


def toy_errors(text):
    try:
        toy_pack(text)
    except ConfigErrors as e:
        return [str(x) for x in e.errors]
    raise AssertionError("expected ConfigErrors")


class ToyFamilyTest(unittest.TestCase):

    def setUp(self):
        patch = mock.patch.dict(FAMILIES, {TOY.name: TOY})
        patch.start()
        self.addCleanup(patch.stop)

    def test_the_core_expands_the_toy_variants(self):
        pack = toy_pack()
        self.assertEqual(pack.family, "toy")
        self.assertEqual(pack.settings, (("block", {"rows": 2}),))  # the family's own key, its default
        # wide: (bf16, 8), (fp16, 8) -- (bf16, 1) excluded, (fp16, 1) dropped by the family;
        # plain: the axis default width 4, its own archs; sorted by name.
        self.assertEqual([(i.name, i.variant, i.unroll, i.n, i.archs) for i in pack.instances], [
            ("toys_bf16_w8", "wide", 4, (1, 4096), ("gfx942", "sm_90")),
            ("toys_fp16_w4", "plain", 2, (16, 65536), ("gfx942",)),
            ("toys_fp16_w8", "wide", 4, (1, 4096), ("gfx942", "sm_90")),
        ])
        self.assertEqual(pack.knobs, ("threads", "unroll"))  # the optional knob with its default

    def test_the_core_renders_the_toy_templates(self):
        pack = toy_pack()
        files = render_pack(pack, environment(TOY_TEMPLATES))
        self.assertEqual(sorted(files), [
            "descriptors/toys.graph.umd.json", "descriptors/toys.kdp.json", "descriptors/toys.kmd.json",
            "descriptors/toys.udd.json", "descriptors/toys.ued.json",
            "descriptors/toys_bf16_w8.umd.json", "descriptors/toys_fp16_w4.umd.json",
            "descriptors/toys_fp16_w8.umd.json",
            "dispatch/toys_dispatch.c", "dispatch/toys_dispatch.h",
            "kernels/gfx942/toys_bf16_w8.hip", "kernels/gfx942/toys_fp16_w4.hip",
            "kernels/gfx942/toys_fp16_w8.hip",
            "kernels/sm_90/toys_bf16_w8.hip", "kernels/sm_90/toys_fp16_w8.hip",
        ])
        # The kernel: the instance, the arch's name, the entry symbol by its entry
        # name and the family's own variable (lanes: the arch's wave over the width).
        self.assertEqual(files["kernels/sm_90/toys_fp16_w8.hip"], (
            "// toy toys_fp16_w8 for sm_90 from toy.yaml\n"
            '#include "toy.h"\n'
            "template struct toy::Scale<ingot::kFP16, /*width*/ 8, /*lanes*/ 4>;\n"
            "INGOT_KERNEL void toys_fp16_w8_main(TOY_PARAMS) { toy::scale<8>(TOY_ARGS); }\n"))
        self.assertIn("/*lanes*/ 8>", files["kernels/gfx942/toys_fp16_w8.hip"])
        # The stub: each kernarg at its C ABI offset (n is 4 bytes, y aligned to 8),
        # with the family's expression, and the family's own variable.
        self.assertEqual(files["dispatch/toys_dispatch.c"], (
            "/* toy stub of toys: 4 kernargs, 28 bytes */\n"
            '#include "toys_dispatch.h"\n'
            "static const int k_unroll = 4;\n"
            "static void write_kernargs(uint8_t *buf, const ingot_dispatch_plan *p, "
            "const toy_buffers *b) {\n"
            "  put8(buf + 0, b->q); /* x: global_buffer */\n"
            "  put4(buf + 8, p->capacity); /* n: by_value */\n"
            "  put8(buf + 16, b->o); /* y: global_buffer */\n"
            "  put4(buf + 24, p->scale); /* scale: by_value */\n"
            "}\n"
            'const ingot_dispatch_entry ingot_toys_dispatch = { "ingot_toys_dispatch", 28 };\n'))
        self.assertEqual(files["dispatch/toys_dispatch.h"],
                         "/* toy stub header of toys */\nextern const ingot_dispatch_entry ingot_toys_dispatch;\n")
        self.assertFalse([f for f, text in files.items() if "attention" in text.lower()])

    def test_the_core_describes_the_toy_kernels(self):
        built = descriptors.build(toy_pack())
        udd = built["toys.udd.json"]
        self.assertEqual((udd["entry_points"], udd["kernarg_size"]), (["main"], 28))
        self.assertEqual(udd["signature"], [
            {"name": "x", "kind": "global_buffer", "size": 8, "offset": 0},
            {"name": "n", "kind": "by_value", "size": 4, "offset": 8},
            {"name": "y", "kind": "global_buffer", "size": 8, "offset": 16},
            {"name": "scale", "kind": "by_value", "size": 4, "offset": 24}])
        self.assertEqual(udd["workspace"], {"policy": "none", "rows": 2})
        self.assertEqual(built["toys.graph.umd.json"]["constraints"], TOY.graph_constraints)
        self.assertEqual(built["toys.kmd.json"]["fields"], [
            {"name": "dtype", "type": "string"}, {"name": "width", "type": "int", "default_value": 4}])
        self.assertEqual(built["toys_fp16_w4.umd.json"]["constraints"], [
            {"field": "dtype", "op": "eq", "value": "fp16"}, {"field": "n", "op": "range", "min": 16, "max": 65536}])
        kds = {kd["name"]: kd for kd in built["toys.kdp.json"]["kernelDescriptors"]}
        self.assertEqual(sorted(kds), ["toys_bf16_w8", "toys_fp16_w4", "toys_fp16_w8"])
        wide, plain = kds["toys_fp16_w8"], kds["toys_fp16_w4"]
        self.assertEqual((wide["priority"], wide["metadata"]), (0, {"dtype": "fp16", "width": 8}))
        self.assertEqual(wide["kernel_source"], {
            "kind": "hip_source",
            "sources": {"gfx942": "kernels/gfx942/toys_fp16_w8.hip", "sm_90": "kernels/sm_90/toys_fp16_w8.hip"},
            "symbols": {"main": "toys_fp16_w8_main"},
            "spec": {"variant": "wide", "width": 8},
            "dynamic_lds": {"sm_90": {"main": 2048}}})
        self.assertEqual(plain["kernel_source"]["spec"], {"variant": "plain", "width": 4})
        self.assertNotIn("dynamic_lds", plain["kernel_source"])

    def test_the_core_applies_the_toy_rules_and_its_own(self):
        # The family's check and expand, the core's KMD and shadowing rules under
        # the family's types and rank, each error once, all in one run.
        text = (HEAD.replace("  - {name: width, type: int, default: 4}\n", "")
                + VARIANTS.replace("width: [1, 8]", "width: [1, 6]")
                + "  - name: lower\n    axes:\n      dtype: [fp16]\n      width: [2]\n"
                  "    admit:\n      n: [32, 64]\n"
                  "  - name: upper\n    priority: 1\n    axes:\n      dtype: [fp16]\n      width: [16]\n"
                  "    admit:\n      n: [1, 128]\n"
                  "  - name: none\n    axes:\n      dtype: [fp16]\n      width: [1]\n"
                  "    admit:\n      n: [1, 2]\n"
                  "  - name: big\n    knobs: {unroll: 8}\n    axes:\n      dtype: [bf16]\n      width: [16]\n"
                  "    admit:\n      n: [1, 2]\n")
        errs = [e[e.index(": ") + 2:] for e in toy_errors(text)]
        self.assertEqual(errs, [
            "metadata_fields: missing metadata field 'width' (type int), which every kernel of family 'toy' has",
            "variants[0].axes.width[1]: width 6 is not a power of two",
            "variants[4]: variant 'none' expands to no kernel instance "
            "(every combination is excluded or a scalar fp16 one)",
            "variants[5].knobs.unroll: unroll 8 x width 16 is past 64 elements a thread",
        ])
        # Shadowing among the variants that expand: `upper` admits all `lower` admits and ranks
        # higher; `plain` (priority 1) does not shadow wide's fp16 kernel, which admits n < 16.
        text = HEAD + (VARIANTS + "  - name: lower\n    axes:\n      dtype: [fp16]\n      width: [2]\n"
                       "    admit:\n      n: [32, 64]\n"
                       "  - name: upper\n    priority: 1\n    axes:\n      dtype: [fp16]\n      width: [16]\n"
                       "    admit:\n      n: [1, 128]\n")
        errs = [e[e.index(": ") + 2:] for e in toy_errors(text)]
        self.assertEqual(errs, [
            "variants[2]: instance toys_fp16_w2 (variant 'lower') can never be chosen: toys_fp16_w16 "
            "(variant 'upper') admits every graph it admits and wins the selection"])

    def test_the_toy_schema_is_the_family_s(self):
        head = HEAD.replace("knobs:\n  unroll: 2\n", "knobs:\n  unroll: 2\n  waves: 4\nblock: {rows: 0}\n")
        errs = toy_errors(head + VARIANTS.replace("n: [1, 4096]", "n: [1, 4096]\n      lse: true"))
        self.assertEqual([e[e.index(": ") + 2:] for e in errs], [
            "knobs.waves: unknown key 'waves' (allowed: threads, unroll)",
            "block.rows: 0 is out of range (allowed: 1..16)",
            "variants[0].admit.lse: unknown key 'lse' (allowed: n)"])

    def test_an_unknown_family_checks_only_the_core_keys(self):
        # No family's rules judge a config whose family is not known: its family
        # keys (of any family) pass unchecked, the core's are checked.
        text = (HEAD + VARIANTS).replace("family: toy", "family: toyy").replace("sdk_version: 0.1.0",
                                                                                  "sdk_version: one")
        errs = [e[e.index(": ") + 2:] for e in toy_errors(text + "split: {}\nblock: 3\ncolour: red\n")]
        self.assertEqual(errs, [
            "family: 'toyy' is not allowed (did you mean 'toy'? allowed: attention_decode, kv_append, toy)",
            "sdk_version: 'one' is not a version like '0.1.0'",
            "colour: unknown key 'colour' (allowed: archs, behavior_notes, block, "
            "description, engine, family, knobs, metadata_fields, pack, sdk_version, split, variants)"])


class CoreNamesNoFamilyTest(unittest.TestCase):

    def test_the_registration_names_every_family(self):
        # The accept case of the scan below: it finds a family's name where it is.
        with open(os.path.join(REPO, "generator", "ingot", "families", "__init__.py"), encoding="utf-8") as f:
            text = f.read()
        self.assertTrue(FAMILIES)
        for family in FAMILIES:
            self.assertIn(f"from ingot.families import {family}", text)

    def test_no_core_module_names_a_family(self):
        for name in CORE:
            with open(os.path.join(REPO, "generator", "ingot", f"{name}.py"), encoding="utf-8") as f:
                text = f.read()
            with self.subTest(module=name):
                for family in FAMILIES:
                    self.assertNotIn(family, text)
                self.assertFalse(re.search(r"ingot\.families\.\w+|from ingot\.families import (?!FAMILIES\b)",
                                           text))


if __name__ == "__main__":
    unittest.main()
