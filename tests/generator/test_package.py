"""The packaging step's pure-Python parts: the ELF reader refuses malformed
files with a message that says what is wrong; the signature check refuses a
code object whose kernarg layout disagrees with the UDD, naming the argument;
package_pack assembles a pack atomically. Where clang-22 and llvm-readelf-22
are installed, one generated gfx942 kernel is compiled for real and read back."""

import hashlib
import json
import os
import re
import shlex
import struct
import subprocess
import tempfile
import unittest

from gen_support import (MINIMAL_CONFIG, REPO, fake_code_object_reader, package_with_fake_objects, run_cli,
                         run_package, snapshot, write_fake_objects)

from ingot.archs import ARCHS
from ingot.families.attention_decode import ENTRY_POINTS
from ingot.codeobj import CodeObjectError, Elf, amd_code_object_version, amd_register_moves, read_amd
from ingot.package import PackageError, _check_signature

GENERATED = os.path.join(REPO, "generated", "attention_decode")
CLANG, READELF, OBJDUMP = "/usr/bin/clang-22", "/usr/bin/llvm-readelf-22", "/usr/bin/llvm-objdump-22"


def gfx942_kernels():
    """The authored kernels with a gfx942 source, in the KDP's order."""
    with open(os.path.join(GENERATED, "descriptors", "attention_decode.kdp.json"), encoding="utf-8") as f:
        return [k["name"] for k in json.load(f)["kernelDescriptors"] if "gfx942" in k["kernel_source"]["sources"]]


def load_udd():
    with open(os.path.join(GENERATED, "descriptors", "attention_decode.udd.json"), encoding="utf-8") as f:
        return json.load(f)


def tiny_elf(shstrtab=b"\0.shstrtab\0.text\0", extra_sections=()):
    """A well-formed ELF64 LE with a null section, .shstrtab, and extra_sections
    ((name offset, type, offset, size), ...); the section table follows the data."""
    data = shstrtab.ljust(32, b"\0")
    shoff = 64 + len(data)
    sections = [bytes(64), struct.pack("<IIQQQQIIQQ", 1, 3, 0, 0, 64, len(shstrtab), 0, 0, 1, 0)]
    for name, typ, off, size in extra_sections:
        sections.append(struct.pack("<IIQQQQIIQQ", name, typ, 0, 0, off, size, 0, 0, 1, 0))
    header = bytearray(64)
    header[0:7] = b"\x7fELF\x02\x01\x01"
    struct.pack_into("<HHI", header, 16, 1, 224, 1)  # ET_REL, EM_AMDGPU
    struct.pack_into("<Q", header, 0x28, shoff)
    struct.pack_into("<HHHHHH", header, 0x34, 64, 0, 0, 64, len(sections), 1)
    return bytes(header) + data + b"".join(sections)


def patch(data, offset, fmt, *values):
    b = bytearray(data)
    struct.pack_into(fmt, b, offset, *values)
    return bytes(b)


