"""Every descriptor the generator emits (the main config and the test_seed
config, authored form; and the packaged form) validates against its schema in
schemas/, and its cross-references hold. Negative controls prove that the
schemas and the reference check do reject what they must."""

import copy
import os
import re
import shutil
import tempfile
import unittest

from jsonschema import Draft202012Validator

from descriptor_checks import load_descriptor_dir, reference_errors, schema_errors, signature_errors
from gen_support import (MAIN_CONFIG, REPO, SEED_CONFIG, load_schemas, package_with_fake_objects, read_tree,
                         run_cli)

from ingot.cli import EXIT_OK, load_pack


def _generate(config, out):
    rc, _, stderr = run_cli(["generate", "--quiet", "--out", out, config])
    assert rc == EXIT_OK, stderr


class DescriptorTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.schemas = load_schemas()
        cls.tmp = tempfile.mkdtemp(prefix="ingot-desc-")
        gen = os.path.join(cls.tmp, "generated")
        _generate(MAIN_CONFIG, gen)
        _generate(SEED_CONFIG, gen)
        cls.packs = {}
        for pack in ("attention_decode", "test_seed"):
            root = os.path.join(gen, pack)
            cls.packs[pack] = (root, load_descriptor_dir(os.path.join(root, "descriptors")), set(read_tree(root)))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_schemas_are_valid_draft_2020_12(self):
        for kind, schema in self.schemas.items():
            with self.subTest(kind=kind):
                Draft202012Validator.check_schema(schema)
                self.assertEqual(schema["$schema"], "https://json-schema.org/draft/2020-12/schema")

    def test_descriptor_counts(self):
        # five pack descriptors and one UMD per instance of the config
        self.assertEqual(len(self.packs["attention_decode"][1]), 5 + len(load_pack(MAIN_CONFIG).instances))
        self.assertEqual(len(self.packs["test_seed"][1]), 5 + 1)

    def test_every_descriptor_validates_against_its_schema(self):
        for pack, (_, docs, _) in self.packs.items():
            with self.subTest(pack=pack):
                self.assertEqual(schema_errors(docs, self.schemas), [])

    def test_every_reference_resolves(self):
        for pack, (_, docs, rendered) in self.packs.items():
            with self.subTest(pack=pack):
                self.assertEqual(reference_errors(docs, rendered=rendered), [])

    def test_kernel_sources_exist_and_define_their_symbols(self):
        for pack, (root, docs, _) in self.packs.items():
            kdp = docs[f"{pack}.kdp.json"]
            for kd in kdp["kernelDescriptors"]:
                for arch, rel in kd["kernel_source"]["sources"].items():
                    with self.subTest(kernel=kd["name"], arch=arch):
                        self.assertEqual(rel, f"kernels/{arch}/{kd['name']}.hip")
                        with open(os.path.join(root, rel), encoding="utf-8") as f:
                            text = f.read()
                        for symbol in kd["kernel_source"]["symbols"].values():
                            self.assertEqual(len(re.findall(rf"\bvoid {symbol}\(INGOT_AD_PARAMS\)", text)), 1)

    def test_metadata_matches_the_kmd_exactly(self):
        for pack, (_, docs, _) in self.packs.items():
            kmd = docs[f"{pack}.kmd.json"]
            names = [f["name"] for f in kmd["fields"]]
            self.assertEqual(names, ["dtype", "head_dim", "group", "max_sq", "rows", "kv_layout", "waves",
                                     "tokens_per_wave", "max_splits", "lse", "row_waves"])
            for kd in docs[f"{pack}.kdp.json"]["kernelDescriptors"]:
                self.assertEqual(sorted(kd["metadata"]), sorted(names))

    def test_ued_knobs_are_kmd_fields(self):
        ued = self.packs["attention_decode"][1]["attention_decode.ued.json"]
        self.assertEqual(ued["knobs"], ["max_splits", "row_waves", "tokens_per_wave", "waves"])

    def test_udd_signature_is_the_documented_abi(self):
        udd = self.packs["attention_decode"][1]["attention_decode.udd.json"]
        self.assertEqual(signature_errors(udd), [])
        sig = udd["signature"]
        self.assertEqual(len(sig), 29)
        self.assertEqual(udd["kernarg_size"], 200)
        self.assertEqual(sig[-2], {"name": "scale", "kind": "by_value", "size": 4, "offset": 192})
        # the group (Hq / Hkv) is a runtime value of every kernel
        self.assertEqual(sig[-1], {"name": "group", "kind": "by_value", "size": 4, "offset": 196})
        self.assertEqual([a["name"] for a in sig[:8]],
                         ["q", "k", "v", "o", "lse", "seq_lens", "page_table", "workspace"])
        self.assertEqual(udd["entry_points"], ["split", "merge", "balanced_split", "balanced_merge"])

    def test_the_dispatch_stub_launches_the_entry_points_by_the_udds_order(self):
        # The planner names launches by index (INGOT_AD_ENTRY_*, ingot_abi.h): the UDD's order.
        with open(os.path.join(REPO, "templates", "ingot_abi.h"), encoding="utf-8") as f:
            defines = dict(re.findall(r"#define INGOT_AD_ENTRY_(\w+) (\d+)", f.read()))
        udd = self.packs["attention_decode"][1]["attention_decode.udd.json"]
        self.assertEqual({name.lower(): int(i) for name, i in defines.items()},
                         {e: i for i, e in enumerate(udd["entry_points"])})

    def test_udd_signature_matches_the_kernel_parameter_list(self):
        # The kernel's own parameter list (templates/ingot_ad_params.h) is
        # what the compiler lays out; the UDD must say the same, name by name.
        with open(os.path.join(REPO, "templates", "ingot_ad_params.h"), encoding="utf-8") as f:
            header = f.read()
        m = re.search(r"#define INGOT_AD_PARAMS(?=\s)((?:[^\n]*\\\n)*[^\n]*)", header)
        self.assertIsNotNone(m)
        params = [p.strip() for p in m.group(1).replace("\\\n", " ").split(",")]
        got = []
        for p in params:
            name = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", p)[-1]
            if "*" in p:
                got.append((name, "global_buffer", 8))
            elif p.startswith("long long"):
                got.append((name, "by_value", 8))
            elif p.startswith(("int ", "float ")):
                got.append((name, "by_value", 4))
            else:
                self.fail(f"unexpected kernel parameter {p!r}")
        udd = self.packs["attention_decode"][1]["attention_decode.udd.json"]
        self.assertEqual(got, [(a["name"], a["kind"], a["size"]) for a in udd["signature"]])

    def test_the_committed_descriptors_validate(self):
        docs = load_descriptor_dir(os.path.join(REPO, "generated", "attention_decode", "descriptors"))
        # a UMD per kernel instance, and the pack's KDP, UDD, UED, KMD and graph UMD
        self.assertEqual(len(docs), len(load_pack(MAIN_CONFIG).instances) + 5)
        self.assertEqual(schema_errors(docs, self.schemas), [])
        self.assertEqual(reference_errors(docs, rendered=set(read_tree(os.path.join(REPO, "generated",
                                                                                      "attention_decode")))), [])


