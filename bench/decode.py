"""Decode attention on the H200: ingot (through its Python API, ingot.DecodePlan
on torch tensors) side by side with PyTorch SDPA (cuDNN and flash backends), as
fractions of the measured copy bandwidth.

    python3 bench/decode.py --lib build/lib/libingot.so --pack build/packs/attention_decode --out DIR

Every point: fresh random inputs, the output checked against a float64
reference before it is timed, several buffer sets rotated so the KV cache is
not served from L2, warm-up, the median of many runs; per-call time (CUDA
events around each call) and graph-replay time (many calls captured in one CUDA
graph). The floor is the same plan with every valid length 0: its launches
doing no work. Writes decode.csv, decode.md and decode.png under DIR; with
--doc docs/PERFORMANCE.md also the table into that page's generated block
(bench/perf_doc.py), so the page holds the last run's numbers.

At head dim 128 on a contiguous cache it then runs bench/read_floor (bin/read_floor
beside the library's lib/, or --read-floor PATH) on the same byte counts, and
shows each of issue 5's targets beside what that bare read of the bytes leaves
for it (--no-read-floor skips it).
"""

import argparse
import csv
import math
import os
import sys

import numpy as np
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "generator"))
import ingot  # noqa: E402  (the source tree's: --lib and --pack say which libingot and pack it opens)

import targets  # noqa: E402  (bench/targets.py: this folder is sys.path[0] when run as a script)
import ragged_plot  # noqa: E402  (bench/ragged_plot.py: the ragged batches' plot)

L2_BYTES = 60 << 20
ATOL = RTOL = 0.015


def copy_ceiling(gib=4, reps=20):
    n = (gib << 30) // 2
    src = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        dst.copy_(src)
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e-3)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * n * 2 / float(np.median(ts))


def time_per_call(fn, nbuf, reps):
    ts = []
    for r in range(reps):
        i = r % nbuf
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(i)
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e3)
    return float(np.median(ts))


class GraphTimer:
    """`calls` calls of fn (default nbuf) over the nbuf buffer sets in turn,
    captured once in one CUDA graph; sample(reps) replays it reps times and
    gives the GPU time per call of each replay."""

    def __init__(self, fn, nbuf, calls=None):
        self.calls = calls or nbuf
        self.g = torch.cuda.CUDAGraph()
        st = torch.cuda.Stream()
        st.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(st):
            with torch.cuda.graph(self.g, stream=st):
                for i in range(self.calls):
                    fn(i % nbuf)
        torch.cuda.synchronize()
        self.g.replay()
        torch.cuda.synchronize()

    def sample(self, reps):
        ts = []
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            self.g.replay()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) * 1e3 / self.calls)
        return ts


def time_graph(fn, nbuf, reps, calls=None):
    """GPU time per call by graph replay (GraphTimer): the median of reps replays."""
    return float(np.median(GraphTimer(fn, nbuf, calls).sample(reps)))


def reference(q, k, v, lens):
    """float64 O for token-major k, v [B, cap, Hkv, D]; unmasked."""
    B, Hq, Sq, D = q.shape
    out = torch.empty(B, Hq, Sq, D, dtype=torch.float64, device=q.device)
    for b in range(B):
        L = int(lens[b])
        g = Hq // k.shape[2]
        kk = k[b, :L].double().repeat_interleave(g, dim=1).transpose(0, 1)
        vv = v[b, :L].double().repeat_interleave(g, dim=1).transpose(0, 1)
        s = torch.einsum("hsd,hld->hsl", q[b].double(), kk) / math.sqrt(D)
        out[b] = torch.einsum("hsl,hld->hsd", torch.softmax(s, dim=-1), vv)
    return out


def paged_sets(ks, vs, page_size, gen):
    """The same K and V values in page pools [B * L/P, P, Hkv, D], one pool per buffer set,
    each sequence's pages scattered over its pool by a random permutation (the page table)."""
    pools_k, pools_v, tables = [], [], []
    for k, v in zip(ks, vs):
        B, L, Hkv, D = k.shape
        per = L // page_size
        table = torch.randperm(B * per, device="cuda", generator=gen).to(torch.int32).reshape(B, per)
        pk = torch.empty(B * per, page_size, Hkv, D, device="cuda", dtype=k.dtype)
        pv = torch.empty_like(pk)
        pk[table.long()] = k.reshape(B, per, page_size, Hkv, D)
        pv[table.long()] = v.reshape(B, per, page_size, Hkv, D)
        pools_k.append(pk)
        pools_v.append(pv)
        tables.append(table)
    return pools_k, pools_v, tables