class ElfReaderTest(unittest.TestCase):

    def test_accepts_a_well_formed_elf(self):
        elf = Elf(tiny_elf(extra_sections=[(11, 1, 64, 4)]), "ok.co")
        self.assertEqual([s["name"] for s in elf.sections], ["", ".shstrtab", ".text"])
        self.assertEqual(elf.contents(elf.section(".text")), b"\0.sh")
        self.assertEqual(elf.symbols(), [])

    def assert_refused(self, data, message):
        with self.assertRaises(CodeObjectError) as cm:
            Elf(data, "k.gfx942.co")
        self.assertEqual(str(cm.exception), message)

    def test_refuses_what_is_not_an_elf64_le(self):
        self.assert_refused(b"", "k.gfx942.co: not a 64-bit little-endian ELF file")
        self.assert_refused(b"MZ\x90\x00" + bytes(60), "k.gfx942.co: not a 64-bit little-endian ELF file")
        self.assert_refused(patch(tiny_elf(), 4, "B", 1), "k.gfx942.co: not a 64-bit little-endian ELF file")
        self.assert_refused(patch(tiny_elf(), 5, "B", 2), "k.gfx942.co: not a 64-bit little-endian ELF file")

    def test_refuses_a_truncated_header(self):
        self.assert_refused(tiny_elf()[:40], "k.gfx942.co: truncated ELF header (40 bytes, an ELF64 header has 64)")

    def test_refuses_a_section_table_past_the_end(self):
        data = tiny_elf()
        self.assert_refused(data[:-1], "k.gfx942.co: section table past the end of the file")
        self.assert_refused(patch(data, 0x28, "<Q", 1 << 40), "k.gfx942.co: section table past the end of the file")

    def test_refuses_a_missing_or_malformed_section_table(self):
        data = tiny_elf()
        self.assert_refused(patch(data, 0x3C, "<H", 0),
                            "k.gfx942.co: no section table (a code object needs its symbols and notes)")
        self.assert_refused(patch(data, 0x3E, "<H", 2),
                            "k.gfx942.co: malformed section table (2 sections of 64 bytes, names in section 2)")
        self.assert_refused(patch(data, 0x3A, "<H", 16),
                            "k.gfx942.co: malformed section table (2 sections of 16 bytes, names in section 1)")

    def test_refuses_a_section_past_the_end(self):
        self.assert_refused(tiny_elf(extra_sections=[(11, 1, 64, 1 << 20)]),
                            "k.gfx942.co: section 2 (1048576 bytes at 64) past the end of the file")

    def test_nobits_sections_need_no_file_bytes(self):
        elf = Elf(tiny_elf(extra_sections=[(11, 8, 64, 1 << 20)]), "k.gfx942.co")  # SHT_NOBITS (.bss, LDS)
        self.assertEqual(elf.contents(elf.section(".text")), b"")

    def test_refuses_a_name_outside_the_string_table(self):
        self.assert_refused(tiny_elf(extra_sections=[(200, 1, 64, 4)]),
                            "k.gfx942.co: string at offset 200 lies outside its string table")
        # A name that runs to the end of the table without its terminating NUL.
        self.assert_refused(tiny_elf(shstrtab=b"\0.shstrtab\0.text", extra_sections=[(11, 1, 64, 4)]),
                            "k.gfx942.co: string at offset 11 lies outside its string table")

    def test_read_amd_names_a_missing_readelf(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "k.gfx942.co")
            with open(path, "wb") as f:
                f.write(tiny_elf())
            with self.assertRaises(CodeObjectError) as cm:
                read_amd(path, os.path.join(tmp, "no-such-readelf"), OBJDUMP, "gfx942")
            self.assertEqual(str(cm.exception), f"{os.path.join(tmp, 'no-such-readelf')} not found: "
                                                "install package llvm-22")

    @unittest.skipUnless(os.access(READELF, os.X_OK), f"{READELF} not installed")
    def test_read_amd_refuses_an_elf_without_amdgpu_metadata(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "k.gfx942.co")
            with open(path, "wb") as f:
                f.write(tiny_elf())
            with self.assertRaises(CodeObjectError) as cm:
                read_amd(path, READELF, OBJDUMP, "gfx942")
            self.assertEqual(str(cm.exception), f"{path}: no AMDGPU metadata note")
            with open(path, "wb") as f:
                f.write(b"not an object")
            with self.assertRaisesRegex(CodeObjectError, rf"^{re.escape(READELF)} --notes {re.escape(path)} failed: "):
                read_amd(path, READELF, OBJDUMP, "gfx942")


class CodeObjectVersionTest(unittest.TestCase):
    """EI_OSABI and EI_ABIVERSION: the version every AMD object is packaged with."""

    def test_reads_v4_v5_and_v6(self):
        for abi, version in ((2, 4), (3, 5), (4, 6)):
            data = patch(patch(tiny_elf(), 7, "B", 64), 8, "B", abi)
            self.assertEqual(amd_code_object_version(data, "k.gfx942.co"), version)

    def test_refuses_another_os_abi_or_an_unknown_abi_version(self):
        with self.assertRaises(CodeObjectError) as cm:
            amd_code_object_version(patch(tiny_elf(), 8, "B", 3), "k.gfx942.co")
        self.assertEqual(str(cm.exception), "k.gfx942.co: EI_OSABI 0, not 64 (AMDGPU HSA)")
        for abi in (0, 1, 5, 255):
            with self.subTest(abi=abi), self.assertRaises(CodeObjectError) as cm:
                amd_code_object_version(patch(patch(tiny_elf(), 7, "B", 64), 8, "B", abi), "k.gfx942.co")
            self.assertEqual(str(cm.exception), f"k.gfx942.co: EI_ABIVERSION {abi} is no known code object "
                                                "version (known: 2 (v4), 3 (v5), 4 (v6))")
        with self.assertRaises(CodeObjectError) as cm:
            amd_code_object_version(b"\x7fELF\x02\x01", "k.gfx942.co")
        self.assertEqual(str(cm.exception), "k.gfx942.co: not an ELF file")