class PackagedDescriptorTest(unittest.TestCase):
    """The packaged KDP (kernel_source kind code_object) validates too."""

    @classmethod
    def setUpClass(cls):
        cls.schemas = load_schemas()

    def test_packaged_kdp_from_the_packaging_step_validates(self):
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, stderr = package_with_fake_objects(os.path.join(REPO, "generated", "attention_decode"), tmp)
            self.assertEqual(rc, 0, stderr)
            docs = load_descriptor_dir(out)
            kdp = docs["attention_decode.kdp.json"]
            self.assertEqual(kdp["kernelDescriptors"][0]["kernel_source"]["kind"], "code_object")
            self.assertEqual(schema_errors(docs, self.schemas), [])
            self.assertEqual(reference_errors(docs, pack_dir=out), [])

    def test_packaged_kdp_with_fewer_archs_validates(self):
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, stderr = package_with_fake_objects(os.path.join(REPO, "generated", "attention_decode"), tmp,
                                                        archs=["gfx942", "gfx950"])
            self.assertEqual(rc, 0, stderr)
            docs = load_descriptor_dir(out)
            self.assertEqual(docs["attention_decode.kdp.json"]["arch"], ["gfx942", "gfx950"])
            self.assertEqual(schema_errors(docs, self.schemas), [])
            self.assertEqual(reference_errors(docs, pack_dir=out), [])

    def test_the_built_pack_validates(self):
        # the build's own pack (set by CTest), not whatever build/ holds
        pack = os.environ.get("INGOT_BUILT_PACK", os.path.join(REPO, "build", "packs", "attention_decode"))
        if not os.path.isfile(os.path.join(pack, "attention_decode.kdp.json")):
            self.skipTest(f"no built pack at {pack} (run the CMake build first)")
        docs = load_descriptor_dir(pack)
        self.assertEqual(schema_errors(docs, self.schemas), [])
        self.assertEqual(reference_errors(docs, pack_dir=pack), [])


