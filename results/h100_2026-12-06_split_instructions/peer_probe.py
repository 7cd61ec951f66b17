"""Runs PyTorch SDPA (flash or cuDNN backend) on a decode shape a few times so that Nsight Compute
can profile the peer's kernels beside ingot's (bench/ncu_probe.py). Experiment script, not shipped.

    python3 peer_probe.py L --batch B --heads HQxHKV --head-dim D --backend flash|cudnn
"""
import argparse

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

ap = argparse.ArgumentParser()
ap.add_argument("L", type=int)
ap.add_argument("--batch", type=int, default=1)
ap.add_argument("--heads", default="8x2")
ap.add_argument("--head-dim", type=int, default=128)
ap.add_argument("--backend", choices=("flash", "cudnn"), default="flash")
ap.add_argument("--iters", type=int, default=5)
a = ap.parse_args()
hq, hkv = (int(x) for x in a.heads.split("x"))
q = torch.randn(a.batch, hq, 1, a.head_dim, device="cuda", dtype=torch.bfloat16)
k = torch.randn(a.batch, hkv, a.L, a.head_dim, device="cuda", dtype=torch.bfloat16)
v = torch.randn_like(k)
be = SDPBackend.FLASH_ATTENTION if a.backend == "flash" else SDPBackend.CUDNN_ATTENTION
with sdpa_kernel(be):
    for _ in range(a.iters):
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)
torch.cuda.synchronize()
print(f"peer_probe: {a.backend} B={a.batch} {hq}/{hkv} D={a.head_dim} L={a.L} out {tuple(o.shape)}")
