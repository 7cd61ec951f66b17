"""Static model of the AMD code objects of a packaged pack (no AMD GPU here):
per kernel and arch, from the packaged KDP (which the build read from each
object's metadata note and disassembly): VGPRs (the AGPRs counted once: on
gfx90a and later they are part of the VGPR file and .vgpr_count includes
them), AGPRs and how many of them are spill space, SGPRs, waves per SIMD the
registers allow, LDS, workgroups per CU, the KV bytes a CU has in flight
against what Little's law asks at the datasheet bandwidth, and (from the
disassembly, where llvm-objdump-22 is installed) the share of the split loop's
vector math that runs with a whole chunk's loads in flight. The uniform plan's
split (entry point `split`); the balanced split runs the same loop.

    python3 bench/amd_model.py build/packs/attention_decode [--markdown]
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "generator"))
from ingot.archs import AMD_CU, ARCHS  # noqa: E402
from ingot.codeobj import loop_pipeline, split_body  # noqa: E402

OBJDUMP = shutil.which("llvm-objdump-22") or shutil.which("llvm-objdump")

# Public figures (vendor datasheets): MI300X (gfx942) 5.3 TB/s, MI355X (gfx950)
# 8.0 TB/s; their CU counts, LDS and the CU's resources are the arch table's
# (generator/ingot/archs.py, which the runtime's occupancy model reads too).
# Loaded HBM latency taken as 1-2 us.
MACHINES = {a: (name, bw, ARCHS[a].compute_units) for a, name, bw in (("gfx942", "MI300X", 5.3e12),
                                                                      ("gfx950", "MI355X", 8.0e12))}
LATENCY_S = (1e-6, 2e-6)
LDS_BYTES = {a: ARCHS[a].max_lds_bytes for a in MACHINES}
SIMDS, VGPRS_PER_LANE, VGPR_GRANULE, MAX_WAVES_PER_SIMD = (AMD_CU[k][0] for k in ("simds", "vgprs", "vgpr_unit",
                                                                                   "waves_per_simd"))
WAVE = ARCHS["gfx942"].wave_size


def chunk_loads(m):
    """16-byte K and V loads of one wave's chunk: a token takes the next power of two
    of D/8 lanes, so a 64-lane load holds 64 / that many tokens."""
    lanes = 1
    while lanes < m["head_dim"] // 8:
        lanes *= 2
    return 2 * m["tokens_per_wave"] // (WAVE // lanes)


def pipeline_share(pack, kd, arch, obj):
    """The share of the split loop's vector math with a chunk in flight, or None without objdump."""
    if OBJDUMP is None:
        return None
    listing = subprocess.run([OBJDUMP, "-d", f"--mcpu={arch}", os.path.join(pack, obj["path"])], check=True,
                             capture_output=True, text=True).stdout
    return loop_pipeline(split_body(listing, kd["kernel_source"]["symbols"]["split"]), chunk_loads(kd["metadata"]))[0]


def model(kd, arch, obj):
    m = kd["metadata"]
    r = obj["resources"]["split"]
    vgpr = r["vgpr"]  # AGPRs included
    alloc = (vgpr + VGPR_GRANULE - 1) // VGPR_GRANULE * VGPR_GRANULE
    waves_per_simd = min(MAX_WAVES_PER_SIMD, VGPRS_PER_LANE // alloc)
    blocks = SIMDS * waves_per_simd // m["waves"]
    if r["lds"]:
        blocks = min(blocks, LDS_BYTES[arch] // r["lds"])
    # In flight: the loop issues the next chunk's K and V loads before the math on
    # the current one and waits for them after it (docs/design/kernel.md, clamped
    # loads): one chunk of tokens_per_wave tokens x head_dim x 2 bytes x (K, V) per
    # wave, through the math (the share column says how much of it). Under row_waves the
    # waves load the same chunk: one chunk of distinct bytes per workgroup.
    chunk = m["tokens_per_wave"] * m["head_dim"] * 2 * 2
    inflight = blocks * (1 if m.get("row_waves") else m["waves"]) * chunk
    name, bw, cus = MACHINES[arch]
    need = [bw / cus * lat for lat in LATENCY_S]
    bound = min(1.0, inflight / need[1])
    return {"vgpr": vgpr, "agpr": r.get("agpr", 0), "agpr_spill": r.get("agpr_spill", 0), "sgpr": r["sgpr"],
            "waves_per_simd": waves_per_simd, "lds": r["lds"], "blocks": blocks, "inflight": inflight,
            "need": need, "bound": bound, "machine": name}


def rows_of(pack):
    kdp = json.load(open(glob.glob(os.path.join(pack, "*.kdp.json"))[0], encoding="utf-8"))
    rows = []
    for kd in kdp["kernelDescriptors"]:
        for arch, obj in sorted(kd["kernel_source"]["objects"].items()):
            if arch in MACHINES:
                x = model(kd, arch, obj)
                x["pipeline"] = pipeline_share(pack, kd, arch, obj)
                rows.append((kd["name"], arch, obj.get("code_object_version"), x))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pack")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    rows = rows_of(a.pack)
    if a.markdown:
        print("| kernel | arch | VGPR (AGPRs in it) | AGPR (spill) | SGPR | waves/SIMD | LDS | workgroups/CU "
              "| KV in flight per CU (peak) | needed at 1-2 us | HBM share the peak allows (2 us) "
              "| loop math with a chunk in flight |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for n, arch, _v, x in rows:
            share = "-" if x["pipeline"] is None else f"{x['pipeline']:.0%}"
            print(f"| {n} | {arch} | {x['vgpr']} | {x['agpr']} ({x['agpr_spill']}) | {x['sgpr']} | "
                  f"{x['waves_per_simd']} | {x['lds']} | {x['blocks']} | {x['inflight'] // 1024} KiB | "
                  f"{x['need'][0] / 1024:.0f}-{x['need'][1] / 1024:.0f} KiB ({x['machine']}) | {x['bound']:.0%} | "
                  f"{share} |")
    else:
        for n, arch, v, x in rows:
            print(f"{n:52} {arch:7} v{v} vgpr {x['vgpr']:3} agpr {x['agpr']:2} (spill {x['agpr_spill']:2}) "
                  f"sgpr {x['sgpr']:3} waves/SIMD {x['waves_per_simd']} lds {x['lds']:6} wg/CU {x['blocks']:2} "
                  f"in flight {x['inflight'] // 1024:4} KiB need {x['need'][0] / 1024:.0f}-{x['need'][1] / 1024:.0f} "
                  f"KiB ({x['machine']}) bound {x['bound']:.0%}"
                  + ("" if x["pipeline"] is None else f" pipeline {x['pipeline']:.0%}"))


if __name__ == "__main__":
    main()
