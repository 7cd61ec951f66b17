"""One decode plan run N times, for ncu: prof.py LIB PACK B HQ HKV LENS BALANCE [N]
LENS: one length for all, or a comma list of B lengths; capacity = the longest."""
import os, sys
import torch
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "generator"))
import ingot
lib, pack = sys.argv[1], sys.argv[2]
B, hq, hkv = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
lens = [int(x) for x in sys.argv[6].split(",")] if "," in sys.argv[6] else [int(sys.argv[6])] * B
n = int(sys.argv[8]) if len(sys.argv) > 8 else 5
assert len(lens) == B
os.environ["INGOT_BALANCE"] = sys.argv[7]
ctx = ingot.Runtime(lib).context("cuda")
ctx.open_pack(pack)
cap = max(lens)
dt = torch.bfloat16
q = torch.randn(B, hq, 1, 128, device="cuda", dtype=dt)
k = torch.randn(B, cap, hkv, 128, device="cuda", dtype=dt)
v = torch.randn(B, cap, hkv, 128, device="cuda", dtype=dt)
o = torch.empty(B, hq, 1, 128, device="cuda", dtype=dt)
lt = torch.tensor(lens, device="cuda", dtype=torch.int32)
plan = ingot.DecodePlan(q, k, v, lt, capacity=cap, context=ctx)
print("PLAN", plan.kernel, plan.num_splits, flush=True)
for _ in range(n):
    plan.run(q, k, v, lt, out=o)
torch.cuda.synchronize()
