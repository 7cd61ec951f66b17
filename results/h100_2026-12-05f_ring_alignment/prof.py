"""Per-kernel GPU time (torch profiler, CUPTI) of a balanced plan and its uniform-segment plan on a few
batches: where the balanced path's fixed cost goes. Experiment script, not shipped."""
import os, sys, math, collections
import torch
sys.path.insert(0, "generator")
import ingot
from torch.profiler import profile, ProfilerActivity

lib = sys.argv[1] if len(sys.argv) > 1 else "build/lib/libingot.so"
pack = sys.argv[2] if len(sys.argv) > 2 else "build/packs/attention_decode"
ctx = ingot.Runtime(lib).context("cuda")
ctx.open_pack(pack)
dt = torch.bfloat16
CASES = [("B=4 uniform 8K 8/2", [8192] * 4, 8, 2), ("B=4 32K+3x1K 8/2", [32768] + [1024] * 3, 8, 2),
         ("B=8 uniform 8K", [8192] * 8, 32, 8), ("B=8 64K+7x256", [65536] + [256] * 7, 32, 8),
         ("B=2 16K+1K", [16384, 1024], 32, 8), ("B=64 uniform 2K", [2048] * 64, 32, 8),
         ("B=32 uniform 4K", [4096] * 32, 32, 8)]
cases = CASES
if os.environ.get("PROF_SET") == "2":
    cases = [("B=2 16K+1K", [16384, 1024], 32, 8), ("B=2 8704x2", [8704, 8704], 32, 8),
             ("B=2 16Kx2", [16384, 16384], 32, 8), ("B=4 uniform 8K 8/2", [8192] * 4, 8, 2),
             ("B=4 uniform 16K 8/2", [16384] * 4, 8, 2), ("B=8 uniform 8K", [8192] * 8, 32, 8)]
if os.environ.get("PROF_SET") == "3":
    cases = [("B=2 16K+1K", [16384, 1024], 32, 8), ("B=2 8704x2", [8704, 8704], 32, 8)]
NOPROF = os.environ.get("PROF_NOPROF") == "1"
ENVS = os.environ.get("PROF_ENVS", "1,0").split(",")
for name, lens, hq, hkv in cases:
    B = len(lens); cap = max(lens); d = 128
    n = 4
    ks = [torch.randn(B, cap, hkv, d, device="cuda", dtype=dt) for _ in range(n)]
    vs = [torch.randn(B, cap, hkv, d, device="cuda", dtype=dt) for _ in range(n)]
    q = torch.randn(B, hq, 1, d, device="cuda", dtype=dt)
    o = torch.empty(B, hq, 1, d, device="cuda", dtype=dt)
    lt = torch.tensor(lens, device="cuda", dtype=torch.int32)
    for env in ENVS:
        os.environ["INGOT_BALANCE"] = env
        p = ingot.DecodePlan(q, ks[0], vs[0], lt, capacity=cap, context=ctx)
        for i in range(8):
            p.run(q, ks[i % n], vs[i % n], lt, out=o)
        torch.cuda.synchronize()
        if NOPROF:
            print(f"{name} INGOT_BALANCE={env} splits={p.num_splits} kernel={p.kernel}", flush=True)
            continue
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for i in range(40):
                p.run(q, ks[i % n], vs[i % n], lt, out=o)
            torch.cuda.synchronize()
        agg = collections.defaultdict(list)
        for ev in prof.events():
            if ev.device_type == torch.autograd.DeviceType.CUDA:
                agg[ev.name].append(ev.device_time if hasattr(ev, "device_time") else ev.cuda_time)
        parts = []
        for k, v in agg.items():
            short = k.split("_")[-1] if "_" in k else k
            kind = "balanced_" + short if "balanced" in k else short
            v = sorted(v); parts.append(f"{kind} {v[len(v)//2]:.2f}us x{len(v)}")
        print(f"{name:<22} INGOT_BALANCE={env} splits={p.num_splits} kernel={p.kernel}: " + "; ".join(parts), flush=True)
    del ks, vs
    torch.cuda.empty_cache()
