"""Runs the seed shape through libingot a few times so that Nsight Compute can
profile the split and merge kernels (used by tools/profile.sh on the H200).

    python3 bench/ncu_probe.py [L] [--lib build/lib/libingot.so] [--pack build/packs/attention_decode]
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runtime", "python"))
from ingot_runtime import Runtime  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("L", type=int, nargs="?", default=65536)
    ap.add_argument("--lib", default="build/lib/libingot.so")
    ap.add_argument("--pack", default="build/packs/attention_decode")
    ap.add_argument("--iters", type=int, default=5)
    a = ap.parse_args()
    rt = Runtime(a.lib)
    ctx = rt.context("cuda")
    ctx.open_pack(a.pack)
    L = a.L
    q = torch.randn(1, 8, 1, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(1, L, 2, 128, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(1, L, 2, 128, device="cuda", dtype=torch.bfloat16)
    o = torch.empty(1, 8, 1, 128, device="cuda", dtype=torch.bfloat16)
    lens = torch.full((1,), L, device="cuda", dtype=torch.int32)
    plan = ctx.plan(q, k, v, o, lens, capacity=L)
    ws = torch.empty(max(plan.workspace_size // 4, 1), device="cuda")
    b = plan.buffers(q, k, v, o, lens)
    for _ in range(a.iters):
        plan.execute(b, ws, torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    print(f"ncu_probe: L={L} kernel {plan.kernel} splits {plan.num_splits}")


if __name__ == "__main__":
    main()