class AgprMovesTest(unittest.TestCase):
    """AGPR moves and MFMA instructions per function, as a disassembly lists them
    (a stand-in objdump prints a fixed listing; the built pack's objects are
    checked against the real one in test_built_pack)."""

    LISTING = """
k.co:\tfile format elf64-amdgpu

Disassembly of section .text:

0000000000001000 <spills_split>:
\tv_accvgpr_write_b32 a3, v2                                // 000000001000: D3D94003 18000102
\tv_fma_f32 v1, v2, v3, v4                                  // 000000001008: D1CB0001 04120702
\tv_accvgpr_read_b32 v2, a3                                 // 000000001010: D3D84002 18000103
\tv_accvgpr_mov_b32 a4, a3                                  // 000000001018: D3D94004 18000103

0000000000002000 <mfma_split>:
\tv_accvgpr_write_b32 a0, 0                                 // 000000002000: D3D94000 18000080
\tv_mfma_f32_16x16x16_bf16 a[0:3], v[0:1], v[2:3], a[0:3]  // 000000002008: D3E10000 04020500
\tv_smfmac_f32_16x16x32_bf16 v[0:3], v[4:5], v[6:9], v10    // 000000002010: D3E20000 04020500

0000000000003000 <plain_merge>:
\ts_endpgm                                                  // 000000003000: BF810000
"""

    def test_counts_per_function(self):
        with tempfile.TemporaryDirectory() as tmp:
            tool = os.path.join(tmp, "objdump")
            listing = os.path.join(tmp, "listing.txt")
            with open(listing, "w", encoding="utf-8") as f:
                f.write(self.LISTING)
            with open(tool, "w", encoding="utf-8") as f:
                f.write(f"#!/bin/sh\ntest \"$1 $2\" = \"-d --mcpu=gfx950\" || exit 3\ncat {shlex.quote(listing)}\n")
            os.chmod(tool, 0o755)
            self.assertEqual(amd_register_moves("k.co", tool, "gfx950"),
                             {"spills_split": (3, 0), "mfma_split": (1, 2), "plain_merge": (0, 0)})
            with self.assertRaisesRegex(CodeObjectError, rf"^{re.escape(tool)} -d k.co failed"):
                amd_register_moves("k.co", tool, "gfx942")
            with self.assertRaises(CodeObjectError) as cm:
                amd_register_moves("k.co", os.path.join(tmp, "none"), "gfx942")
            self.assertEqual(str(cm.exception), f"{os.path.join(tmp, 'none')} not found: install package llvm-22")


class SignatureCheckTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.udd = load_udd()

    def got(self, vendor="amd"):
        sig = [{"kind": a["kind"], "offset": a["offset"], "size": a["size"]} for a in self.udd["signature"]]
        if vendor == "nvidia":
            sig = [{"offset": a["offset"], "size": a["size"]} for a in sig]
        return {"signature": sig, "kernarg_size": self.udd["kernarg_size"]}

    def refuse(self, got, vendor="amd"):
        with self.assertRaises(PackageError) as cm:
            _check_signature("k.gfx942.co", "k_split", got, self.udd, vendor)
        return str(cm.exception)

    def test_accepts_the_udd_signature(self):
        self.assertIsNone(_check_signature("k.gfx942.co", "k_split", self.got(), self.udd, "amd"))
        self.assertIsNone(_check_signature("k.sm_90.cubin", "k_split", self.got("nvidia"), self.udd, "nvidia"))

    def test_refuses_a_wrong_offset_naming_the_argument(self):
        got = self.got()
        got["signature"][27]["offset"] = 188
        self.assertEqual(self.refuse(got), "k.gfx942.co: k_split: argument 'scale' is by_value at offset 188 "
                                           "size 4, the UDD says by_value at offset 192 size 4")

    def test_refuses_a_wrong_size_naming_the_argument(self):
        got = self.got()
        got["signature"][21]["size"] = 8
        self.assertEqual(self.refuse(got), "k.gfx942.co: k_split: argument 'capacity' is by_value at offset 168 "
                                           "size 8, the UDD says by_value at offset 168 size 4")

    def test_refuses_a_wrong_kind_on_amd(self):
        got = self.got()
        got["signature"][6]["kind"] = "by_value"
        self.assertEqual(self.refuse(got), "k.gfx942.co: k_split: argument 'page_table' is by_value at offset 48 "
                                           "size 8, the UDD says global_buffer at offset 48 size 8")

    def test_nvidia_has_no_kinds_but_offsets_still_count(self):
        got = self.got("nvidia")
        got["signature"][8]["offset"] = 60
        self.assertEqual(self.refuse(got, "nvidia"), "k.gfx942.co: k_split: argument 'q_stride_b' is at offset 60 "
                                                     "size 8, the UDD says by_value at offset 64 size 8")

    def test_refuses_a_different_argument_count_or_kernarg_size(self):
        n, size = len(self.udd["signature"]), self.udd["kernarg_size"]
        got = self.got()
        got["signature"].pop()
        self.assertEqual(self.refuse(got), f"k.gfx942.co: k_split: {n - 1} kernel arguments, the UDD says {n}")
        got = self.got()
        got["kernarg_size"] = size + 4
        self.assertEqual(self.refuse(got), f"k.gfx942.co: k_split: kernarg size {size + 4} bytes, the UDD says {size}")


