"""The packaged pack the build produced (INGOT_BUILT_PACK, default build/packs/attention_decode):
its census (packs, kernels per arch, matchers, knobs) against the config, every file accounted
for, and the static code-object rules: every gfx942 and gfx950 entry point has zero scratch and
spills only into AGPRs and only in the known SIMT kernels (no more than they have now); every AMD
object is code object v5, as its KDP says; the AGPR spills recorded are what the disassembly shows;
no AMD object uses flat or scratch memory instructions; every AMD split's token loop keeps a chunk's
K and V loads in flight while it computes (the software pipeline holds on AMD).
Each check has a negative control on a mutated copy."""

import contextlib
import glob
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from descriptor_checks import code_object_state
from ingot.archs import ARCHS
from ingot.cli import load_pack
from ingot.codeobj import amd_register_moves, loop_pipeline, split_body
from ingot.families import FAMILIES
from ingot.package import census_rows, print_census, spill_line, spill_lines

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACK = os.environ.get("INGOT_BUILT_PACK", os.path.join(REPO, "build", "packs", "attention_decode"))
CONFIG = os.path.join(REPO, "configs", "attention_decode.yaml")
AMD = ("gfx942", "gfx950")
OBJDUMP = "/usr/bin/llvm-objdump-22"


def census(pack_dir):
    """(counts, problems): what the folder holds and everything that does not add up."""
    problems = []
    kdps = glob.glob(os.path.join(pack_dir, "*.kdp.json"))
    if len(kdps) != 1:
        return {}, [f"expected one KDP, found {len(kdps)}"]
    docs = {}
    for path in glob.glob(os.path.join(pack_dir, "*.json")):
        with open(path, encoding="utf-8") as f:
            docs[os.path.basename(path)] = json.load(f)
    by_id = {d["id"]: name for name, d in docs.items()}
    kdp = docs[os.path.basename(kdps[0])]
    used = {os.path.basename(kdps[0])}
    for ref in [kdp["engine"], kdp["dispatch"]] + kdp["matchers"]:
        if ref not in by_id:
            problems.append(f"KDP refers to missing descriptor {ref}")
        else:
            used.add(by_id[ref])
    ued = docs.get(by_id.get(kdp["engine"], ""), {})
    for ref in [ued.get("metadata")] + ued.get("graph_match", {}).get("matchers", []):
        if ref not in by_id:
            problems.append(f"UED refers to missing descriptor {ref}")
        else:
            used.add(by_id[ref])
    per_arch = {a: 0 for a in kdp["arch"]}
    objects = set()
    kernel_umds = 0
    for kd in kdp["kernelDescriptors"]:
        for ref in kd["matchers"]:
            if ref not in by_id:
                problems.append(f"kernel {kd['name']}: missing matcher {ref}")
            else:
                used.add(by_id[ref])
                kernel_umds += 1
        for arch, obj in kd["kernel_source"]["objects"].items():
            objects.add(obj["path"])
            state = code_object_state(pack_dir, obj)
            if state == "missing":
                problems.append(f"kernel {kd['name']}: {arch} code object {obj['path']} missing")
                continue
            if state == "changed":
                problems.append(f"kernel {kd['name']}: {arch} code object {obj['path']} sha256 differs")
            per_arch[arch] = per_arch.get(arch, 0) + 1
    for name in sorted(set(docs) - used):
        problems.append(f"descriptor {name} is not referenced by the pack")
    on_disk = {os.path.relpath(p, pack_dir) for p in glob.glob(os.path.join(pack_dir, "code", "*", "*"))}
    for rel in sorted(on_disk - objects):
        problems.append(f"code object {rel} is not referenced by the KDP")
    counts = {"packs": 1, "kernels": len(kdp["kernelDescriptors"]), "per_arch": per_arch,
              "graph_matchers": len(kdp["matchers"]), "kernel_matchers": kernel_umds,
              "knobs": sorted(ued.get("knobs", []))}
    return counts, problems


def static_violations(pack_dir, archs=AMD):
    """Every entry point on archs (AMD's by default) with scratch or spills, as 'kernel arch entry: ...' lines."""
    _kdp, rows = census_rows(pack_dir)
    return [spill_line(r) for r in rows if r[2] in archs and (r[6] or r[7])]


