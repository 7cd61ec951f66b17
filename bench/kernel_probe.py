"""Kernel probe: runs packaged sm_90 cubins directly through CuPy (no ingot
runtime), checks them against a float64 torch reference and times the seed
shape against torch SDPA. A development tool for the kernels alone; the real
benchmark (bench/decode.py) and the GPU tests go through the runtime.

Usage (on the GPU machine): python3 bench/kernel_probe.py PACKDIR [--time]
"""

import argparse
import ctypes
import json
import math
import os
import re
import sys

import cupy as cp
import decode  # bench/decode.py: this folder is sys.path[0] when run as a script
import numpy as np
import torch

DT = {"bf16": torch.bfloat16, "fp16": torch.float16}


def _limits():
    """The constants the kernels and their planning share (templates/ingot_attention_decode_limits.h)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "templates",
                        "ingot_attention_decode_limits.h")
    with open(path, encoding="utf-8") as f:
        return {m[0]: int(m[1]) for m in re.findall(r"#define (INGOT_AD_\w+) (\d+)\n", f.read())}


LIMITS = _limits()


def partials_floats(B, hkv, splits, rows_total=4, D=128):
    """The kernels' workspace layout (workspace_block): per (sequence, KV head) the lse
    partials, padded to 4 floats, then the O partials."""
    return B * hkv * ((rows_total * splits + 3) // 4 * 4 + rows_total * splits * D)


def probe_workspace(B, hkv, splits, rows_total=4, D=128):
    """A workspace for the partials of `splits` segments."""
    return torch.empty(partials_floats(B, hkv, splits, rows_total, D), dtype=torch.float32, device="cuda")


def plan_splits(meta, B, hkv, capacity, cus=132, ctas_per_cu=2, min_tiles=1, wave=32):
    """The split count of an earlier dispatch policy (fixed CTAs per CU), kept for the probes
    that sweep it; the shipped policy is in runtime/src/families/attention_decode/ingot_attention_decode_plan.h."""
    rows_total = meta["group"] * meta["max_sq"]
    row_blocks = -(-rows_total // meta["rows"])
    tile = meta["waves"] * meta["tokens_per_wave"]
    splits = -(-cus * ctas_per_cu // (B * hkv * row_blocks))
    splits = min(splits, -(-capacity // (tile * min_tiles)), meta["max_splits"], 256)
    return max(1, splits), row_blocks


class _LaunchAttr(ctypes.Structure):  # CUlaunchAttribute (cuda.h): id, pad, 64-byte value
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_uint32 * 16)]


class _LaunchConfig(ctypes.Structure):  # CUlaunchConfig
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("smem", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(_LaunchAttr)), ("nattrs", ctypes.c_uint)]


_CU = None
_CTYPE = {np.uint64: ctypes.c_uint64, np.int64: ctypes.c_int64, np.int32: ctypes.c_int32, np.float32: ctypes.c_float}


def launch_ex(fn, grid, block, args, stream, pdl=False, smem=0):
    """cuLaunchKernelEx through ctypes, programmatic (as libingot launches on sm_90) or not,
    with smem bytes of dynamic shared memory."""
    global _CU
    if _CU is None:
        _CU = ctypes.CDLL("libcuda.so.1")
    vals = [_CTYPE[type(a)](a) for a in args]
    params = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in vals])
    attr = _LaunchAttr()
    attr.id = 6  # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    attr.value[0] = 1
    cfg = _LaunchConfig((ctypes.c_uint * 3)(*grid), (ctypes.c_uint * 3)(*block), smem, ctypes.c_void_p(stream),
                        ctypes.pointer(attr), 1 if pdl else 0)
    rc = _CU.cuLaunchKernelEx(ctypes.byref(cfg), ctypes.c_void_p(fn.kernel.ptr), params, None)
    assert rc == 0, f"cuLaunchKernelEx (grid {grid}): CUresult {rc}"


class Kernel:
    def __init__(self, pack, kd):
        obj = kd["kernel_source"]["objects"]["sm_90"]
        self.mod = cp.RawModule(path=os.path.join(pack, obj["path"]))
        syms = kd["kernel_source"]["symbols"]
        self.split = self.mod.get_function(syms["split"])
        self.merge = self.mod.get_function(syms["merge"])
        # Dynamic shared memory each entry point is launched with (the rings past 48 KiB),
        # after the function's opt-in, as libingot does.
        dyn = obj.get("dynamic_lds", {})
        self.split_smem, self.merge_smem = int(dyn.get("split", 0)), int(dyn.get("merge", 0))
        for fn, n in ((self.split, self.split_smem), (self.merge, self.merge_smem)):
            if n:
                fn.max_dynamic_shared_size_bytes = n
        self.meta = kd["metadata"]
        self.name = kd["name"]
        # knob `trace` (instance name suffix x): records past the workspace's partials
        self.traced = re.search(r"_tcs?\d*x$", self.name) is not None

    def grids(self, B, hkv, s):
        """Split and merge grid sizes (x, y, z) as the dispatch stub plans them."""
        m = self.meta
        rows_total = m["group"] * m["max_sq"]
        rb = -(-rows_total // m["rows"])
        D = m["head_dim"]
        mt = LIMITS["INGOT_AD_MERGE_WAVES"] * 32
        mx = (-(-rows_total * (D // 4) // mt) if s <= LIMITS["INGOT_AD_COMPACT_MERGE_SPLITS"]
              else rows_total * (D // 32))
        return (s * rb * hkv, 1, B), (mx, hkv, B)

    def trace_words(self, B, hkv, s):
        """The trace records' 64-bit words (templates/ingot_ad_trace.h: trace_base): 16 per split workgroup, 8 per merge one."""
        (sx, _, _), (mx, _, _) = self.grids(B, hkv, s)
        return 16 * sx * B, 8 * mx * hkv * B

    def workspace_floats(self, B, hkv, s):
        """The partials, and the trace records when traced."""
        m = self.meta
        partials = partials_floats(B, hkv, s, m["group"] * m["max_sq"], m["head_dim"])
        return partials + (2 * sum(self.trace_words(B, hkv, s)) if self.traced else 0)

    def trace_records(self, ws, B, hkv, s):
        """The split records [n, 16] and merge records [m, 8] (uint64) of a traced kernel's workspace."""
        m = self.meta
        base = partials_floats(B, hkv, s, m["group"] * m["max_sq"], m["head_dim"])
        split_words, merge_words = self.trace_words(B, hkv, s)
        words = ws[base:base + 2 * (split_words + merge_words)].view(torch.int64).cpu().numpy().view(np.uint64)
        return words[:split_words].reshape(-1, 16), words[split_words:].reshape(-1, 8)

    def run(self, q, k, v, o, lse, lens, ptable, causal, capacity, page_size, splits=None, ws=None,
            stream=None, merge=True, pdl=False):
        m = self.meta
        B, Hq, Sq, D = q.shape
        hkv = k.shape[2]
        s, _ = plan_splits(m, B, hkv, capacity)
        if splits is not None:
            s = splits
        if s > 1 and (ws is None or ws.numel() < self.workspace_floats(B, hkv, s)):
            ws = torch.empty(self.workspace_floats(B, hkv, s), dtype=torch.float32, device="cuda")
        i64, i32 = np.int64, np.int32
        ks, vs, qs, os_ = k.stride(), v.stride(), q.stride(), o.stride()
        pt_stride = ptable.stride(0) if ptable is not None else 0
        flags = (1 if causal else 0) | (2 if lse is not None else 0)
        args = (q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
                lse.data_ptr() if lse is not None else 0, lens.data_ptr(),
                ptable.data_ptr() if ptable is not None else 0, ws.data_ptr() if ws is not None and s > 1 else 0,
                i64(qs[0]), i64(qs[1]), i64(qs[2]), i64(ks[0]), i64(ks[1]), i64(ks[2]),
                i64(vs[0]), i64(vs[1]), i64(vs[2]), i64(os_[0]), i64(os_[1]), i64(os_[2]),
                i64(pt_stride), i32(capacity), i32(page_size), i32(Sq), i32(s), i32(hkv), i32(flags),
                np.float32(1.0 / math.sqrt(D)))
        args = tuple(np.uint64(a) if isinstance(a, int) else a for a in args)
        threads = m["waves"] * 32
        st = stream or cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
        # the merge's two modes, as the dispatch stub plans them
        split_grid, merge_grid = self.grids(B, hkv, s)
        grids = [(self.split, split_grid, (threads, 1, 1), self.split_smem)]
        if s > 1 and merge:
            grids.append((self.merge, merge_grid, (LIMITS["INGOT_AD_MERGE_WAVES"] * 32, 1, 1), self.merge_smem))
        for fn, grid, block, smem in grids:
            if pdl:  # programmatic, through cuLaunchKernelEx, as libingot launches on sm_90
                launch_ex(fn, grid, block, args, st.ptr, pdl=True, smem=smem)
            else:
                with st:
                    fn(grid, block, args, shared_mem=smem)
        return s