class PackagePackTest(unittest.TestCase):
    """package_pack over the committed generated/ tree with fake code objects."""

    def test_packages_every_kernel_with_its_hash(self):
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, stderr = package_with_fake_objects(GENERATED, tmp, archs=["gfx942", "sm_90"])
            self.assertEqual((rc, stderr), (0, ""))
            with open(os.path.join(out, "attention_decode.kdp.json"), encoding="utf-8") as f:
                kdp = json.load(f)
            self.assertEqual(kdp["arch"], ["gfx942", "sm_90"])
            # every authored kernel with a source for one of the packaged archs, and no other
            with open(os.path.join(GENERATED, "descriptors", "attention_decode.kdp.json"), encoding="utf-8") as f:
                authored = json.load(f)["kernelDescriptors"]
            want = [k["name"] for k in authored if set(k["kernel_source"]["sources"]) & {"gfx942", "sm_90"}]
            self.assertGreater(len(want), 0)
            self.assertEqual([k["name"] for k in kdp["kernelDescriptors"]], want)
            (kd,) = [k for k in kdp["kernelDescriptors"] if k["name"] == "attention_decode_bf16_d128_g4_sq1_contig_w4t16_tc"]
            src = kd["kernel_source"]
            self.assertEqual(sorted(src), ["kind", "objects", "symbols"])
            self.assertEqual(sorted(src["objects"]), ["gfx942", "sm_90"])
            obj = src["objects"]["gfx942"]
            self.assertEqual(obj["path"], f"code/gfx942/{kd['name']}.gfx942.co")
            with open(os.path.join(out, obj["path"]), "rb") as f:
                self.assertEqual(obj["sha256"], hashlib.sha256(f.read()).hexdigest())
            self.assertEqual(obj["resources"]["split"]["vgpr"], 100)
            self.assertEqual(obj["resources"]["merge"]["vgpr"], 80)
            self.assertEqual(src["objects"]["sm_90"]["resources"]["merge"]["registers"], 108)
            # the AMD object's code object version is recorded; a cubin has none
            self.assertEqual(obj["code_object_version"], 5)
            self.assertNotIn("code_object_version", src["objects"]["sm_90"])
            # The NVIDIA signature takes its kinds from the UDD.
            self.assertEqual(src["objects"]["sm_90"]["signature"], obj["signature"])
            self.assertEqual(sorted(os.listdir(os.path.join(out, "code"))), ["gfx942", "sm_90"])
            # a UMD per packaged kernel and the graph's
            self.assertEqual(len([n for n in os.listdir(out) if n.endswith(".umd.json")]), len(want) + 1)
            # the variants built for sm_90 only (decode_long, decode_mid, decode_w8, the rings, ...):
            # their kernels carry that object alone
            sources = {k["name"]: set(k["kernel_source"]["sources"]) for k in authored}
            self.assertTrue(any(v == {"sm_90"} for v in sources.values()))
            for k in kdp["kernelDescriptors"]:  # each with the packaged archs it has sources for
                self.assertEqual(sorted(k["kernel_source"]["objects"]), sorted(sources[k["name"]] & {"gfx942", "sm_90"}),
                                 k["name"])

    def test_the_kdp_records_every_other_descriptor_by_sha256(self):
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, stderr = package_with_fake_objects(GENERATED, tmp, archs=["gfx942"])
            self.assertEqual((rc, stderr), (0, ""))
            with open(os.path.join(out, "attention_decode.kdp.json"), encoding="utf-8") as f:
                recorded = json.load(f)["descriptors"]
            files = sorted(n for n in os.listdir(out) if n.endswith(".json") and n != "attention_decode.kdp.json")
            self.assertEqual(sorted(recorded), files)  # every file, and only those: a left-out UMD is not recorded
            self.assertEqual(len(files), 3 + len(gfx942_kernels()) + 1)  # UED, KMD, UDD; the kernel UMDs and the graph UMD
            for name in files:
                with open(os.path.join(out, name), "rb") as f:
                    self.assertEqual(recorded[name], hashlib.sha256(f.read()).hexdigest(), name)

    def test_a_kernel_with_none_of_the_packaged_archs_leaves_the_pack(self):
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, stderr = package_with_fake_objects(GENERATED, tmp, archs=["gfx942"])
            self.assertEqual((rc, stderr), (0, ""))
            with open(os.path.join(out, "attention_decode.kdp.json"), encoding="utf-8") as f:
                kdp = json.load(f)
            names = [k["name"] for k in kdp["kernelDescriptors"]]
            self.assertEqual(names, gfx942_kernels())
            self.assertFalse([n for n in names if n.endswith(("_tcs2", "_w8t16_tc"))])
            umds = sorted(n for n in os.listdir(out) if n.endswith(".umd.json"))
            self.assertEqual(len(umds), len(names) + 1)  # the kernels' and the graph's
            self.assertNotIn("attention_decode_bf16_d128_g4_sq1_contig_w2t16_tcs2.umd.json", umds)
            self.assertEqual(os.listdir(os.path.join(out, "code")), ["gfx942"])

    def test_a_signature_mismatch_fails_and_keeps_the_old_pack(self):
        udd = load_udd()
        good = fake_code_object_reader(udd["entry_points"], udd["signature"])

        def bad(path, *rest):
            kernels = good(path, *rest)
            if path.endswith("attention_decode_fp16_d64_g8_sq1_paged_w4t16_tc.gfx950.co"):
                sym = "attention_decode_fp16_d64_g8_sq1_paged_w4t16_tc_merge"
                kernels[sym]["signature"] = [dict(a) for a in kernels[sym]["signature"]]
                kernels[sym]["signature"][27]["offset"] = 188
            return kernels

        with tempfile.TemporaryDirectory() as tmp:
            rc, out, stderr = package_with_fake_objects(GENERATED, tmp)
            self.assertEqual(rc, 0, stderr)
            before = snapshot(out)
            rc, out2, stderr = package_with_fake_objects(GENERATED, tmp, reader=bad)
            self.assertEqual(out2, out)
            self.assertEqual(rc, 1)
            obj = os.path.join(tmp, "objects", "gfx950", "attention_decode_fp16_d64_g8_sq1_paged_w4t16_tc.gfx950.co")
            self.assertEqual(stderr, f"ingot package: error: {obj}: attention_decode_fp16_d64_g8_sq1_paged_w4t16_tc_merge: "
                                     "argument 'scale' is by_value at offset 188 size 4, the UDD says by_value at "
                                     "offset 192 size 4\n")
            self.assertEqual(snapshot(out), before)
            self.assertEqual(sorted(os.listdir(os.path.dirname(out))), ["attention_decode"])  # no staging left

    def test_an_object_of_another_code_object_version_is_an_error(self):
        udd = load_udd()
        fake = fake_code_object_reader(udd["entry_points"], udd["signature"])

        def v6(path, *args):
            kernels = fake(path, *args)
            for k in kernels.values():
                if "code_object_version" in k:
                    k["code_object_version"] = 6
            return kernels

        with tempfile.TemporaryDirectory() as tmp:
            rc, out, stderr = package_with_fake_objects(GENERATED, tmp, archs=["gfx950"], reader=v6)
            self.assertEqual(rc, 1)
            self.assertRegex(stderr, r"^ingot package: error: .*/gfx950/attention_decode_[a-z0-9_]+\.gfx950\.co: "
                                     r"code object v6, but the arch table builds gfx950 as v5 "
                                     r"\(-mcode-object-version=5\); rebuild it\n$")
            self.assertFalse(os.path.exists(out))

    def test_an_unknown_arch_is_an_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "packs", "attention_decode")
            rc, stderr = run_package(GENERATED, os.path.join(tmp, "objects"), out, archs=["gfx90a"])
            self.assertEqual(rc, 1)
            self.assertEqual(stderr, "ingot package: error: arch(s) gfx90a not in pack attention_decode "
                                     "(it has: gfx942, gfx950, sm_90)\n")
            self.assertFalse(os.path.exists(out))

    def test_a_pack_with_no_kernel_for_the_packaged_archs_is_an_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            gen = os.path.join(tmp, "g")
            cfg = os.path.join(tmp, "minimal.yaml")
            with open(MINIMAL_CONFIG, encoding="utf-8") as f:
                text = f.read()
            with open(cfg, "w", encoding="utf-8") as f:  # its one variant for sm_90 only
                f.write(text.replace("  - name: seed\n", "  - name: seed\n    archs: [sm_90]\n", 1))
            rc, _, stderr = run_cli(["generate", "--quiet", "--out", gen, cfg])
            self.assertEqual((rc, stderr), (0, ""))
            out = os.path.join(tmp, "packs", "minimal")
            rc, stderr = run_package(os.path.join(gen, "minimal"), os.path.join(tmp, "objects"), out, archs=["gfx942"])
            self.assertEqual(rc, 1)
            self.assertEqual(stderr, "ingot package: error: pack minimal: no kernel is built for the packaged "
                                     "archs (gfx942)\n")
            self.assertFalse(os.path.exists(out))

    def test_a_missing_code_object_is_an_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            objects = os.path.join(tmp, "objects")
            write_fake_objects(GENERATED, objects, ["gfx942", "gfx950", "sm_90"])
            victim = os.path.join(objects, "sm_90", "attention_decode_bf16_d64_g1_sq1_contig_w4t16_tc.sm_90.cubin")
            os.unlink(victim)
            rc, stderr = run_package(GENERATED, objects, os.path.join(tmp, "packs", "attention_decode"))
            self.assertEqual(rc, 1)
            self.assertEqual(stderr, f"ingot package: error: {victim}: code object missing for kernel "
                                     "attention_decode_bf16_d64_g1_sq1_contig_w4t16_tc on sm_90\n")
            self.assertEqual(os.listdir(os.path.join(tmp, "packs")), [])  # the staging folder is gone too