def point_done(res):
    """After a point: its buffers (freed on return) go back to the device, so that the next point's
    allocations see the same free memory whatever came before."""
    torch.cuda.empty_cache()
    return res


def bench_point(ctx, B, Hq, Hkv, L, D, reps, ceiling, calls=0, rounds=5, page_size=0):
    """One point. With page_size, ingot reads a paged cache (page pools and a page table) holding
    the same values, and the contiguous plan is timed beside it as 'contig'."""
    dt = torch.bfloat16
    kv_bytes = 2 * B * L * Hkv * D * 2
    nbuf = int(max(2, min(256, math.ceil(4 * L2_BYTES / kv_bytes))))
    gen = torch.Generator(device="cuda").manual_seed(L * 131 + B)
    qs = [torch.randn(B, Hq, 1, D, device="cuda", dtype=dt, generator=gen) for _ in range(nbuf)]
    ks = [torch.randn(B, L, Hkv, D, device="cuda", dtype=dt, generator=gen) for _ in range(nbuf)]
    vs = [torch.randn(B, L, Hkv, D, device="cuda", dtype=dt, generator=gen) for _ in range(nbuf)]
    o = torch.empty(B, Hq, 1, D, device="cuda", dtype=dt)
    lens = torch.full((B,), L, device="cuda", dtype=torch.int32)
    zero_lens = torch.zeros(B, device="cuda", dtype=torch.int32)
    contig = ingot.DecodePlan(qs[0], ks[0], vs[0], lens, capacity=L, context=ctx)
    run_contig = lambda i: contig.run(qs[i], ks[i], vs[i], lens, out=o)  # noqa: E731
    if page_size:
        if L % page_size:
            raise SystemExit(f"--paged {page_size}: L={L} is not a multiple of the page size")
        pks, pvs, tables = paged_sets(ks, vs, page_size, gen)
        plan = ingot.DecodePlan(qs[0], pks[0], pvs[0], lens, page_table=tables[0], capacity=L, context=ctx)
        run = lambda i: plan.run(qs[i], pks[i], pvs[i], lens, page_table=tables[i], out=o)  # noqa: E731
        run_floor = lambda i: plan.run(qs[i], pks[i], pvs[i], zero_lens, page_table=tables[i], out=o)  # noqa: E731
    else:
        plan, run = contig, run_contig
        run_floor = lambda i: plan.run(qs[i], ks[i], vs[i], zero_lens, out=o)  # noqa: E731

    # Check before timing: poisoned output, fresh inputs, float64 reference.
    ref = reference(qs[0], ks[0], vs[0], lens.cpu())

    def checked(fn, what):
        """Max error of fn(0) (a run into o) against ref; exits naming `what` if any is off."""
        o.fill_(float("nan"))
        fn(0)
        torch.cuda.synchronize()
        err = (o.double() - ref).abs()
        if not bool((err <= ATOL + RTOL * ref.abs()).all()) or bool(torch.isnan(o).any()):
            raise SystemExit(f"ingot {what}output wrong at B={B} L={L}: max error {err.max().item():.4g}")
        return err.max().item()

    max_err = checked(run, "")

    res = {"B": B, "Hq": Hq, "Hkv": Hkv, "L": L, "layout": f"paged {page_size}" if page_size else "contiguous",
           "kernel": plan.kernel, "splits": plan.num_splits, "launches": plan.launches, "max_err": max_err,
           "kv_bytes": kv_bytes}
    for i in range(nbuf):
        run(i)
    res["ingot_call"] = time_per_call(run, nbuf, reps)
    calls = max(calls, nbuf)
    timers = {"ingot": GraphTimer(run, nbuf, calls), "floor": GraphTimer(run_floor, nbuf, calls)}
    if page_size:  # the contiguous plan on the same values, checked too
        checked(run_contig, "contiguous ")
        res["contig_kernel"], res["contig_splits"] = contig.kernel, contig.num_splits
        timers["contig"] = GraphTimer(run_contig, nbuf, calls)

    # Peers on their preferred layout [B, H, L, D], the same values.
    kp = [k.transpose(1, 2).contiguous() for k in ks]
    vp = [v.transpose(1, 2).contiguous() for v in vs]
    for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        def peer(i, backend=backend):
            with sdpa_kernel(backend):
                return torch.nn.functional.scaled_dot_product_attention(qs[i], kp[i], vp[i], enable_gqa=True)
        try:
            out = peer(0)
            torch.cuda.synchronize()
            perr = (out.double() - o.double()).abs().max().item()  # ingot was checked above
            res[f"{name}_call"] = time_per_call(peer, nbuf, reps)
            timers[name] = GraphTimer(peer, nbuf, calls)
            res[f"{name}_vs_ingot"] = perr
        except Exception as e:  # a backend that cannot run this shape
            print(f"  {name} B={B} L={L}: {type(e).__name__}: {str(e)[:160]}", flush=True)
            res[f"{name}_call"] = float("nan")

    # Rounds: every implementation replayed in turn, `rounds` times, so that
    # clock and thermal drift fall on all of them alike; each round's medians
    # give one best-peer / ingot ratio, and their range says how far the
    # comparison moves within the run.
    per_round = {k: [] for k in timers}
    for _ in range(rounds):
        for k, t in timers.items():
            per_round[k].append(float(np.median(t.sample(max(1, -(-reps // rounds))))))
    for key in ("ingot", "floor", "cudnn", "flash", "contig"):
        res[f"{key}_graph"] = float(np.median(per_round[key])) if key in per_round else float("nan")
    for key in ("ingot", "cudnn", "flash"):
        t = res[f"{key}_graph"]
        res[f"{key}_bw"] = kv_bytes / (t * 1e-6) / ceiling if t == t else float("nan")
    peers = [p for p in ("cudnn", "flash") if p in per_round]
    res["best_peer"] = min(res[f"{p}_graph"] for p in peers) if peers else float("nan")
    res["speedup"] = res["best_peer"] / res["ingot_graph"]
    ratios = [min(per_round[p][r] for p in peers) / per_round["ingot"][r] for r in range(rounds)] if peers else []
    res["speedup_lo"] = min(ratios) if ratios else float("nan")
    res["speedup_hi"] = max(ratios) if ratios else float("nan")
    return res  # its tensors and plans go with it; the caller empties the cache (point_done)


# The model table (issue 22): the decode step of well-known models (per shard where
# named), and group 8 at the bytes of the group-7 and group-5 rows (the cost of padded
# rows). (name, Hq, Hkv, D).
MODELS = (
    ("Llama-2-7B", 32, 32, 128), ("Llama-3-8B", 32, 8, 128), ("Llama-3-70B TP8", 8, 1, 128),
    ("Llama-3-70B TP4", 16, 2, 128), ("Llama-3.1-405B TP8", 16, 1, 128), ("Qwen2.5-7B", 28, 4, 128),
    ("group 8 at Qwen2.5-7B's bytes", 32, 4, 128), ("Qwen2.5-14B", 40, 8, 128),
    ("group 8 at Qwen2.5-14B's bytes", 64, 8, 128), ("Qwen2.5-1.5B", 12, 2, 128), ("Qwen2-0.5B", 14, 2, 64),
    ("Gemma-2-9B", 16, 8, 256), ("Gemma-2B", 8, 1, 256), ("Gemma-7B", 16, 16, 256), ("Falcon-7B", 71, 1, 64),
    ("StarCoder", 48, 1, 128), ("Phi-2", 32, 32, 80), ("Phi-3-mini", 32, 32, 96),
)
MODEL_POINTS = ((1, 8192), (1, 65536), (32, 8192), (32, 65536))
MODEL_MAX_KV_BYTES = 8 << 30  # per buffer set: the big MHA points at B=32 and 64K are left out


def run_models(ctx, a, ceiling):
    """bench/decode.py --models: each model at 8K and 64K tokens, B=1 and B=32, against cuDNN and flash in
    the same run; writes decode_models.csv/.md."""
    rows = []
    print(f"{'model':<32} {'B':>3} {'L':>6} | {'ingot':>9} {'%ceil':>6} | {'cuDNN':>9} | {'flash':>9} | "
          f"{'vs best':>7} | kernel", flush=True)
    models = [m for m in MODELS if not a.model or any(n in m[0] for n in a.model)]
    if not models:
        print(f"decode.py: no model of MODELS matches --model {', '.join(a.model)} (models: "
              f"{', '.join(m[0] for m in MODELS)})", file=sys.stderr)
        return 2
    for name, hq, hkv, d in models:
        for b, l in MODEL_POINTS:
            if 2 * b * l * hkv * d * 2 > MODEL_MAX_KV_BYTES:
                continue
            r = point_done(bench_point(ctx, b, hq, hkv, l, d, a.reps, ceiling, a.calls, a.rounds, page_size=a.paged))
            r["model"], r["D"] = name, d
            rows.append(r)
            print(f"{name:<32} {b:>3} {l:>6} | {r['ingot_graph']:>7.2f}us {r['ingot_bw']*100:>5.1f}% | "
                  f"{r['cudnn_graph']:>7.2f}us | {r['flash_graph']:>7.2f}us | {r['speedup']:>6.3f}x | {r['kernel']}",
                  flush=True)
    os.makedirs(a.out, exist_ok=True)
    stem = "decode_models" + (f"_paged{a.paged}" if a.paged else "")
    with open(os.path.join(a.out, f"{stem}.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(a.out, f"{stem}.md"), "w") as f:
        f.write(f"bf16, one query token, copy ceiling {ceiling / 1e9:.0f} GB/s, GPU time by CUDA-graph replay"
                + (f", ingot on a paged cache (page size {a.paged})" if a.paged else "") + "\n\n")
        f.write(f"| model | Hq/Hkv | D | B | L | ingot | % ceiling | cuDNN | flash | best peer / ingot | "
                f"range over {a.rounds} rounds | kernel |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write(f"| {r['model']} | {r['Hq']}/{r['Hkv']} | {r['D']} | {r['B']} | {r['L']} | "
                    f"{r['ingot_graph']:.2f} us | {r['ingot_bw']*100:.1f}% | {r['cudnn_graph']:.2f} us | "
                    f"{r['flash_graph']:.2f} us | {r['speedup']:.3f}x | {r['speedup_lo']:.3f}-{r['speedup_hi']:.3f} | "
                    f"`{r['kernel']}` |\n")
    return 0


# Ragged batches (issue 23): (name, B, lengths function of a seeded generator), Hq/Hkv 32/8, D 128.
def _log_uniform(gen, b, lo, hi):
    return [int(math.exp(math.log(lo) + (math.log(hi) - math.log(lo)) * float(x))) for x in torch.rand(b, generator=gen)]


# Then uniform batches through the same three plans: what balancing costs where there is nothing
# to balance (the balanced plan is opt-in until it costs them nothing; decision 0022).
RAGGED = (
    ("B=32 log-uniform 64..32K", 32, lambda g: _log_uniform(g, 32, 64, 32768)),
    ("B=32 one 32K + 31 x 512", 32, lambda g: [32768] + [512] * 31),
    ("B=32 4 x 32K + 28 x 1K", 32, lambda g: [32768] * 4 + [1024] * 28),
    ("B=8 one 64K + 7 x 256", 8, lambda g: [65536] + [256] * 7),
    ("B=64 log-uniform 16..16K", 64, lambda g: _log_uniform(g, 64, 16, 16384)),
    ("B=16 8 empty + 8 x 16K", 16, lambda g: [0] * 8 + [16384] * 8),
    ("B=4 one 32K + 3 x 1K, 8/2", 4, lambda g: [32768] + [1024] * 3, 8, 2),
    ("B=2 16K + 1K", 2, lambda g: [16384, 1024]),
    ("B=4 uniform 8K, 8/2", 4, lambda g: [8192] * 4, 8, 2),
    ("B=8 uniform 8K", 8, lambda g: [8192] * 8),
    ("B=16 uniform 8K", 16, lambda g: [8192] * 16),
    ("B=32 uniform 4K", 32, lambda g: [4096] * 32),
    ("B=64 uniform 2K", 64, lambda g: [2048] * 64),
    # Uniform batches at long capacities, and in a cache longer than their lengths, as a serving
    # engine plans them (the capacity its longest context may reach): the plan knows only the
    # capacity, which sets the segment count and whether the default balances (decision 0051), so
    # a short batch in a long cache pays balancing's fixed cost on its own, shorter call. Against
    # a uniform batch of the same tokens at its own capacity.
    ("B=4 uniform 32K, 8/2", 4, lambda g: [32768] * 4, 8, 2),
    ("B=4 uniform 8K in 32K, 8/2", 4, lambda g: [8192] * 4, 8, 2, 32768),
    ("B=4 uniform 8K in 128K, 8/2", 4, lambda g: [8192] * 4, 8, 2, 131072),
    ("B=8 uniform 64K", 8, lambda g: [65536] * 8),
    ("B=8 uniform 8K in 64K", 8, lambda g: [8192] * 8, 32, 8, 65536),
    ("B=2 uniform 16K", 2, lambda g: [16384] * 2),
)


def ragged_point(ctx, name, B, lens, reps, calls, rounds, hq=32, hkv=8, d=128, page_size=0, balance=1,
                 capacity=None):
    """One ragged batch: ingot's balanced plan (INGOT_BALANCE=balance at plan time) and its uniform-segment plan
    (INGOT_BALANCE=0) on the same lengths, and a uniform batch of the same total tokens, by graph replay;
    with page_size, all three read paged caches (pages scattered by a random page table). The batch's plans
    are made for `capacity` (default: its longest length); the uniform batch's for its own length."""
    dt = torch.bfloat16
    P = page_size
    up = (lambda n: -(-n // P) * P) if P else (lambda n: n)  # a capacity in whole pages
    cap = up(max(max(lens), 1, capacity or 0))
    total = sum(lens)
    gen = torch.Generator(device="cuda").manual_seed(total + B)

    def kv_sets(L):  # fresh K and V sets, enough of them that the cache is not served from L2
        n = int(max(2, min(16, math.ceil(4 * L2_BYTES / (2 * B * L * hkv * d * 2)))))
        ks = [torch.randn(B, L, hkv, d, device="cuda", dtype=dt, generator=gen) for _ in range(n)]
        vs = [torch.randn(B, L, hkv, d, device="cuda", dtype=dt, generator=gen) for _ in range(n)]
        return n, ks, vs

    nbuf, ks, vs = kv_sets(cap)
    qs = [torch.randn(B, hq, 1, d, device="cuda", dtype=dt, generator=gen) for _ in range(nbuf)]
    o = torch.empty(B, hq, 1, d, device="cuda", dtype=dt)
    lt = torch.tensor(lens, device="cuda", dtype=torch.int32)
    lu = max(1, total // B)
    lu_t = torch.full((B,), lu, device="cuda", dtype=torch.int32)
    # a uniform batch at its own capacity is its own twin: its uniform-segment plan (no balance) is the one
    # timed as such
    twin = len(set(lens)) > 1 or cap != up(lu)
    nbuf_u, ku, vu = kv_sets(up(lu)) if twin else (0, [], [])
    ref = reference(qs[0], ks[0], vs[0], [int(x) for x in lens])
    if P:  # the same values in page pools; the contiguous sets are not read again
        ks, vs, tables = paged_sets(ks, vs, P, gen)
        ku, vu, tables_u = paged_sets(ku, vu, P, gen)
        torch.cuda.empty_cache()
    else:
        tables = tables_u = [None] * max(nbuf, nbuf_u)

    def make(k, v, t, lengths, capacity):
        return ingot.DecodePlan(qs[0], k, v, lengths, capacity=capacity, context=ctx,
                                **({"page_table": t} if P else {}))

    def call(plan, i, k, v, t, lengths):
        return plan.run(qs[i % nbuf], k, v, lengths, out=o, **({"page_table": t} if P else {}))

    plans = {}
    saved = os.environ.pop("INGOT_BALANCE", None)
    # read by libingot at plan time; the default (unset) is the one a user gets, either of the two
    for key, env in (("balanced", str(balance)), ("unbalanced", "0"), ("default", None)):
        if env is None:
            os.environ.pop("INGOT_BALANCE", None)
        else:
            os.environ["INGOT_BALANCE"] = env
        plans[key] = make(ks[0], vs[0], tables[0], lt, cap)
    if twin:  # the uniform batch through its uniform segments: the time perfect balance gives
        os.environ["INGOT_BALANCE"] = "0"
        plans["uniform"] = make(ku[0], vu[0], tables_u[0], lu_t, up(lu))
    os.environ.pop("INGOT_BALANCE", None)
    if saved is not None:
        os.environ["INGOT_BALANCE"] = saved
    default = plans.pop("default")
    # the default plan is the balanced one when its workspace has the balanced layout's size
    default_balanced = (default.workspace_size == plans["balanced"].workspace_size
                        and default.workspace_size != plans["unbalanced"].workspace_size)
    for key in ("balanced", "unbalanced"):
        o.fill_(float("nan"))
        call(plans[key], 0, ks[0], vs[0], tables[0], lt)
        torch.cuda.synchronize()
        err = (o.double() - ref).abs()
        if not bool((err <= ATOL + RTOL * ref.abs()).all()) or bool(torch.isnan(o).any()):
            raise SystemExit(f"ingot {key} output wrong on {name}: max error {err.max().item():.4g}")
    runs = {key: (lambda i, p=plans[key]: call(p, i, ks[i], vs[i], tables[i], lt)) for key in ("balanced", "unbalanced")}
    if twin:
        runs["uniform"] = lambda i: call(plans["uniform"], i, ku[i], vu[i], tables_u[i], lu_t)
    timers = {key: GraphTimer(runs[key], n, max(calls, n))
              for key, n in (("balanced", nbuf), ("unbalanced", nbuf), ("uniform", nbuf_u)) if key in runs}
    per_round = {k: [] for k in timers}
    for _ in range(rounds):
        for k, t in timers.items():
            per_round[k].append(float(np.median(t.sample(max(1, -(-reps // rounds))))))
    res = {"case": name, "B": B, "Hq": hq, "Hkv": hkv, "layout": f"paged {P}" if P else "contiguous",
           "tokens": total, "max_len": max(lens), "spread": max(lens) / max(1.0, total / B)}
    for k in timers:
        res[k] = float(np.median(per_round[k]))
    if not twin:
        res["uniform"] = res["unbalanced"]
    res["ratio"] = res["balanced"] / res["uniform"]
    res["ratio_unbalanced"] = res["unbalanced"] / res["uniform"]
    res["default"] = "balanced" if default_balanced else "uniform segments"
    res["default_ratio"] = res["ratio"] if default_balanced else res["ratio_unbalanced"]
    res["kernel"], res["splits"] = plans["balanced"].kernel, plans["balanced"].num_splits
    res["capacity"], res["segments"] = cap, plans["unbalanced"].num_splits
    return res  # as bench_point's


def run_ragged(ctx, a):
    """bench/decode.py --ragged: each batch of RAGGED beside the uniform batch of its total tokens."""
    rows = []
    gen = torch.Generator().manual_seed(23)
    print(f"{'case':<28} {'tokens':>8} | {'balanced':>9} {'uniform':>9} {'ratio':>6} | {'no balance':>10} {'ratio':>6} "
          f"| default", flush=True)
    for name, b, fn, *heads in RAGGED:
        if a.only and a.only not in name:
            fn(gen)  # the same draws as a full run: a batch's lengths do not depend on the filter
            continue
        hq, hkv = heads[:2] or (32, 8)
        r = point_done(ragged_point(ctx, name, b, fn(gen), a.reps, a.calls, a.rounds, hq=hq, hkv=hkv,
                                    page_size=a.paged, balance=a.balance, capacity=(heads[2:] or [None])[0]))
        rows.append(r)
        print(f"{name:<28} {r['tokens']:>8} | {r['balanced']:>7.1f}us {r['uniform']:>7.1f}us {r['ratio']:>5.2f}x | "
              f"{r['unbalanced']:>8.1f}us {r['ratio_unbalanced']:>5.2f}x | {r['default']} {r['default_ratio']:.2f}x | "
              f"{r['segments']} segments, {r['splits']} units", flush=True)
    if not rows:
        raise SystemExit(f"--only {a.only!r} matches no ragged batch; the batches: " + "; ".join(r[0] for r in RAGGED))
    os.makedirs(a.out, exist_ok=True)
    stem = "decode_ragged" + (f"_paged{a.paged}" if a.paged else "")
    with open(os.path.join(a.out, f"{stem}.md"), "w") as f:
        f.write(f"bf16, D 128, {f'paged {a.paged}' if a.paged else 'contiguous'}, GPU time by CUDA-graph replay; "
                "ratio = against a uniform batch "
                f"of the same total tokens; balanced = INGOT_BALANCE={a.balance}, no balance = the same plan with "
                "INGOT_BALANCE=0, default = the plan with INGOT_BALANCE unset (one of the two); capacity = the "
                "plans' (the uniform batch's is its own length), segments = the no-balance plan's per sequence, units "
                "= the balanced plan's per KV head\n\n"
                "| batch | Hq/Hkv | tokens | max / mean length | balanced | uniform, same tokens | ratio | no balance | "
                "ratio | default | ratio | capacity | segments | units |\n"
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write(f"| {r['case']} | {r['Hq']}/{r['Hkv']} | {r['tokens']} | {r['spread']:.1f} | {r['balanced']:.1f} us | "
                    f"{r['uniform']:.1f} us | "
                    f"{r['ratio']:.2f}x | {r['unbalanced']:.1f} us | {r['ratio_unbalanced']:.2f}x | {r['default']} | "
                    f"{r['default_ratio']:.2f}x | {r['capacity']} | {r['segments']} | {r['splits']} |\n")
    with open(os.path.join(a.out, f"{stem}.svg"), "w") as f:  # ratio against the spread of the lengths
        f.write(ragged_plot.svg(rows))
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default="build/lib/libingot.so")
    ap.add_argument("--pack", default="build/packs/attention_decode")
    ap.add_argument("--out", default="results", help="folder for the CSV, table and plot (default: results/)")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--calls", type=int, default=20,
                    help="calls per captured graph (at least one per buffer set): a replay long enough that its start-up and the clock ramp amortize")
    ap.add_argument("--rounds", type=int, default=5,
                    help="replay every implementation in turn this many times (reps split among them); "
                         "the best-peer ratio's range over the rounds is reported")
    ap.add_argument("--quick", action="store_true", help="fewer points")
    ap.add_argument("--points", default=None,
                    help="comma-separated BxHqxHkvxL points instead of the full set, e.g. 1x8x2x65536")
    ap.add_argument("--paged", type=int, default=0, metavar="P",
                    help="ingot reads a paged cache of page size P (pages scattered by a random page table; "
                         "the peers and ingot's contiguous plan read the same values contiguous); writes "
                         "decode_paged<P>.csv/.md, and judges no targets (they are the contiguous cache's)")
    ap.add_argument("--ragged", action="store_true",
                    help="the ragged batches of RAGGED, and uniform ones, against uniform batches of the same tokens, "
                         "balanced and not (decode_ragged[_paged<P>].md, and .svg: the ratio against the spread of the "
                         "lengths); with --paged P on paged caches")
    ap.add_argument("--only", default=None, metavar="TEXT",
                    help="with --ragged: only the batches whose name contains TEXT (e.g. 'uniform')")
    ap.add_argument("--balance", type=int, default=1, choices=range(1, 9), metavar="N",
                    help="with --ragged: the balanced plans' INGOT_BALANCE=N (the rounds of resident workgroups a "
                         "short batch's pieces fill; default 1)")
    ap.add_argument("--models", action="store_true",
                    help="the model table instead of the points: each model of MODELS at 8K and 64K tokens, "
                         "B=1 and B=32 (decode_models[_paged<P>].csv/.md)")
    ap.add_argument("--model", action="append", default=None, metavar="NAME",
                    help="with --models: only the models whose name contains NAME (repeatable)")
    ap.add_argument("--head-dim", type=int, default=128, choices=(64, 80, 96, 112, 128, 160, 192, 256),
                    help="head dim of every point (issue 5's targets are judged at 128 only); other values "
                         "write decode_d<D>[_paged<P>].csv/.md")
    ap.add_argument("--read-floor", default=None, metavar="PATH",
                    help="bench/read_floor binary (default: bin/read_floor beside the library's lib/)")
    ap.add_argument("--no-read-floor", action="store_true", help="judge the targets without the bare read")
    ap.add_argument("--doc", default=None, metavar="PAGE",
                    help="also write the table into PAGE (docs/PERFORMANCE.md) between its markers for the "
                         "block decode[_d<D>][_paged<P>] (bench/perf_doc.py)")
    ap.add_argument("--label", default="", help="with --doc: what was measured, e.g. the commit")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    ctx = ingot.Runtime(a.lib).context("cuda")  # --lib's libingot with --pack open, not the defaults
    ctx.open_pack(a.pack)
    ceiling = copy_ceiling()
    print(f"copy ceiling (read+write): {ceiling / 1e9:.0f} GB/s; device arch {ctx.arch}", flush=True)
    if a.models:
        return run_models(ctx, a, ceiling)
    if a.ragged:
        return run_ragged(ctx, a)

    points = [(1, 8, 2, L) for L in (1024, 4096, 16384, 65536, 262144, 1048576)]
    points += [(16, 32, 8, 8192), (64, 32, 8, 8192)]
    if a.quick:
        points = [(1, 8, 2, 4096), (1, 8, 2, 65536)]
    if a.points:
        points = [tuple(int(x) for x in p.split("x")) for p in a.points.split(",")]
    rows = []
    paged = a.paged
    if paged:
        points = [p for p in points if p[3] % paged == 0]
    hdr = (f"{'B':>3} {'Hq/Hkv':>6} {'L':>8} {'splits':>6} | {'ingot':>8} {'%ceil':>6} {'call':>7} {'floor':>6} |"
           + (f" {'contig':>8} |" if paged else "")
           + f" {'cuDNN':>8} {'%ceil':>6} | {'flash':>8} {'%ceil':>6} | {'vs best':>7}")
    D = a.head_dim
    print(f"head dim {D}\n" if D != 128 else "", end="")
    print(f"ingot on a paged cache, page size {paged}\n" if paged else "", end="")
    print(hdr, flush=True)
    for B, Hq, Hkv, L in points:
        r = point_done(bench_point(ctx, B, Hq, Hkv, L, D, a.reps, ceiling, a.calls, a.rounds, page_size=paged))
        rows.append(r)
        print(f"{B:>3} {Hq:>3}/{Hkv:<2} {L:>8} {r['splits']:>6} | {r['ingot_graph']:>6.2f}us {r['ingot_bw']*100:>5.1f}%"
              f" {r['ingot_call']:>5.1f}us {r['floor_graph']:>4.1f}us |"
              + (f" {r['contig_graph']:>6.2f}us |" if paged else "")
              + f" {r['cudnn_graph']:>6.2f}us"
              f" {r['cudnn_bw']*100:>5.1f}% | {r['flash_graph']:>6.2f}us {r['flash_bw']*100:>5.1f}% |"
              f" {r['speedup']:>6.2f}x ({r['speedup_lo']:.3f}-{r['speedup_hi']:.3f})", flush=True)

    bounds = ""
    if not paged and D == 128 and not a.no_read_floor:
        rf = a.read_floor or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(a.lib))), "bin",
                                           "read_floor")
        if os.access(rf, os.X_OK):
            bounds = targets.run_read_floor(rf, rows)
            if bounds:
                print("\nThe bare read of the same bytes (bench/read_floor):\n" + bounds, flush=True)
        else:
            print(f"\nread_floor: {rf} not found (cmake builds it where nvcc is; --read-floor PATH); "
                  "the targets are judged without the bare read", flush=True)
    judged = "" if paged or D != 128 else targets.markdown(targets.evaluate(rows))
    if judged:
        print("\nIssue 5's targets on this run:\n" + judged, flush=True)
    os.makedirs(a.out, exist_ok=True)
    stem = "decode" + (f"_d{D}" if D != 128 else "") + (f"_paged{paged}" if paged else "")
    keys = list(rows[0].keys())
    with open(os.path.join(a.out, f"{stem}.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    md_path = os.path.join(a.out, f"{stem}.md")
    with open(md_path, "w") as f:
        f.write((f"head dim {D}; " if D != 128 else "")
                + f"copy ceiling {ceiling / 1e9:.0f} GB/s (read + write), GPU time by CUDA-graph replay; "
                "per call = CUDA events around each call; floor = the same plan with valid length 0"
                + (f"; ingot reads a paged cache (page size {paged}, random page table), contig = its "
                   "contiguous plan on the same values" if paged else "") + "\n\n")
        f.write("| B | Hq/Hkv | L | splits | ingot | % ceiling | per call | floor | "
                + ("contig | " if paged else "")
                + f"cuDNN | % | flash | % | best peer / ingot | range over {a.rounds} rounds |\n")
        f.write("|---|---|---|---|---|---|---|---|" + ("---|" if paged else "") + "---|---|---|---|---|---|\n")
        for r in rows:
            f.write(f"| {r['B']} | {r['Hq']}/{r['Hkv']} | {r['L']} | {r['splits']} | {r['ingot_graph']:.2f} us | "
                    f"{r['ingot_bw']*100:.1f}% | {r['ingot_call']:.1f} us | {r['floor_graph']:.2f} us | "
                    + (f"{r['contig_graph']:.2f} us | " if paged else "")
                    + f"{r['cudnn_graph']:.2f} us | {r['cudnn_bw']*100:.1f}% | {r['flash_graph']:.2f} us | "
                    f"{r['flash_bw']*100:.1f}% | {r['speedup']:.2f}x | {r['speedup_lo']:.3f}-{r['speedup_hi']:.3f} |\n")
        if judged:
            f.write("\n" + judged)
        if bounds:
            f.write("\nThe bare read of the same bytes (bench/read_floor; a row per byte count):\n\n" + bounds)
    if a.doc:
        import datetime

        import perf_doc
        with open(md_path) as f:
            table = f.read()
        when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        head = f"Measured {when}" + (f", {a.label}" if a.label else "") + f" (`bench/decode.py --doc`, block {stem}):"
        try:
            perf_doc.update(a.doc, stem, head + "\n\n" + table)
        except perf_doc.DocError as e:
            print(f"--doc {a.doc}: {e}; the page was not changed", file=sys.stderr)
            return 2
        print(f"\n{a.doc}: block {stem} rewritten", flush=True)
    if paged or D != 128:
        return 0
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        seed = [r for r in rows if r["B"] == 1]
        if seed:
            xs = [r["L"] for r in seed]
            plt.figure(figsize=(7, 4.5))
            for key, label in (("ingot", "ingot"), ("cudnn", "SDPA cuDNN"), ("flash", "SDPA flash")):
                plt.plot(xs, [r[f"{key}_bw"] * 100 for r in seed], marker="o", label=label)
            plt.xscale("log", base=2)
            plt.xlabel("L (tokens; capacity = L)")
            plt.ylabel("% of copy bandwidth")
            plt.title("bf16 decode, B=1, Hq=8, Hkv=2, D=128, H200 (graph replay)")
            plt.grid(True, alpha=0.3)
            plt.legend()
            plt.tight_layout()
            plt.savefig(os.path.join(a.out, "decode.png"), dpi=120)
    except ImportError:
        print("matplotlib missing: no plot", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
