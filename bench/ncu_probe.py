"""Runs the seed shape (or another B, Hq/Hkv and valid length) through libingot
a few times so that Nsight Compute can profile the split and merge kernels (used
by tools/profile.sh on the H200).

    python3 bench/ncu_probe.py [L] [--valid V] [--batch B] [--heads HQxHKV] [--head-dim D]
                               [--lib build/lib/libingot.so] [--pack build/packs/attention_decode]

e.g. the multi-query rows of docs/PERFORMANCE.md: --batch 32 --heads 48x1 (StarCoder) or
--batch 32 --heads 71x1 --head-dim 64 (Falcon-7B). A ragged batch: --lens 16384,1024 (each
sequence's device length; the batch is their count, the capacity L at least the longest), with
--balance N for the plan's INGOT_BALANCE (0: the uniform segments; decision 0037 compared the two
on the same pieces: 8704 --heads 32x8 --lens 8704,8704 with --balance 1 and with --balance 0).
--paged P reads a paged cache of page size P (pages scattered as bench/decode.py scatters them).
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "generator"))
import ingot  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("L", type=int, nargs="?", default=65536)
    ap.add_argument("--lib", default="build/lib/libingot.so")
    ap.add_argument("--pack", default="build/packs/attention_decode")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--valid", type=int, default=None, help="device valid length of every sequence (default: L)")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", default="8x2", help="Hq x Hkv (default 8x2)")
    ap.add_argument("--head-dim", type=int, default=128, help="head dim (default 128)")
    ap.add_argument("--lens", default=None, metavar="L1,L2,...",
                    help="each sequence's device length (overrides --batch and --valid)")
    ap.add_argument("--balance", type=int, default=None, choices=range(0, 9), metavar="N",
                    help="INGOT_BALANCE for the plan, 0..8 (default: the environment's)")
    ap.add_argument("--paged", type=int, default=0, metavar="P",
                    help="a paged cache of page size P (a power of two dividing L; default: contiguous)")
    a = ap.parse_args()
    hq, hkv = (int(x) for x in a.heads.split("x"))
    lens_list = None
    if a.lens is not None:
        try:
            lens_list = [int(x) for x in a.lens.split(",")]
        except ValueError:
            ap.error(f"--lens {a.lens!r}: comma-separated integers expected")
        if not lens_list or min(lens_list) < 0 or max(lens_list) > a.L:
            ap.error(f"--lens {a.lens!r}: each length in [0, L = {a.L}] (L is the capacity)")
    if a.balance is not None:
        os.environ["INGOT_BALANCE"] = str(a.balance)  # read by libingot when the plan is made
    B = len(lens_list) if lens_list else a.batch
    ctx = ingot.Runtime(a.lib).context("cuda")
    ctx.open_pack(a.pack)
    L = a.L
    D = a.head_dim
    q = torch.randn(B, hq, 1, D, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(B, L, hkv, D, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(B, L, hkv, D, device="cuda", dtype=torch.bfloat16)
    if lens_list:
        lens = torch.tensor(lens_list, device="cuda", dtype=torch.int32)
    else:
        lens = torch.full((B,), L if a.valid is None else a.valid, device="cuda", dtype=torch.int32)
    table = None
    if a.paged:
        if a.paged < 1 or a.paged & (a.paged - 1) or L % a.paged:
            ap.error(f"--paged {a.paged}: a power of two that divides L = {L}")
        from decode import paged_sets  # noqa: E402 (bench/decode.py, beside this script)
        gen = torch.Generator(device="cuda")
        gen.manual_seed(0)
        (k,), (v,), (table,) = paged_sets([k], [v], a.paged, gen)
    plan = ingot.DecodePlan(q, k, v, lens, page_table=table, capacity=L, context=ctx)
    o = plan.run(q, k, v, lens, page_table=table)
    for _ in range(a.iters - 1):
        plan.run(q, k, v, lens, page_table=table, out=o)
    torch.cuda.synchronize()
    valid = a.lens if lens_list else lens[0].item()
    print(f"ncu_probe: B={B} {hq}/{hkv} D={D} L={L} valid={valid} balance={os.environ.get('INGOT_BALANCE', 'default')} "
          f"{'paged ' + str(a.paged) if a.paged else 'contiguous'} kernel {plan.kernel} splits {plan.num_splits}")


if __name__ == "__main__":
    main()