def cmake_compile_command(compiler_var):
    """The compile command IngotPack.cmake runs for one code object, as a list."""
    with open(os.path.join(REPO, "cmake", "IngotPack.cmake"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"set\(cmd \$\{" + compiler_var + r"\}(.*?)\)\n", text, re.S)
    if m is None:
        raise AssertionError(f"no `set(cmd ${{{compiler_var}}} ...)` in IngotPack.cmake")
    return shlex.split(m.group(1))


def listed_compile_commands():
    """`compile` of `ingot list --json` for the shipped config: what the build runs."""
    rc, stdout, stderr = run_cli(["list", "--json", os.path.join(REPO, "configs", "attention_decode.yaml")])
    if rc != 0:
        raise AssertionError(stderr)
    (entry,) = json.loads(stdout)
    return entry["compile"]


class CompileFlagsTest(unittest.TestCase):
    """The flags live in the arch table only: the build takes them from `ingot list --json`."""

    def test_the_listing_gives_the_arch_tables_compiler_and_flags(self):
        listed = listed_compile_commands()
        self.assertEqual(sorted(listed), ["gfx942", "gfx950", "sm_90"])
        for arch, words in sorted(listed.items()):
            with self.subTest(arch=arch):
                self.assertEqual(words, [ARCHS[arch].compiler, *ARCHS[arch].flags])
        for arch in ("gfx942", "gfx950"):
            self.assertIn("-mcode-object-version=5", listed[arch])
            self.assertEqual(ARCHS[arch].code_object_version, 5)

    def test_the_build_adds_only_includes_and_paths(self):
        for var in ("INGOT_CLANG", "INGOT_NVCC"):
            with self.subTest(compiler=var):
                self.assertEqual(cmake_compile_command(var),
                                 ["${flags_${a}}", "-I", "${INGOT_TEMPLATE_DIR}", "-o", "${obj}", "${src}"])
        with open(os.path.join(REPO, "cmake", "IngotPack.cmake"), encoding="utf-8") as f:
            text = f.read()
        for flag in sorted({f for a in ARCHS.values() for f in a.flags if f.startswith("-")}):
            self.assertNotIn(f" {flag}", text, f"IngotPack.cmake repeats the arch table's flag {flag}")


@unittest.skipUnless(os.access(CLANG, os.X_OK) and os.access(READELF, os.X_OK) and os.access(OBJDUMP, os.X_OK),
                     f"{CLANG}, {READELF} or {OBJDUMP} not installed")
class RealCodeObjectTest(unittest.TestCase):
    """One generated gfx942 kernel, compiled as the build compiles it, read back."""

    INSTANCE = "attention_decode_bf16_d128_g4_sq1_contig_w4t16_tc"

    def compile(self, tmp, extra=()):
        src = os.path.join(GENERATED, "kernels", "gfx942", f"{self.INSTANCE}.hip")
        obj = os.path.join(tmp, f"{self.INSTANCE}.gfx942.co")
        compiler, *flags = listed_compile_commands()["gfx942"]
        self.assertEqual(compiler, "clang")
        cmd = [CLANG, *flags, *extra, "-I", os.path.join(REPO, "templates"), "-o", obj, src]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        return obj

    def test_compiled_kernel_matches_the_udd(self):
        udd = load_udd()
        with tempfile.TemporaryDirectory() as tmp:
            obj = self.compile(tmp)
            with open(obj, "rb") as f:
                header = f.read(16)
            kernels = read_amd(obj, READELF, OBJDUMP, "gfx942")
        self.assertEqual((header[7], header[8]), (64, 3))  # ELFOSABI_AMDGPU_HSA, code object v5
        self.assertEqual(sorted(kernels), [f"{self.INSTANCE}_{e}" for e in sorted(ENTRY_POINTS)])
        want = [{"kind": a["kind"], "offset": a["offset"], "size": a["size"]} for a in udd["signature"]]
        for sym, k in sorted(kernels.items()):
            with self.subTest(symbol=sym):
                self.assertEqual(len(k["signature"]), len(udd["signature"]))
                self.assertEqual(k["signature"], want)
                self.assertEqual(k["kernarg_size"], udd["kernarg_size"])
                self.assertEqual(k["code_object_version"], 5)
                self.assertIsNone(_check_signature(obj, sym, k, udd, "amd"))
                r = k["resources"]
                self.assertEqual(r["wavefront_size"], 64)
                self.assertEqual((r["spill"], r["agpr_spill"], r["scratch"]), (0, 0, 0))
                self.assertGreater(r["vgpr"], 0)
                self.assertGreater(r["lds"], 0)
                self.assertGreater(r["code_bytes"], 0)

    def test_clangs_default_v6_is_read_as_v6(self):
        with tempfile.TemporaryDirectory() as tmp:
            obj = self.compile(tmp, extra=("-mcode-object-version=6",))
            kernels = read_amd(obj, READELF, OBJDUMP, "gfx942")
        self.assertEqual({k["code_object_version"] for k in kernels.values()}, {6})


if __name__ == "__main__":
    unittest.main()
