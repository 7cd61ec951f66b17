"""Per-kernel GPU time (torch profiler) of the uniform-segment and balanced plans, contiguous and paged 16,
on the small batches where paged balancing ran faster than the uniform segments (2026-12-06 ragged tables).
Experiment script, not shipped."""
import os, sys, collections
import torch
sys.path.insert(0, "generator"); sys.path.insert(0, "bench")
import ingot
from decode import paged_sets
from torch.profiler import profile, ProfilerActivity

ctx = ingot.Runtime("build/lib/libingot.so").context("cuda")
ctx.open_pack("build/packs/attention_decode")
dt = torch.bfloat16
gen = torch.Generator(device="cuda"); gen.manual_seed(1)
CASES = [("B=4 uniform 8K 8/2", [8192] * 4, 8, 2), ("B=4 32K+3x1K 8/2", [32768] + [1024] * 3, 8, 2),
         ("B=2 16K+1K", [16384, 1024], 32, 8), ("B=8 uniform 8K", [8192] * 8, 32, 8)]
for name, lens, hq, hkv in CASES:
    B = len(lens); cap = max(lens); d = 128; n = 4
    ks = [torch.randn(B, cap, hkv, d, device="cuda", dtype=dt) for _ in range(n)]
    vs = [torch.randn(B, cap, hkv, d, device="cuda", dtype=dt) for _ in range(n)]
    q = torch.randn(B, hq, 1, d, device="cuda", dtype=dt)
    o = torch.empty(B, hq, 1, d, device="cuda", dtype=dt)
    lt = torch.tensor(lens, device="cuda", dtype=torch.int32)
    for layout in ("contig", "paged16"):
        if layout == "paged16":
            kk, vv, tt = paged_sets(ks, vs, 16, gen)
        else:
            kk, vv, tt = ks, vs, [None] * n
        for env in ("0", "1"):
            os.environ["INGOT_BALANCE"] = env
            kw = {} if tt[0] is None else {"page_table": tt[0]}
            p = ingot.DecodePlan(q, kk[0], vv[0], lt, capacity=cap, context=ctx, **kw)
            def go(i):
                kw2 = {} if tt[0] is None else {"page_table": tt[i % n]}
                p.run(q, kk[i % n], vv[i % n], lt, out=o, **kw2)
            for i in range(8): go(i)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for i in range(40): go(i)
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
            print(f"{name:<20} {layout:<7} BAL={env} splits={p.num_splits} kernel={p.kernel}: " + "; ".join(parts), flush=True)
    del ks, vs
    torch.cuda.empty_cache()