def unexpected_spills(pack_dir, archs):
    """The entry points on archs with a spill or scratch that no known spill of the family covers
    (Family.known_spills: the census prints those with their reasons), as static_violations'
    lines."""
    _kdp, rows = census_rows(pack_dir)
    return spill_lines([r for r in rows if r[2] in archs])[1]


def unexpected_amd_spills(pack_dir):
    """static_violations for the AMD archs, less the known AGPR spills of the SIMT kernels."""
    return unexpected_spills(pack_dir, AMD)


def known_spill(arch, kernel):
    """The family's known spill that names this kernel on arch."""
    return next(ks for ks in FAMILIES["attention_decode"].known_spills if ks.names(kernel, arch))


def amd_waves_per_simd(vgpr):
    """Waves per SIMD the VGPRs allow (AGPRs included): 512 per lane, allocated in 8s, at most 8."""
    return min(8, 512 // ((vgpr + 7) // 8 * 8))


def amd_occupancy_promise(pack_dir):
    """({rows: waves per SIMD} for the splits, waves per SIMD for the merges), as the comment of the
    pack's config says (configs/attention_decode.yaml: "AMD occupancy promise")."""
    config = load_kdp(pack_dir)["provenance"]["config"]
    with open(config if os.path.isabs(config) else os.path.join(REPO, config), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^# AMD occupancy promise.*?split (rows \d+: \d+(?:, rows \d+: \d+)*); merge: (\d+)$", text,
                  re.M | re.S)
    if not m:
        raise AssertionError(f"{config}: no 'AMD occupancy promise' comment")
    return {int(r): int(w) for r, w in re.findall(r"rows (\d+): (\d+)", m.group(1))}, int(m.group(2))


def amd_occupancy_problems(pack_dir):
    """AMD entry points below the config's occupancy promise (or of a row count it does not name)."""
    splits, merge = amd_occupancy_promise(pack_dir)
    out = []
    for kd in load_kdp(pack_dir)["kernelDescriptors"]:
        rows = kd["metadata"]["rows"]
        for arch, obj in sorted(kd["kernel_source"]["objects"].items()):
            if arch not in AMD:
                continue
            for entry, r in sorted(obj["resources"].items()):
                want = splits.get(rows) if entry.endswith("split") else merge
                got = amd_waves_per_simd(r["vgpr"])
                if want is None or got < want:
                    out.append(f"{kd['name']} {arch} {entry}: {got} waves per SIMD ({r['vgpr']} VGPRs), "
                               f"the config promises {want} for {rows} rows")
    return out


def code_object_version_problems(pack_dir):
    """AMD objects whose ELF header is not v5 (EI_ABIVERSION 3), or whose KDP says otherwise."""
    out = []
    for kd in load_kdp(pack_dir)["kernelDescriptors"]:
        for arch, obj in sorted(kd["kernel_source"]["objects"].items()):
            if arch not in AMD:
                continue
            with open(os.path.join(pack_dir, obj["path"]), "rb") as f:
                header = f.read(16)
            if (header[7], header[8], obj.get("code_object_version")) != (64, 3, 5):
                out.append(f"{obj['path']}: EI_OSABI {header[7]}, EI_ABIVERSION {header[8]}, "
                           f"KDP code_object_version {obj.get('code_object_version')}")
    return out


def load_kdp(pack_dir):
    with open(glob.glob(os.path.join(pack_dir, "*.kdp.json"))[0], encoding="utf-8") as f:
        return json.load(f)


_LISTINGS = {}


def amd_listing(path, arch):
    """llvm-objdump -d of one AMD code object, disassembled once per file state (path, size, mtime)
    however many tests read it."""
    st = os.stat(path)
    key = (path, arch, st.st_size, st.st_mtime_ns)
    if key not in _LISTINGS:
        _LISTINGS[key] = subprocess.run([OBJDUMP, "-d", f"--mcpu={arch}", path], check=True,
                                        capture_output=True, text=True).stdout
    return _LISTINGS[key]


def amd_objects(pack_dir):
    """(kernel descriptor, arch, object record, path) of every AMD code object of a packaged pack."""
    for kd in load_kdp(pack_dir)["kernelDescriptors"]:
        for arch, obj in sorted(kd["kernel_source"]["objects"].items()):
            if arch in AMD:
                yield kd, arch, obj, os.path.join(pack_dir, obj["path"])


def has_sm90(pack_dir):
    return any("sm_90" in kd["kernel_source"]["objects"] for kd in load_kdp(pack_dir)["kernelDescriptors"])


# Memory instructions an AMD split or merge must not use: flat_* go through the
# generic address space (an address-space check per access, and LDS and global
# share one counter), scratch_* are stack traffic the zero-scratch rule forbids.
AMD_FORBIDDEN_MEMORY = re.compile(r"^\s+((?:flat|scratch)_\w+)", re.MULTILINE)


def amd_memory_problems(listing, where):
    """'where: N flat/scratch instruction(s) (first: X)' for a disassembly listing, or []."""
    found = AMD_FORBIDDEN_MEMORY.findall(listing)
    return [f"{where}: {len(found)} flat/scratch instruction(s) (first: {found[0]})"] if found else []


# The share of a split loop's math that must overlap a whole chunk's loads: at least half
# (73-100% in the build of 2026-12-07, the 1-row kernels included since decision 0042; 0% before
# issue 26).
MIN_PIPELINE_SHARE = 0.5


def unexpected_sm90_spills(pack_dir):
    """static_violations for sm_90, less the known spills (the head-dim-256 rings, the paged
    register pipeline, Falcon-7B's row-wave kernel)."""
    return unexpected_spills(pack_dir, ("sm_90",))


@unittest.skipUnless(os.path.isdir(PACK), f"no built pack at {PACK} (run the build first)")
class BuiltPackTest(unittest.TestCase):
    def setUp(self):
        self.pack = load_pack(CONFIG)

    def test_census_matches_the_config(self):
        counts, problems = census(PACK)
        self.assertEqual(problems, [])
        n = len(self.pack.instances)
        self.assertEqual(counts["kernels"], n)
        self.assertEqual(counts["graph_matchers"], 1)
        self.assertEqual(counts["kernel_matchers"], n)
        self.assertEqual(counts["knobs"], ["max_splits", "row_waves", "tokens_per_wave", "waves"])
        kdp_archs = set(counts["per_arch"])
        self.assertTrue({"gfx942", "gfx950"} <= kdp_archs <= {"gfx942", "gfx950", "sm_90"})
        # every instance on each of its own archs (a variant's `archs` may narrow the pack's)
        self.assertEqual(counts["per_arch"], {a: sum(a in i.archs for i in self.pack.instances) for a in kdp_archs})

    def test_amd_code_objects_have_no_scratch_and_no_spill(self):
        # Issue 22: zero spills on the AMD archs, AGPR parking included (decision 0044).
        self.assertEqual(static_violations(PACK), [])
        self.assertEqual(unexpected_amd_spills(PACK), [])

    def test_amd_occupancy_is_what_the_config_promises(self):
        splits, merge = amd_occupancy_promise(PACK)
        self.assertEqual((splits, merge), ({1: 3, 4: 2, 8: 2, 16: 2, 32: 2}, 4))  # the comment as written
        self.assertEqual(amd_occupancy_problems(PACK), [])

    def test_an_amd_kernel_below_the_occupancy_promise_is_detected(self):
        four, eight = "attention_decode_bf16_d128_g4_sq1_contig_w4t16_tc", "attention_decode_bf16_d128_g8_sq1_contig_w4t16_tc"

        def mutate(kdp):
            by_name = {kd["name"]: kd for kd in kdp["kernelDescriptors"]}
            by_name[four]["kernel_source"]["objects"]["gfx942"]["resources"]["balanced_split"]["vgpr"] = 257
            by_name[eight]["kernel_source"]["objects"]["gfx950"]["resources"]["merge"]["vgpr"] = 129
            by_name[eight]["kernel_source"]["objects"]["gfx950"]["resources"]["split"]["vgpr"] = 256  # still 2 waves
            by_name[eight]["kernel_source"]["objects"]["gfx942"]["resources"]["split"]["vgpr"] = 257

        with tempfile.TemporaryDirectory() as tmp:
            dst = self._with_kdp(tmp, mutate)
            self.assertEqual(amd_occupancy_problems(dst), [
                f"{four} gfx942 balanced_split: 1 waves per SIMD (257 VGPRs), the config promises 2 for 4 rows",
                f"{eight} gfx942 split: 1 waves per SIMD (257 VGPRs), the config promises 2 for 8 rows",
                f"{eight} gfx950 merge: 3 waves per SIMD (129 VGPRs), the config promises 4 for 8 rows"])

    def test_amd_code_objects_are_v5_as_the_kdp_says(self):
        self.assertEqual(code_object_version_problems(PACK), [])

    @unittest.skipUnless(os.access(OBJDUMP, os.X_OK), f"{OBJDUMP} not installed")
    def test_amd_code_objects_use_no_flat_or_scratch_memory_instructions(self):
        problems, seen = [], 0
        for path in sorted(glob.glob(os.path.join(PACK, "code", "gfx9*", "*.co"))):
            listing = amd_listing(path, os.path.basename(os.path.dirname(path)))
            self.assertIn("global_load_dwordx4", listing, path)  # the listing is real ISA
            problems += amd_memory_problems(listing, os.path.relpath(path, PACK))
            seen += 1
        self.assertGreater(seen, 0, "no AMD code objects in the built pack")
        self.assertEqual(problems, [])

    @unittest.skipUnless(os.access(OBJDUMP, os.X_OK), f"{OBJDUMP} not installed")
    def test_amd_split_loops_keep_a_chunk_in_flight(self):
        # Issue 26: each split's token loop computes on one chunk while the next
        # chunk's K and V loads (2 x tokens_per_wave / tokens per load) are in flight.
        by_name = {inst.name: inst for inst in self.pack.instances}
        shares, problems = [], []
        for kd, arch, _obj, path in amd_objects(PACK):
            inst = by_name[kd["name"]]
            listing = amd_listing(path, arch)
            chunk = 2 * inst.tokens_per_wave // inst.tokens_per_load(ARCHS[arch])
            for entry in ("split", "balanced_split"):  # the same split loop, in both
                share, valu = loop_pipeline(split_body(listing, kd["kernel_source"]["symbols"][entry]), chunk)
                shares.append(share)
                if share < MIN_PIPELINE_SHARE or valu == 0:
                    problems.append(f"{kd['name']} {arch} {entry}: {share:.0%} of {valu} loop VALU "
                                    f"instructions with {chunk} loads in flight")
        self.assertGreater(len(shares), 0)
        print(f"\n{len(shares)} AMD splits: {min(shares):.0%}..{max(shares):.0%} of the loop's math with a "
              "chunk in flight", end=" ")
        self.assertEqual(problems, [])

    @unittest.skipUnless(os.access(OBJDUMP, os.X_OK), f"{OBJDUMP} not installed")
    def test_amd_matrix_core_kernels_use_mfma_and_no_other_does(self):
        # Issue 26: the splits the generator says run the matrix-core path (uses_mfma: math auto,
        # bf16 or fp16, head dim 64 or 128, at least 4 rows, 16-token tiles) issue v_mfma, both entry
        # points, on gfx942 and gfx950; every other AMD entry point issues none (the MFMA counts of
        # amd_register_moves, what the packaging reads too).
        by_name = {inst.name: inst for inst in self.pack.instances}
        problems, counts = [], {True: 0, False: 0}
        for kd, arch, _obj, path in amd_objects(PACK):
            inst = by_name[kd["name"]]
            moves = amd_register_moves(path, OBJDUMP, arch)
            for entry, symbol in kd["kernel_source"]["symbols"].items():
                want = inst.uses_mfma(ARCHS[arch]) and entry in ("split", "balanced_split")
                mfma = moves[symbol][1]
                counts[want] += 1
                if (mfma > 0) != want:
                    problems.append(f"{kd['name']} {arch} {entry}: {mfma} MFMA instructions (expected "
                                    f"{'some' if want else 'none'})")
        print(f"\n{counts[True]} AMD splits on the matrix cores, {counts[False]} entry points without", end=" ")
        self.assertGreater(counts[True], 0, "no AMD kernel takes the matrix-core path")
        self.assertEqual(problems, [])

    @unittest.skipUnless(os.access(OBJDUMP, os.X_OK), f"{OBJDUMP} not installed")
    def test_a_loop_that_waits_for_each_load_is_detected(self):
        kd = next(k for k in load_kdp(PACK)["kernelDescriptors"] if k["name"] == "attention_decode_bf16_d128_g4_sq1_contig_w4t16_tc")
        arch = next(a for a in sorted(kd["kernel_source"]["objects"]) if a in AMD)
        inst = next(i for i in self.pack.instances if i.name == kd["name"])
        listing = amd_listing(os.path.join(PACK, kd["kernel_source"]["objects"][arch]["path"]), arch)
        body = split_body(listing, kd["kernel_source"]["symbols"]["split"])
        chunk = 2 * inst.tokens_per_wave // inst.tokens_per_load(ARCHS[arch])
        self.assertGreaterEqual(loop_pipeline(body, chunk)[0], MIN_PIPELINE_SHARE)
        # the seed kernel's old schedule: every load waited for right after it is issued
        serial = re.sub(r"(global_load_dwordx4[^\n]*//\s*([0-9A-Fa-f]+):[^\n]*\n)",
                        r"\1\ts_waitcnt vmcnt(0) // \2:\n", body)
        self.assertNotEqual(serial, body)
        self.assertLess(loop_pipeline(serial, chunk)[0], MIN_PIPELINE_SHARE)
        # and no loop at all
        self.assertEqual(loop_pipeline("", chunk), (0.0, 0))

    @unittest.skipUnless(os.access(OBJDUMP, os.X_OK), f"{OBJDUMP} not installed")
    def test_agpr_spills_are_what_the_disassembly_shows(self):
        # Read apart from the packaging step: a split whose disassembly moves values
        # through AGPRs without any MFMA records each AGPR it uses as a spill. None does
        # since decision 0044; the matrix-core splits' MFMAs, counted by the same reading,
        # show that it reads real functions.
        parked_seen, mfma_seen = 0, 0
        for kd, arch, obj, path in amd_objects(PACK):
            listing = amd_listing(path, arch)
            moves = amd_register_moves(path, OBJDUMP, arch)
            for entry, symbol in kd["kernel_source"]["symbols"].items():
                r = obj["resources"][entry]
                body = split_body(listing, symbol)
                parked = "v_accvgpr_write_b32" in body and "v_mfma" not in body
                with self.subTest(kernel=kd["name"], arch=arch, entry=entry):
                    self.assertEqual(moves[symbol][0] > 0 and moves[symbol][1] == 0, parked)
                    self.assertEqual(r["agpr_spill"], r["agpr"] if parked else 0)
                    self.assertLessEqual(r["agpr"], r["vgpr"])  # .vgpr_count holds the AGPRs
                    parked_seen += parked
                    mfma_seen += moves[symbol][1] > 0
        self.assertEqual(parked_seen, 0, "an AMD kernel parks values in AGPRs (issue 22: zero spills)")
        self.assertGreater(mfma_seen, 0, "no AMD entry point has an MFMA: the reading is broken")

    def test_sm90_spills_are_known_ones(self):
        if not has_sm90(PACK):
            self.skipTest("no sm_90 code objects in this build")
        self.assertEqual(unexpected_sm90_spills(PACK), [])

    def _copy(self, tmp):
        dst = os.path.join(tmp, "pack")
        shutil.copytree(PACK, dst)
        return dst

    def test_the_merges_lds_is_the_generators(self):
        # The generator's size of MergeShared (what it judges a kernel's fit by) is the compiler's.
        # On the AMD archs exactly. On sm_90 each kernel's .nv.shared section starts with the block's
        # reserved shared memory (1 KiB, __nv_reservedSMEM_offset_0_alias; archs.NVIDIA_SM
        # block_reserved_shared), and its size is rounded to the section's alignment: 16 bytes in the
        # objects whose ring is dynamic (the 16-aligned extern array), 4 in the others.
        from ingot.archs import NVIDIA_SM
        from ingot.families.attention_decode import merge_lds_bytes
        reserved = NVIDIA_SM["block_reserved_shared"][0]
        seen = set()
        for kd in load_kdp(PACK)["kernelDescriptors"]:
            for arch, obj in kd["kernel_source"]["objects"].items():
                want = merge_lds_bytes(ARCHS[arch])
                if ARCHS[arch].vendor != "amd":
                    align = 16 if obj["dynamic_lds"]["split"] else 4
                    want = (reserved + want + align - 1) // align * align
                for entry in ("merge", "balanced_merge"):
                    self.assertEqual(obj["resources"][entry]["lds"], want, f"{kd['name']} {arch} {entry}")
                seen.add(arch)
        self.assertTrue({"gfx942", "gfx950"} <= seen)

    def test_dynamic_lds_is_the_generators_and_fits_the_arch(self):
        # Each object declares the dynamic LDS every entry point is launched with: the
        # instance's for the split (its ring, where past the static limit), none for the merge.
        by_name = {inst.name: inst for inst in self.pack.instances}
        dynamic = []
        for kd in load_kdp(PACK)["kernelDescriptors"]:
            for arch, obj in kd["kernel_source"]["objects"].items():
                want = by_name[kd["name"]].dynamic_lds(ARCHS[arch])
                self.assertEqual(obj["dynamic_lds"], {"split": want, "merge": 0, "balanced_split": want,
                                                      "balanced_merge": 0}, f"{kd['name']} {arch}")
                static = obj["resources"]["split"]["lds"]
                self.assertLessEqual(static + want, ARCHS[arch].max_dynamic_lds_bytes, f"{kd['name']} {arch}")
                if want:
                    dynamic.append((kd["name"], arch, want))
        if has_sm90(PACK):  # the rings past 48 KiB: as many as the config makes, all on sm_90
            want = [(i.name, "sm_90", i.dynamic_lds(ARCHS["sm_90"])) for i in self.pack.instances
                    if "sm_90" in i.archs and i.dynamic_lds(ARCHS["sm_90"])]
            self.assertGreater(len(want), 0)
            self.assertEqual(sorted(dynamic), sorted(want))

    def test_dynamic_rings_start_on_128_byte_lines(self):
        # A dynamic ring starts where the entry's static shared memory ends (on sm_90 after the
        # block's reserved 1 KiB). Off a 128-byte line, a wave's cp.async copies asked L2 for every
        # sector twice and the balanced split ran 14-22% slower than the uniform one (decision 0037).
        seen = 0
        for kd in load_kdp(PACK)["kernelDescriptors"]:
            for arch, obj in kd["kernel_source"]["objects"].items():
                for entry in ("split", "balanced_split"):
                    if obj["dynamic_lds"][entry]:
                        self.assertEqual(obj["resources"][entry]["lds"] % 128, 0, f"{kd['name']} {arch} {entry}")
                        seen += 1
        if has_sm90(PACK):
            self.assertGreater(seen, 0)

    def test_a_removed_descriptor_is_detected(self):
        with tempfile.TemporaryDirectory() as tmp:
            dst = self._copy(tmp)
            victim = sorted(glob.glob(os.path.join(dst, "*_tc.umd.json")))[0]
            os.unlink(victim)
            _, problems = census(dst)
            name = os.path.basename(victim)[:-len(".umd.json")]
            self.assertEqual(len(problems), 1, problems)
            self.assertIn(f"kernel {name}: missing matcher", problems[0])

    def test_an_extra_descriptor_and_an_extra_code_object_are_detected(self):
        with tempfile.TemporaryDirectory() as tmp:
            dst = self._copy(tmp)
            src = sorted(glob.glob(os.path.join(dst, "*_tc.umd.json")))[0]
            with open(src, encoding="utf-8") as f:
                extra = json.load(f)
            extra["id"] = "00000000-0000-5000-8000-000000000000"
            with open(os.path.join(dst, "stray.umd.json"), "w", encoding="utf-8") as f:
                json.dump(extra, f)
            shutil.copyfile(glob.glob(os.path.join(dst, "code", "gfx942", "*"))[0],
                            os.path.join(dst, "code", "gfx942", "stray.gfx942.co"))
            _, problems = census(dst)
            self.assertEqual(problems, ["descriptor stray.umd.json is not referenced by the pack",
                                        "code object code/gfx942/stray.gfx942.co is not referenced by the KDP"])

    def test_a_changed_code_object_is_detected(self):
        with tempfile.TemporaryDirectory() as tmp:
            dst = self._copy(tmp)
            victim = sorted(glob.glob(os.path.join(dst, "code", "gfx950", "*")))[0]
            data = bytearray(open(victim, "rb").read())
            data[len(data) // 2] ^= 0x01
            open(victim, "wb").write(bytes(data))
            _, problems = census(dst)
            self.assertEqual(len(problems), 1, problems)
            self.assertIn("sha256 differs", problems[0])

    def _with_kdp(self, tmp, mutate):
        """A copy of the pack whose KDP went through mutate(kdp); returns its folder."""
        dst = self._copy(tmp)
        kdp_path = glob.glob(os.path.join(dst, "*.kdp.json"))[0]
        with open(kdp_path, encoding="utf-8") as f:
            kdp = json.load(f)
        mutate(kdp)
        with open(kdp_path, "w", encoding="utf-8") as f:
            json.dump(kdp, f)
        return dst

    def test_scratch_or_spills_in_an_amd_object_are_detected(self):
        victim = next(i for i, k in enumerate(load_kdp(PACK)["kernelDescriptors"])
                      if {"gfx942", "gfx950"} <= set(k["kernel_source"]["objects"])
                      and k["name"].endswith("_d128_g4_sq1_contig_w4t16_tc"))

        def mutate(kdp):
            objs = kdp["kernelDescriptors"][victim]["kernel_source"]["objects"]
            objs["gfx950"]["resources"]["merge"]["scratch"] = 16
            objs["gfx942"]["resources"]["split"]["spill"] = 2

        with tempfile.TemporaryDirectory() as tmp:
            dst = self._with_kdp(tmp, mutate)
            name = load_kdp(dst)["kernelDescriptors"][victim]["name"]
            before = set(static_violations(PACK))  # the known AGPR spills
            self.assertEqual([line for line in static_violations(dst) if line not in before], [
                f"{name} gfx942 split: scratch 0, spill 2 (0 in AGPRs)",
                f"{name} gfx950 merge: scratch 16, spill 0 (0 in AGPRs)"])

    @unittest.skipUnless(os.access(OBJDUMP, os.X_OK), f"{OBJDUMP} not installed")
    def test_flat_or_scratch_memory_instructions_are_detected(self):
        # A real listing passes; the same with a flat load and a scratch store spliced
        # into its split (as a generic pointer or a stack spill would put there) does not.
        path = sorted(glob.glob(os.path.join(PACK, "code", "gfx942", "*.co")))[0]
        listing = amd_listing(path, "gfx942")
        self.assertEqual(amd_memory_problems(listing, "x.co"), [])
        first = listing.index("global_load_dwordx4")
        bad = (listing[:first] + "flat_load_dwordx4 v[6:9], v[6:7]\n\t" + listing[first:]
               + "\tscratch_store_dword off, v0, s0\n")
        self.assertEqual(amd_memory_problems(bad, "x.co"), ["x.co: 2 flat/scratch instruction(s) (first: flat_load_dwordx4)"])

    def test_amd_spills_are_detected(self):
        # No AMD kernel is known to spill (the family's known_spills name sm_90 only), so any AGPR
        # parking or scratch is reported: the seed kernel's and the head-dim-256 group-8 row-wave
        # kernel's (which parked 19-30 AGPRs as one 8-row wave until decision 0044).
        seed, d256 = "attention_decode_bf16_d128_g4_sq1_contig_w4t16_tc", "attention_decode_fp16_d256_g8_sq1_paged_w2t8rw"
        self.assertFalse([ks for ks in FAMILIES["attention_decode"].known_spills
                          if {"gfx942", "gfx950"} & set(ks.archs)])

        def mutate(kdp):
            by_name = {kd["name"]: kd for kd in kdp["kernelDescriptors"]}
            res = by_name[seed]["kernel_source"]["objects"]["gfx942"]["resources"]["split"]
            res["agpr_spill"], res["spill"] = 4, 4
            res = by_name[d256]["kernel_source"]["objects"]["gfx950"]["resources"]["balanced_split"]
            res["agpr_spill"] = res["spill"] = 30
            res = by_name[d256]["kernel_source"]["objects"]["gfx942"]["resources"]["split"]
            res["scratch"] = 16  # a spill to memory

        with tempfile.TemporaryDirectory() as tmp:
            dst = self._with_kdp(tmp, mutate)
            self.assertEqual(unexpected_amd_spills(dst), [
                f"{seed} gfx942 split: scratch 0, spill 4 (4 in AGPRs)",
                f"{d256} gfx942 split: scratch 16, spill 0 (0 in AGPRs)",
                f"{d256} gfx950 balanced_split: scratch 0, spill 30 (30 in AGPRs)"])
        self.assertEqual(unexpected_amd_spills(PACK), [])

    def test_another_code_object_version_is_detected(self):
        with tempfile.TemporaryDirectory() as tmp:
            dst = self._copy(tmp)
            kdp = load_kdp(dst)
            objs = [kd["kernel_source"]["objects"] for kd in kdp["kernelDescriptors"]]
            v6 = objs[0]["gfx942"]["path"]
            with open(os.path.join(dst, v6), "r+b") as f:
                f.seek(8)
                f.write(bytes([4]))
            claim = objs[1]["gfx950"]["path"]
            objs[1]["gfx950"]["code_object_version"] = 6
            with open(glob.glob(os.path.join(dst, "*.kdp.json"))[0], "w", encoding="utf-8") as f:
                json.dump(kdp, f)
            self.assertEqual(code_object_version_problems(dst), [
                f"{v6}: EI_OSABI 64, EI_ABIVERSION 4, KDP code_object_version 5",
                f"{claim}: EI_OSABI 64, EI_ABIVERSION 3, KDP code_object_version 6"])

    def test_new_or_larger_sm90_spills_are_detected(self):
        if not has_sm90(PACK):
            self.skipTest("no sm_90 code objects in this build")
        seed, ring = "attention_decode_bf16_d128_g4_sq1_contig_w4t16_tc", "attention_decode_bf16_d256_g4_sq1_paged_w4t16_tcs3"
        big = known_spill("sm_90", ring).max_bytes + 8

        def mutate(kdp):
            by_name = {kd["name"]: kd for kd in kdp["kernelDescriptors"]}
            by_name[seed]["kernel_source"]["objects"]["sm_90"]["resources"]["split"]["spill"] = 8
            by_name[ring]["kernel_source"]["objects"]["sm_90"]["resources"]["split"]["spill"] = big

        with tempfile.TemporaryDirectory() as tmp:
            dst = self._with_kdp(tmp, mutate)
            scratch = {kd["name"]: kd for kd in load_kdp(dst)["kernelDescriptors"]}[ring][
                "kernel_source"]["objects"]["sm_90"]["resources"]["split"]["scratch"]
            self.assertEqual(unexpected_sm90_spills(dst), [
                f"{seed} sm_90 split: scratch 0, spill 8",
                f"{ring} sm_90 split: scratch {scratch}, spill {big}"])
            # The census names them, and the known spills with their reasons.
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(print_census([dst]), 0)
            new = [ln for ln in out.getvalue().splitlines() if ln.startswith("  NEW spill")]
            self.assertEqual([ln.split("): ", 1)[1] for ln in new], unexpected_sm90_spills(dst))
            why = known_spill("sm_90", "attention_decode_bf16_d128_g4_sq1_paged_w4t16_tc").why
            self.assertIn(why, out.getvalue())


if __name__ == "__main__":
    unittest.main()
