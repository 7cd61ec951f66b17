"""Static model of the AMD code objects of a packaged pack (no AMD GPU here):
per kernel and arch, VGPRs (+AGPRs), waves per SIMD the registers allow, LDS,
workgroups per CU, and the KV bytes each CU keeps in flight against what the
memory system needs (Little's law).

    python3 bench/amd_model.py build/packs/attention_decode [--markdown]
"""

import argparse
import glob
import json
import os

# Public figures (vendor datasheets): MI300X (gfx942) 5.3 TB/s over 304 CUs;
# MI355X (gfx950) 8.0 TB/s over 256 CUs. Loaded HBM latency taken as ~2 us.
MACHINES = {"gfx942": ("MI300X", 5.3e12, 304), "gfx950": ("MI355X", 8.0e12, 256)}
LATENCY_S = 2e-6
LDS_BYTES = {"gfx942": 65536, "gfx950": 163840}


def model(kd, arch, obj):
    m = kd["metadata"]
    r = obj["resources"]["split"]
    regs = r["vgpr"] + r.get("agpr", 0)
    alloc = (regs + 7) // 8 * 8
    waves_per_simd = min(8, 512 // alloc)
    blocks = (4 * waves_per_simd) // m["waves"]
    if r["lds"]:
        blocks = min(blocks, LDS_BYTES[arch] // r["lds"])
    # SIMT path on AMD: each lane keeps tokens_per_wave / (64 / (D/8)) 16-byte loads of K
    # and of V in flight, twice (the next chunk is loaded while this one is used).
    loads = m["tokens_per_wave"] // (64 // (m["head_dim"] // 8))
    inflight = blocks * m["waves"] * 64 * loads * 2 * 16 * 2
    name, bw, cus = MACHINES[arch]
    need = bw / cus * LATENCY_S
    return regs, waves_per_simd, r["lds"], blocks, inflight, need, name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pack")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    kdp = json.load(open(glob.glob(os.path.join(a.pack, "*.kdp.json"))[0]))
    rows = []
    for kd in kdp["kernelDescriptors"]:
        for arch, obj in sorted(kd["kernel_source"]["objects"].items()):
            if arch in MACHINES:
                rows.append((kd["name"], arch) + model(kd, arch, obj))
    if a.markdown:
        print("| kernel | arch | VGPR+AGPR | waves/SIMD | LDS | workgroups/CU | KV bytes in flight per CU | needed |")
        print("|---|---|---|---|---|---|---|---|")
        for n, arch, regs, w, lds, b, inf, need, mach in rows:
            print(f"| {n} | {arch} | {regs} | {w} | {lds} | {b} | {inf // 1024} KiB | {need / 1024:.0f} KiB ({mach}) |")
    else:
        for n, arch, regs, w, lds, b, inf, need, mach in rows:
            print(f"{n:56} {arch:7} regs {regs:4} waves/SIMD {w} lds {lds:6} wg/CU {b:2} "
                  f"in flight {inf // 1024:5} KiB need {need / 1024:4.0f} KiB ({mach})")


if __name__ == "__main__":
    main()