class NegativeControlTest(unittest.TestCase):
    """Mutations a schema or the reference check must reject. Each starts from a
    descriptor that passes, so a check stuck on "reject" fails here too."""

    @classmethod
    def setUpClass(cls):
        cls.schemas = load_schemas()
        cls.docs = load_descriptor_dir(os.path.join(REPO, "generated", "attention_decode", "descriptors"))
        cls.tmp = tempfile.mkdtemp(prefix="ingot-neg-")
        rc, out, stderr = package_with_fake_objects(os.path.join(REPO, "generated", "attention_decode"), cls.tmp)
        assert rc == 0, stderr
        cls.packaged_dir = out
        cls.packaged = load_descriptor_dir(out)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def _valid(self, kind, doc):
        return Draft202012Validator(self.schemas[kind]).is_valid(doc)

    def assert_rejected(self, kind, name, mutate, docs=None):
        doc = (docs or self.docs)[name]
        if kind == "kdp":  # three kernels are enough to mutate, and validate 16 times faster
            doc = dict(doc, kernelDescriptors=doc["kernelDescriptors"][:3])
        doc = copy.deepcopy(doc)
        self.assertTrue(self._valid(kind, doc), f"{name} must be valid before the mutation")
        mutate(doc)
        self.assertFalse(self._valid(kind, doc), f"{name}: the {kind} schema accepted the mutation")

    def test_schemas_reject_mutations(self):
        kdp, udd, ued, kmd = ("attention_decode.kdp.json", "attention_decode.udd.json",
                              "attention_decode.ued.json", "attention_decode.kmd.json")
        umd = "attention_decode_bf16_d128_g4_sq1_paged_w4t16_tc.umd.json"
        cases = [
            ("kdp", kdp, lambda d: d.update(version="2.0")),
            ("kdp", kdp, lambda d: d.update(id="not-a-uuid")),
            ("kdp", kdp, lambda d: d.update(id=d["id"].upper())),
            ("kdp", kdp, lambda d: d.update(extra=1)),
            ("kdp", kdp, lambda d: d.update(arch=["gfx90a"])),
            ("kdp", kdp, lambda d: d.update(arch=[])),
            ("kdp", kdp, lambda d: d["provenance"].update(config="/work/main/configs/attention_decode.yaml")),
            ("kdp", kdp, lambda d: d["provenance"].update(config="../configs/attention_decode.yaml")),
            ("kdp", kdp, lambda d: d["kernelDescriptors"][0].update(version="2.0")),
            ("kdp", kdp, lambda d: d["kernelDescriptors"][0].pop("priority")),
            ("kdp", kdp, lambda d: d["kernelDescriptors"][0].update(priority="high")),
            ("kdp", kdp, lambda d: d["kernelDescriptors"][0]["kernel_source"].update(kind="code_object")),
            ("kdp", kdp, lambda d: d["kernelDescriptors"][0]["kernel_source"]["sources"].update(
                gfx942="kernels/../../etc/passwd.hip")),
            ("kdp", kdp, lambda d: d["kernelDescriptors"][0]["kernel_source"]["sources"].update(
                gfx942="/abs/kernels/gfx942/x.hip")),
            ("kdp", kdp, lambda d: d["kernelDescriptors"][0]["metadata"].update(dtype=None)),
            ("udd", udd, lambda d: d.update(version="1.1")),
            ("udd", udd, lambda d: d["signature"][0].update(kind="pointer")),
            ("udd", udd, lambda d: d["signature"][0].update(size=4)),
            ("udd", udd, lambda d: d["signature"][27].update(size=3)),
            ("udd", udd, lambda d: d["signature"][0].pop("offset")),
            ("udd", udd, lambda d: d["workspace"].update(policy="lazy")),
            ("udd", udd, lambda d: d["workspace"].update(policy="fixed")),
            ("ued", ued, lambda d: d.update(heuristic="fastest")),
            ("ued", ued, lambda d: d["graph_match"].update(kind="symbol")),
            ("ued", ued, lambda d: d.update(name="AttentionDecode")),
            ("kmd", kmd, lambda d: d["fields"][0].update(type="str")),
            ("kmd", kmd, lambda d: d["fields"][6].update(default_value="four")),
            ("kmd", kmd, lambda d: d["fields"][9].update(default_value=0)),
            ("umd", umd, lambda d: d.update(scope="pack")),
            ("umd", umd, lambda d: d["constraints"][0].update(op="ne")),
            ("umd", umd, lambda d: d["constraints"][0].update(field="temperature")),
            ("umd", umd, lambda d: d["constraints"][0].update(values=["bf16"])),  # eq takes value, not values
            ("umd", umd, lambda d: d["constraints"][10].update(op="eq")),  # mask: in's values under op eq
            ("umd", umd, lambda d: d["constraints"][5].pop("max")),  # range needs min and max
            ("umd", umd, lambda d: d["constraints"][5].update(min="1")),
            ("umd", umd, lambda d: d["constraints"].append({"field": "dtype", "op": "power_of_two"})),
            ("umd", umd, lambda d: d["constraints"].append({"field": "page_size", "op": "multiple_of", "value": 0})),
        ]
        for i, (kind, name, mutate) in enumerate(cases):
            with self.subTest(case=i, kind=kind):
                self.assert_rejected(kind, name, mutate)

    def test_umd_schema_accepts_every_documented_op(self):
        umd = copy.deepcopy(self.docs["attention_decode.graph.umd.json"])
        umd["constraints"] += [
            {"field": "page_size", "op": "multiple_of", "value": 16},
            {"field": "page_size", "op": "power_of_two"},
            {"field": "capacity", "op": "range", "min": 1, "max": 64},
            {"field": "heads", "op": "eq", "value": [8, 2]},
        ]
        self.assertTrue(self._valid("umd", umd))

    def test_kdp_schema_rejects_mutated_packaged_form(self):
        name = "attention_decode.kdp.json"
        cases = [
            lambda d: d["kernelDescriptors"][0]["kernel_source"].update(kind="hip_source"),
            lambda d: d["kernelDescriptors"][0]["kernel_source"]["objects"]["gfx942"].update(sha256="abc"),
            lambda d: d["kernelDescriptors"][0]["kernel_source"]["objects"]["gfx942"].update(
                path="code/../gfx942/x.gfx942.co"),
            lambda d: d["kernelDescriptors"][0]["kernel_source"]["objects"]["gfx942"].update(
                path="code\\gfx942\\x.gfx942.co"),
            lambda d: d["kernelDescriptors"][0]["kernel_source"]["objects"].update(
                gfx90a=d["kernelDescriptors"][0]["kernel_source"]["objects"]["gfx942"]),
            # AMD resources on an NVIDIA object
            lambda d: d["kernelDescriptors"][0]["kernel_source"]["objects"].update(
                sm_90=d["kernelDescriptors"][0]["kernel_source"]["objects"]["gfx942"]),
            lambda d: d["kernelDescriptors"][0]["kernel_source"]["objects"]["gfx950"]["resources"]["split"].pop("vgpr"),
            # one KDP holds one form: a packaged pack with one authored kernel is neither
            lambda d: d["kernelDescriptors"][1].update(kernel_source=self.docs[name]["kernelDescriptors"][1]["kernel_source"]),
        ]
        for i, mutate in enumerate(cases):
            with self.subTest(case=i):
                self.assert_rejected("kdp", name, mutate, docs=self.packaged)

    def _reference_errors_after(self, mutate, docs=None, **kw):
        docs = copy.deepcopy(docs or self.docs)
        self.assertEqual(reference_errors(docs, **kw), [])
        mutate(docs)
        return reference_errors(docs, **kw)

    def test_reference_check_rejects_a_dangling_engine(self):
        dangling = "00000000-0000-5000-8000-000000000000"
        errs = self._reference_errors_after(lambda d: d["attention_decode.kdp.json"].update(engine=dangling))
        self.assertEqual(errs, [f"attention_decode.kdp.json: engine: {dangling} does not resolve"])

    def test_reference_check_rejects_a_reference_of_the_wrong_kind(self):
        kdp_name = "attention_decode.kdp.json"

        def point_dispatch_at_kmd(d):
            d[kdp_name]["dispatch"] = d["attention_decode.kmd.json"]["id"]

        errs = self._reference_errors_after(point_dispatch_at_kmd)
        self.assertEqual(errs, [f"{kdp_name}: dispatch: {self.docs['attention_decode.kmd.json']['id']} "
                                "is a kmd, expected a udd"])

    def test_reference_check_rejects_a_graph_umd_as_kernel_matcher(self):
        kdp_name = "attention_decode.kdp.json"
        graph_id = self.docs["attention_decode.graph.umd.json"]["id"]

        def swap(d):
            kd = d[kdp_name]["kernelDescriptors"][0]
            kd["matchers"] = [graph_id]

        errs = self._reference_errors_after(swap)
        first = self.docs[kdp_name]["kernelDescriptors"][0]["name"]
        self.assertEqual(errs, [
            f"{kdp_name}: kernel {first}: matchers[0]: {graph_id} is a UMD of scope graph, expected kernel",
            f"{first}.umd.json: kernel-scope UMD used by 0 kernels, expected 1"])

    def test_reference_check_rejects_duplicate_ids(self):
        kdp_name = "attention_decode.kdp.json"

        def dup(d):
            kds = d[kdp_name]["kernelDescriptors"]
            kds[1]["id"] = kds[0]["id"]

        errs = self._reference_errors_after(dup)
        kds = self.docs[kdp_name]["kernelDescriptors"]
        self.assertEqual(errs, [f"{kdp_name}: kernel {kds[1]['name']}: id {kds[0]['id']} is also the id of "
                                f"{kdp_name}: kernel {kds[0]['name']}"])

    def test_reference_check_rejects_metadata_that_breaks_the_kmd(self):
        kdp_name = "attention_decode.kdp.json"
        first = self.docs[kdp_name]["kernelDescriptors"][0]["name"]

        def break_metadata(d):
            md = d[kdp_name]["kernelDescriptors"][0]["metadata"]
            md["head_dim"] = "128"
            del md["dtype"]
            md["temperature"] = 1.0

        errs = self._reference_errors_after(break_metadata)
        self.assertEqual(errs, [
            f"{kdp_name}: kernel {first}: metadata lacks mandatory field 'dtype'",
            f"{kdp_name}: kernel {first}: metadata head_dim='128' is not a int",
            f"{kdp_name}: kernel {first}: metadata field 'temperature' is not in the KMD"])

    def test_reference_check_rejects_a_missing_kernel_source(self):
        kdp_name = "attention_decode.kdp.json"
        rendered = set(read_tree(os.path.join(REPO, "generated", "attention_decode")))
        first = next(k["name"] for k in self.docs[kdp_name]["kernelDescriptors"]
                     if "sm_90" in k["kernel_source"]["sources"])
        self.assertEqual(reference_errors(self.docs, rendered=rendered), [])
        errs = reference_errors(self.docs, rendered=rendered - {f"kernels/sm_90/{first}.hip"})
        self.assertEqual(errs, [f"{kdp_name}: kernel {first}: source kernels/sm_90/{first}.hip (sm_90) "
                                "is not among the generated files"])

    def test_reference_check_rejects_a_misaligned_or_short_signature(self):
        udd_name = "attention_decode.udd.json"

        def misalign(d):
            d[udd_name]["signature"][8]["offset"] = 68  # q_stride_b, an 8-byte value
            d[udd_name]["kernarg_size"] = 204

        errs = self._reference_errors_after(misalign)
        self.assertEqual(errs, [
            "udd: signature[8] q_stride_b: offset 68 is not a multiple of its size 8",
            "udd: signature[9] q_stride_h: offset 72 overlaps the previous argument (ends at 76)",
            "udd: kernarg_size 204 is not the end of the last argument (200)"])

    def test_reference_check_rejects_a_packaged_object_whose_bytes_changed(self):
        kdp_name = "attention_decode.kdp.json"
        i, kd = next((i, k) for i, k in enumerate(self.packaged[kdp_name]["kernelDescriptors"])
                     if "gfx950" in k["kernel_source"]["objects"])
        path = kd["kernel_source"]["objects"]["gfx950"]["path"]

        def tamper(d):
            d[kdp_name]["kernelDescriptors"][i]["kernel_source"]["objects"]["gfx950"]["sha256"] = "0" * 64

        errs = self._reference_errors_after(tamper, docs=self.packaged, pack_dir=self.packaged_dir)
        self.assertEqual(errs, [f"{kdp_name}: kernel {kd['name']}: gfx950 code object {path} does not hash "
                                "to its sha256"])


if __name__ == "__main__":
    unittest.main()