def reference(q, k, v, lens, causal, ptable=None, page_size=0):
    """float64 reference; k, v contiguous [B, cap, Hkv, D] (or paged, gathered here)."""
    B, Hq, Sq, D = q.shape
    out = torch.zeros(B, Hq, Sq, D, dtype=torch.float64, device=q.device)
    lse = torch.full((B, Hq, Sq), -math.inf, dtype=torch.float64, device=q.device)
    for b in range(B):
        L = int(lens[b])
        if ptable is not None:
            pages = ptable[b, : -(-L // page_size)].long()
            kb = k[pages].reshape(-1, k.shape[2], D)[:L]
            vb = v[pages].reshape(-1, v.shape[2], D)[:L]
        else:
            kb, vb = k[b, :L], v[b, :L]
        hkv = kb.shape[1]
        g = Hq // hkv
        kk = kb.double().repeat_interleave(g, dim=1).permute(1, 0, 2)  # [Hq, L, D]
        vv = vb.double().repeat_interleave(g, dim=1).permute(1, 0, 2)
        s = torch.einsum("hsd,hld->hsl", q[b].double(), kk) / math.sqrt(D)
        if causal:
            pos = torch.arange(L, device=q.device)
            lim = L - Sq + 1 + torch.arange(Sq, device=q.device)
            s = s.masked_fill(pos[None, None, :] >= lim[None, :, None], -math.inf)
        l = torch.logsumexp(s, dim=-1)
        p = torch.exp(s - l[..., None]).nan_to_num(0.0)
        out[b] = torch.einsum("hsl,hld->hsd", p, vv)
        lse[b] = l
    return out, lse


def check(kern, B, Hq, Hkv, Sq, cap, causal, paged, page_size, with_lse, poison_tail, splits=None):
    m = kern.meta
    D = m["head_dim"]
    dt = DT[m["dtype"]]
    q = torch.randn(B, Hq, Sq, D, device="cuda").to(dt)
    lens = torch.randint(0, cap + 1, (B,), device="cuda", dtype=torch.int32)
    lens[0] = cap
    if B > 1:
        lens[1] = 1
    if paged:
        npages = B * (cap // page_size)
        perm = torch.randperm(npages, device="cuda").int()
        ptable = perm.reshape(B, cap // page_size).contiguous()
        k = torch.randn(npages, page_size, Hkv, D, device="cuda").to(dt)
        v = torch.randn(npages, page_size, Hkv, D, device="cuda").to(dt)
    else:
        ptable = None
        k = torch.randn(B, cap, Hkv, D, device="cuda").to(dt)
        v = torch.randn(B, cap, Hkv, D, device="cuda").to(dt)
    if poison_tail and not paged:
        for b in range(B):
            L = int(lens[b])
            k[b, L:] = float("nan")
            v[b, L:] = float("nan")
    if poison_tail and paged:
        for b in range(B):
            L = int(lens[b])
            used = -(-L // page_size)
            ptable[b, used:] = 0x7FFFFFF0  # garbage page ids: must never be read
            # the unused part of the last page holds NaN
            if L % page_size:
                pg = int(ptable[b, used - 1])
                k[pg, L % page_size:] = float("nan")
                v[pg, L % page_size:] = float("nan")
    o = torch.full((B, Hq, Sq, D), float("nan"), device="cuda").to(dt)
    lse = torch.full((B, Hq, Sq), float("nan"), device="cuda") if with_lse else None
    s = kern.run(q, k, v, o, lse, lens, ptable, causal, cap, page_size if paged else 0, splits=splits)
    torch.cuda.synchronize()
    ref, rlse = reference(q, k, v, lens.cpu(), causal, ptable, page_size)
    err = (o.double() - ref).abs()
    tol = 0.015 + 0.015 * ref.abs()
    ok = bool((err <= tol).all()) and not torch.isnan(o).any()
    if with_lse:
        fin = torch.isfinite(rlse)
        lerr = (lse.double() - rlse)[fin].abs().max().item() if fin.any() else 0.0
        ok = ok and lerr < 1e-3 and bool((lse[~fin] == -math.inf).all())
    else:
        lerr = 0.0
    return ok, err.max().item(), lerr, s


def buffer_sets(B, hq, hkv, L, nbuf=None, D=128):
    """Fresh bf16 inputs: nbuf sets of q [B, hq, 1, D] and token-major K, V [B, L, hkv, D],
    enough sets (by default) that the KV cache is not served from L2; o; the KV bytes."""
    kv_bytes = 2 * B * L * hkv * D * 2
    if nbuf is None:
        nbuf = int(max(2, min(256, math.ceil(4 * decode.L2_BYTES / kv_bytes))))
    bf = dict(device="cuda", dtype=torch.bfloat16)
    qs = [torch.randn(B, hq, 1, D, **bf) for _ in range(nbuf)]
    ks = [torch.randn(B, L, hkv, D, **bf) for _ in range(nbuf)]
    vs = [torch.randn(B, L, hkv, D, **bf) for _ in range(nbuf)]
    return nbuf, qs, ks, vs, torch.empty(B, hq, 1, D, **bf), kv_bytes


def time_graph(fn, nbuf, reps=20, calls=20):
    """decode.py's graph-replay timing, after an eager warm-up (module loads stay out of the capture)."""
    for i in range(nbuf):
        fn(i)
    torch.cuda.synchronize()
    return decode.time_graph(fn, nbuf, reps, max(calls, nbuf))


def bench_seed(pack, kdps, Ls, name="attention_decode_bf16_d128_g4_sq1_contig_w4t16_tc"):
    kd = next(k for k in kdps if k["name"] == name)
    kern = Kernel(pack, kd)
    rows = []
    for L in Ls:
        nbuf, qs, ks, vs, o, kv_bytes = buffer_sets(1, 8, 2, L)
        lens = torch.full((1,), L, device="cuda", dtype=torch.int32)
        s, _ = plan_splits(kern.meta, 1, 2, L)
        ws = probe_workspace(1, 2, 264)

        def run_ingot_with(splits):
            def f(i):
                kern.run(qs[i], ks[i], vs[i], o, None, lens, None, False, L, 0, ws=ws, splits=splits)
            return f
        run_ingot = run_ingot_with(s)

        kt = [k.transpose(1, 2) for k in ks]  # [B, Hkv, L, D] views for SDPA
        vt = [v.transpose(1, 2) for v in vs]

        def sdpa(backend):
            from torch.nn.attention import sdpa_kernel
            def f(i):
                with sdpa_kernel(backend):
                    torch.nn.functional.scaled_dot_product_attention(qs[i], kt[i], vt[i], enable_gqa=True)
            return f

        from torch.nn.attention import SDPBackend
        res = {"L": L, "splits": s}
        cands = [("ingot", run_ingot), ("cudnn", sdpa(SDPBackend.CUDNN_ATTENTION)),
                 ("flash", sdpa(SDPBackend.FLASH_ATTENTION))]
        for sp in (16, 66, 132, 198, 256, 264):
            if sp != s and sp * 64 <= L:
                cands.append((f"s{sp}", run_ingot_with(sp)))
        for name, fn in cands:
            try:
                t = time_graph(fn, nbuf)
                res[name] = t
            except Exception as e:  # a peer that cannot run this shape
                res[name] = float("nan")
                print(f"  {name} L={L}: {type(e).__name__}: {str(e)[:120]}")
        res["bw_frac"] = kv_bytes / (res["ingot"] * 1e-6) / 4.281e12
        rows.append(res)
        sweep = " ".join(f"{k}={v:.1f}" for k, v in res.items() if k.startswith("s") and k != "splits")
        print(f"L={L:>8} splits={s:>3} ingot {res['ingot']:7.2f} us ({res['bw_frac']*100:5.1f}%)  "
              f"cudnn {res['cudnn']:7.2f}  flash {res['flash']:7.2f}  sweep: {sweep}", flush=True)
        del qs, ks, vs, kt, vt
        torch.cuda.empty_cache()
    return rows


def check_experiment(kern, B, cap, causal, splits=None):
    """One reference check of an experiment kernel (8/2 heads, Sq 1, LSE, poisoned
    tail; paged when the kernel is), printed as one line."""
    paged = kern.meta["kv_layout"] == "paged"
    ok, err, lerr, s = check(kern, B, 8, 2, 1, cap, causal, paged, 16, True, True, splits)
    print(f"{'ok ' if ok else 'FAIL'} {kern.name:52} B={B} cap={cap} causal={causal:d} splits={s} "
          f"max_err={err:.5f} lse_err={lerr:.2e}", flush=True)
    return ok


def bench_experiments(pack, Ls=(4096, 16384, 65536, 262144, 1048576), B=1, hq=8, hkv=2, check_first=True):
    kdp = json.load(open(os.path.join(pack, "experiments.kdp.json")))
    kerns = [Kernel(pack, kd) for kd in kdp["kernelDescriptors"]]
    for kern in (kerns if check_first else []):
        for (Bc, cap, causal, splits) in ((2, 1024, True, None), (3, 4096, False, 1), (1, 65536, True, None)):
            check_experiment(kern, Bc, cap, causal, splits)
    kerns = [k for k in kerns if k.meta["kv_layout"] == "contiguous"]  # timed on contiguous caches
    for L in Ls:
        nbuf, qs, ks, vs, o, kv_bytes = buffer_sets(B, hq, hkv, L)
        lens = torch.full((B,), L, device="cuda", dtype=torch.int32)
        line = []
        for kern in kerns:
            best = None
            tile = kern.meta["waves"] * kern.meta["tokens_per_wave"]
            cands = {1} | {max(1, min(-(-tot // (B * hkv)), -(-L // tile), 256)) for tot in (128, 264, 396, 528)}
            ws = probe_workspace(B, hkv, max(cands))
            for s in sorted(cands):
                t = time_graph(lambda i: kern.run(qs[i], ks[i], vs[i], o, None, lens, None, False, L, 0,
                                                  ws=ws, splits=s), nbuf)
                if best is None or t < best[0]:
                    best = (t, s)
            line.append(f"{kern.name.split('_contig_')[1]}={best[0]:.1f}us/{kv_bytes / best[0] / 4.281e6 * 100:.0f}%"
                        f"(s{best[1]})")
        print(f"B={B} {hq}/{hkv} L={L:>8} " + "  ".join(line), flush=True)
        del qs, ks, vs
        torch.cuda.empty_cache()


def ab_paths(pack, Ls, lib, kname, reps=30):
    """The same kernel on the same buffers, launched by libingot's plan/execute (the C
    API through ingot.runtime, without ingot.DecodePlan's Python checks: the launch
    path itself) and directly (CuPy), alternately: a difference is the launch path's,
    not the kernel's."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "generator"))
    from ingot.runtime import Runtime
    ctx = Runtime(lib).context("cuda")
    ctx.open_pack(pack)
    kdp = json.load(open(os.path.join(pack, "attention_decode.kdp.json")))
    kern = Kernel(pack, next(k for k in kdp["kernelDescriptors"] if k["name"] == kname))
    for L in Ls:
        nbuf, qs, ks, vs, o, kv_bytes = buffer_sets(1, 8, 2, L)
        lens = torch.full((1,), L, device="cuda", dtype=torch.int32)
        plan = ctx.plan(qs[0], ks[0], vs[0], o, lens, capacity=L)
        ws = torch.empty(max(plan.workspace_size // 4, 1), device="cuda", dtype=torch.float32)
        bufs = [plan.buffers(qs[i], ks[i], vs[i], o, lens) for i in range(nbuf)]
        st = lambda: torch.cuda.current_stream().cuda_stream  # noqa: E731
        rt = lambda i: plan.execute(bufs[i], ws, st())  # noqa: E731
        direct = lambda i: kern.run(qs[i], ks[i], vs[i], o, None, lens, None, False, L, 0, ws=ws,  # noqa: E731
                                    splits=plan.num_splits)
        direct_pdl = lambda i: kern.run(qs[i], ks[i], vs[i], o, None, lens, None, False, L, 0, ws=ws,  # noqa: E731
                                        splits=plan.num_splits, pdl=True)
        out = []
        # direct: CuPy launches, not programmatic; direct-pdl: programmatic, as libingot launches;
        # the runtime again last, for the drift over the four
        for name, fn in (("runtime", rt), ("direct", direct), ("direct-pdl", direct_pdl), ("runtime again", rt)):
            out.append(f"{name} graph {decode.time_graph(fn, nbuf, reps):.1f} "
                       f"call {decode.time_per_call(fn, nbuf, reps):.1f}")
        # The same values inside one large allocation (a serving KV pool is one).
        pool = torch.empty(2 * nbuf * L * 2 * 128 + (1 << 20), device="cuda", dtype=torch.bfloat16)
        n = L * 2 * 128
        kb = [pool[2 * i * n:(2 * i + 1) * n].view(1, L, 2, 128) for i in range(nbuf)]
        vb = [pool[(2 * i + 1) * n:(2 * i + 2) * n].view(1, L, 2, 128) for i in range(nbuf)]
        for i in range(nbuf):
            kb[i].copy_(ks[i])
            vb[i].copy_(vs[i])
        bufs2 = [plan.buffers(qs[i], kb[i], vb[i], o, lens) for i in range(nbuf)]
        rt2 = lambda i: plan.execute(bufs2[i], ws, st())  # noqa: E731
        out.append(f"runtime-pool graph {decode.time_graph(rt2, nbuf, reps):.1f}")
        for calls in (nbuf, 16):
            out.append(f"runtime calls/graph {calls}: {decode.time_graph(rt, nbuf, reps, calls=calls):.1f}")
        print(f"A/B L={L} kernel={plan.kernel} splits={plan.num_splits} nbuf={nbuf}: " + "; ".join(out), flush=True)
        del qs, ks, vs, bufs, bufs2, kb, vb, pool
        torch.cuda.empty_cache()
        r = decode.bench_point(ctx, 1, 8, 2, L, 128, reps, 4.25e12)
        print(f"   decode.bench_point L={L}: ingot graph {r['ingot_graph']:.1f} call {r['ingot_call']:.1f} "
              f"floor {r['floor_graph']:.1f} cudnn {r['cudnn_graph']:.1f}", flush=True)


def floor_parts(pack, kname, L=16384, calls=20):
    """Where the fixed cost goes: split+merge and split alone, with the valid
    length L and 0, for several split counts (direct launches, no PDL)."""
    kdp = json.load(open(os.path.join(pack, "attention_decode.kdp.json")))
    kern = Kernel(pack, next(k for k in kdp["kernelDescriptors"] if k["name"] == kname))
    nbuf, qs, ks, vs, o, _ = buffer_sets(1, 8, 2, L, nbuf=16)
    ws = probe_workspace(1, 2, 264)
    full = torch.full((1,), L, device="cuda", dtype=torch.int32)
    zero = torch.zeros(1, device="cuda", dtype=torch.int32)
    for s in (1, 16, 33, 66, 132, 264):
        out = []
        for lname, lens in (("L", full), ("0", zero)):
            for merge in (True, False):
                t = time_graph(lambda i: kern.run(qs[i], ks[i], vs[i], o, None, lens, None, False, L, 0,
                                                  splits=s, ws=ws, merge=merge), nbuf, 30, calls)
                out.append(f"{'split+merge' if merge else 'split'} len={lname} {t:.2f}")
        print(f"floor L={L} splits={s}: " + "; ".join(out), flush=True)


def compare_packs(pack, other, kname, Ls, reps=30):
    """The same kernel from two builds (this pack and OTHER), direct launches on the
    same buffers, alternately: valid length L, L/2 + 1 and 0."""
    kd = lambda p: next(k for k in json.load(open(os.path.join(p, "attention_decode.kdp.json")))  # noqa: E731
                        ["kernelDescriptors"] if k["name"] == kname)
    kerns = (("this", Kernel(pack, kd(pack))), ("other", Kernel(other, kd(other))))
    for L in Ls:
        nbuf, qs, ks, vs, o, kv_bytes = buffer_sets(1, 8, 2, L)
        ws = probe_workspace(1, 2, 264)
        out = []
        for n in (L, L // 2 + 1, 0):
            lens = torch.full((1,), n, device="cuda", dtype=torch.int32)
            for rnd in range(2):
                for name, kern in kerns:
                    t = time_graph(lambda i: kern.run(qs[i], ks[i], vs[i], o, None, lens, None, False, L, 0, ws=ws),
                                   nbuf, reps)
                    out.append(f"{name}[len {n}] {t:.2f}")
        print(f"compare L={L}: " + "; ".join(out), flush=True)
        del qs, ks, vs
        torch.cuda.empty_cache()


def layouts(pack, exp_pack, shapes, reps=30):
    """DRAM locality: the same kernels on a token-major cache [B, L, Hkv, D] (the
    cache ingot is given) and on a head-major one [B, Hkv, L, D] (what SDPA reads),
    best over split counts, with cuDNN on the head-major copy for reference."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    kdp = json.load(open(os.path.join(exp_pack, "experiments.kdp.json")))
    kerns = [Kernel(exp_pack, kd) for kd in kdp["kernelDescriptors"]
             if "_contig_" in kd["name"] and kd["name"].endswith(("w4t16_tc", "w2t16_tcs2"))]
    for (B, hq, hkv, L) in shapes:
        nbuf, qs, kt, vt, o, kv_bytes = buffer_sets(B, hq, hkv, L)
        kh = [k.transpose(1, 2).contiguous() for k in kt]  # [B, Hkv, L, D]
        vh = [v.transpose(1, 2).contiguous() for v in vt]
        lens = torch.full((B,), L, device="cuda", dtype=torch.int32)
        out = []
        for kern in kerns:
            tile = kern.meta["waves"] * kern.meta["tokens_per_wave"]
            cands = sorted({1} | {max(1, min(-(-tot // (B * hkv)), -(-L // tile), 256)) for tot in (128, 264, 396, 528)})
            ws = probe_workspace(B, hkv, max(cands))
            for lname, ks, vs in (("token-major", kt, vt), ("head-major", [k.transpose(1, 2) for k in kh],
                                                            [v.transpose(1, 2) for v in vh])):
                best = min((time_graph(lambda i: kern.run(qs[i], ks[i], vs[i], o, None, lens, None, False, L, 0,
                                                          ws=ws, splits=s), nbuf, reps), s) for s in cands)
                out.append(f"{kern.name.split('_contig_')[1]} {lname} {best[0]:.1f}us(s{best[1]})")
        def sdpa(i):
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                torch.nn.functional.scaled_dot_product_attention(qs[i], kh[i], vh[i], enable_gqa=True)
        out.append(f"cudnn {time_graph(sdpa, nbuf, reps):.1f}us")
        print(f"layout B={B} {hq}/{hkv} L={L} ({kv_bytes / 1e6:.0f} MB): " + "; ".join(out), flush=True)
        del qs, kt, vt, kh, vh
        torch.cuda.empty_cache()


_swept = set()


def sweep(exp_pack, spec, reps=30, suffixes=("w4t16_tc", "w2t16_tcs2"), pdl=False):
    """Split counts for one shape, the experiment kernels whose names end with one of
    `suffixes`: spec 'B,Hq,Hkv,L:s1/s2/...'."""
    shape, splits = spec.split(":")
    B, hq, hkv, L = (int(x) for x in shape.split(","))
    splits = [int(x) for x in splits.split("/")]
    kdp = json.load(open(os.path.join(exp_pack, "experiments.kdp.json")))
    kerns = [Kernel(exp_pack, kd) for kd in kdp["kernelDescriptors"]
             if "_contig_" in kd["name"] and kd["name"].endswith(tuple(suffixes))]
    for kern in kerns:  # checked before any is timed (once per process)
        if kern.name not in _swept:
            check_experiment(kern, 2, 4096, True)
            _swept.add(kern.name)
    nbuf, qs, ks, vs, o, kv_bytes = buffer_sets(B, hq, hkv, L)
    lens = torch.full((B,), L, device="cuda", dtype=torch.int32)
    ws = probe_workspace(B, hkv, max(splits))
    zero = torch.zeros_like(lens)
    for kern in kerns:
        def timed(sp, ln=lens, merge=True):
            return time_graph(lambda i: kern.run(qs[i], ks[i], vs[i], o, None, ln, None, False, L, 0, ws=ws,
                                                 splits=sp, merge=merge, pdl=pdl), nbuf, reps)
        ts = [f"s{sp}={timed(sp):.2f}" for sp in splits]
        ts += [f"s{sp}/split-only={timed(sp, merge=False):.1f}" for sp in splits if sp > 1]
        ts += [f"s{sp}/floor={timed(sp, ln=zero):.2f}" for sp in splits if pdl]
        print(f"sweep B={B} {hq}/{hkv} L={L} {kern.name.split('_contig_')[1]}: " + " ".join(ts), flush=True)


TRACED_KERNELS = ("w4t16_tcx", "w2t16_tcs2x")  # --trace's default: the traced 4-wave kernel and ring


def trace(exp_pack, spec, suffixes=TRACED_KERNELS, calls=20):
    """Where a call's time goes, workgroup by workgroup (kernels with the knob `trace`):
    spec 'B,Hq,Hkv,L:splits'. `calls` programmatic calls, as libingot launches them, but
    from Python: 70-300 us apart on the H200, so the hand-offs between calls are the host's
    unless a split outlasts it (1M). Two workspaces alternate so that the last two calls'
    records survive; prints, for the last call, each phase's spread over its workgroups
    (global timer, us) and the hand-offs between the grids."""
    shape, s = spec.split(":")
    B, hq, hkv, L = (int(x) for x in shape.split(","))
    S = int(s)
    kdp = json.load(open(os.path.join(exp_pack, "experiments.kdp.json")))
    kerns = [Kernel(exp_pack, kd) for kd in kdp["kernelDescriptors"]
             if "_contig_" in kd["name"] and kd["name"].endswith(tuple(suffixes))]
    nbuf, qs, ks, vs, o, kv_bytes = buffer_sets(B, hq, hkv, L)
    lens = torch.full((B,), L, device="cuda", dtype=torch.int32)
    pct = lambda x: "/".join(f"{np.percentile(x, p) / 1e3:.2f}" for p in (0, 50, 90, 100))
    for kern in kerns:
        assert kern.traced and S > 1, f"{kern.name}: --trace needs a traced kernel and 2 or more segments"
        if not check_experiment(kern, 2, 4096, True):
            continue
        wss = [torch.zeros(kern.workspace_floats(B, hkv, S), dtype=torch.float32, device="cuda") for _ in range(2)]
        for _ in range(3):  # the first rounds warm up; the records are the last round's
            for c in range(calls):
                i = c % nbuf
                kern.run(qs[i], ks[i], vs[i], o, None, lens, None, False, L, 0, ws=wss[c % 2], splits=S, pdl=True)
        torch.cuda.synchronize()
        (px, pm), (x, m) = (kern.trace_records(wss[c % 2], B, hkv, S) for c in (calls - 2, calls - 1))
        x, m, px, pm = (a.astype(np.int64) for a in (x, m, px, pm))
        t0 = x[:, 3].min()  # the last call's first release from its wait
        ns = np.unique(np.concatenate([x[:, 2:8].ravel(), m[:, 2:5].ravel()]))
        ghz = np.median((x[:, 12] - x[:, 10]) / np.maximum(x[:, 6] - x[:, 4], 1))
        per_sm = np.bincount(x[:, 0].astype(np.int64))
        print(f"trace {kern.name.split('_contig_')[1]} B={B} {hq}/{hkv} L={L} S={S}: {len(x)} split and "
              f"{len(m)} merge workgroups, {kv_bytes / 1e6:.1f} MB; timer step {np.diff(ns).min() if len(ns) > 1 else 0} ns, "
              f"SM clock {ghz:.2f} GHz; workgroups per SM {per_sm[per_sm > 0].min()}..{per_sm.max()} on "
              f"{(per_sm > 0).sum()} SMs", flush=True)
        print(f"  period: this call's first release - the previous call's: {(t0 - px[:, 3].min()) / 1e3:.2f} us; "
              f"previous merge's last end -> this split's first release {(t0 - pm[:, 4].max()) / 1e3:.2f} us", flush=True)
        rows = [("split start (from the first release)", x[:, 2] - t0), ("split release from the wait", x[:, 3] - t0),
                ("length known - release", x[:, 4] - x[:, 3]), ("first chunk done - length known", x[:, 5] - x[:, 4]),
                ("loop end - length known", x[:, 6] - x[:, 4]), ("end - loop end", x[:, 7] - x[:, 6]),
                ("split end (from the first release)", x[:, 7] - t0),
                ("merge start (from the last split end)", m[:, 2] - x[:, 7].max()),
                ("merge release (from the last split end)", m[:, 3] - x[:, 7].max()),
                ("merge end (from the last split end)", m[:, 4] - x[:, 7].max())]
        for label, v in rows:
            print(f"  {label:42} us min/median/p90/max {pct(v)}", flush=True)
        ends = np.array([x[x[:, 0] == sm, 7].max() for sm in np.unique(x[:, 0])]) - t0
        print(f"  {'last end per SM (from the first release)':42} us min/median/p90/max {pct(ends)}; "
              f"K and V over the split's span (first release to last end): "
              f"{kv_bytes / max(1, x[:, 7].max() - t0) / 1e3:.2f} TB/s", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pack")
    ap.add_argument("--time", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--experiments", default=None, help="experiment pack folder to time")
    ap.add_argument("--lengths", default="1024,4096,16384,65536,262144,1048576",
                    help="comma-separated L values timed by --time and --experiments")
    ap.add_argument("--kernel", default="attention_decode_bf16_d128_g4_sq1_contig_w4t16_tc",
                    help="the pack kernel --time runs")
    ap.add_argument("--no-check", action="store_true", help="skip checking every pack kernel")
    ap.add_argument("--ab", default=None, metavar="LIB",
                    help="time --kernel through libingot (LIB) and directly on the same buffers, then exit")
    ap.add_argument("--batched", action="store_true", help="--experiments also at B 16 and 64 (32/8, 8K)")
    ap.add_argument("--sweep", action="append", default=[], metavar="B,HQ,HKV,L:S1/S2/..",
                    help="time the experiment kernels at these split counts, then exit")
    ap.add_argument("--kernels", default="w4t16_tc,w2t16_tcs2", metavar="SUFFIX,..",
                    help="--sweep times the experiment kernels whose names end with these")
    ap.add_argument("--layouts", action="store_true", help="token-major against head-major caches "
                    "(kernels of --experiments), then exit")
    ap.add_argument("--compare", default=None, metavar="PACK", help="time --kernel against the one in PACK, then exit")
    ap.add_argument("--floor", action="store_true", help="time the fixed cost's parts, then exit")
    ap.add_argument("--trace", action="append", default=[], metavar="B,HQ,HKV,L:S",
                    help="per-workgroup phases of the traced experiment kernels (--kernels, default "
                    "w4t16_tcx,w2t16_tcs2x), then exit")
    ap.add_argument("--pdl", action="store_true", help="--sweep launches programmatically (as libingot "
                    "does on sm_90) and adds each count's floor (valid length 0)")
    a = ap.parse_args()
    Ls = [int(x) for x in a.lengths.split(",")]
    if a.trace:
        kinds = a.kernels.split(",") if a.kernels != ap.get_default("kernels") else TRACED_KERNELS
        for spec in a.trace:
            trace(a.experiments, spec, suffixes=kinds)
        return 0
    if a.sweep:
        for spec in a.sweep:
            sweep(a.experiments, spec, suffixes=a.kernels.split(","), pdl=a.pdl)
        return 0
    if a.layouts:
        layouts(a.pack, a.experiments, [(16, 32, 8, 8192), (1, 8, 2, 1048576), (1, 8, 2, 65536), (64, 32, 8, 8192)])
        return 0
    if a.compare:
        compare_packs(a.pack, a.compare, a.kernel, Ls)
        return 0
    if a.floor:
        for L in Ls:
            floor_parts(a.pack, a.kernel, L)
        return 0
    if a.ab:
        ab_paths(a.pack, Ls, a.ab, a.kernel)
        return 0
    if a.experiments:
        bench_experiments(a.experiments, Ls)
        if a.batched:
            for B in (16, 64):
                bench_experiments(a.experiments, [8192], B, 32, 8, check_first=False)
    kdp = json.load(open(os.path.join(a.pack, "attention_decode.kdp.json")))
    kdps = kdp["kernelDescriptors"]
    torch.manual_seed(1234)
    fails = 0
    for kd in ([] if a.no_check else kdps):
        if "sm_90" not in kd["kernel_source"]["objects"]:
            continue  # built for the AMD archs only
        kern = Kernel(a.pack, kd)
        m = kern.meta
        g = m["group"]
        hkv = {1: 8, 4: 2, 8: 8}[g]
        for (B, Sq, cap, causal, paged, ps, lse, poison, splits) in (
                (2, m["max_sq"], 1024, True, m["kv_layout"] == "paged", 16, True, True, None),
                (3, 1, 4096, False, m["kv_layout"] == "paged", 64, False, True, 1),
                (1, m["max_sq"], 64, True, m["kv_layout"] == "paged", 16, True, False, None)):
            ok, err, lerr, s = check(kern, B, g * hkv, hkv, Sq, cap, causal, paged, ps, lse, poison, splits)
            fails += not ok
            print(f"{'ok ' if ok else 'FAIL'} {kd['name']:52} B={B} Sq={Sq} cap={cap:>5} causal={causal:d} "
                  f"splits={s:>3} max_err={err:.5f} lse_err={lerr:.2e}", flush=True)
    print(f"probe: {len(kdps)} kernels, {fails} failures", flush=True)
    if a.time:
        rows = bench_seed(a.pack, kdps, Ls, a.kernel)
        if a.out:
            json.dump(rows, open(os.path.join(a.out, "probe_bench.json"), "w"), indent=1)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
