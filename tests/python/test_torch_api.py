"""ingot.decode and ingot.DecodePlan on real torch tensors.

On a host (no GPU, CI): a host context (backend 'none', arch gfx942) plans
real CPU tensors as the device would and refuses to run them, so every
argument check is exercised for real: dtypes, ranks, shapes, strides, devices,
mask and LSE flags, outputs given by the caller, tensors that differ from the
plan, a shape no kernel admits; each an IngotError naming the argument. With a
CUDA (or ROCm) device, decode runs and is checked against a float32 reference
on fresh random inputs with poisoned outputs, on two streams and in a
captured torch.cuda graph.

Needs torch: exits 77 (CTest SKIP) without it. libingot and the pack come
from INGOT_LIBRARY and INGOT_PACKS (the API's own environment route).

usage: INGOT_LIBRARY=... INGOT_PACKS=... test_torch_api.py [unittest args]"""

import math
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "generator"))
try:
    import torch
except ImportError:
    print("torch is not installed: test_torch_api skipped")
    sys.exit(77)

import ingot  # noqa: E402
from ingot import torch_api  # noqa: E402

GPU = torch.cuda.is_available()


def rand(*shape, dtype=torch.bfloat16, device="cpu"):
    return torch.randn(*shape, device=device).to(dtype)


def seq_lens_of(b, capacity, device="cpu"):
    return torch.tensor([random.randint(1, capacity) for _ in range(b)], dtype=torch.int32, device=device)


def gqa_case(b=2, hq=8, hkv=2, sq=1, d=128, capacity=None, dtype=torch.bfloat16, device="cpu"):
    capacity = capacity or random.randint(64, 8192)
    return dict(q=rand(b, hq, sq, d, dtype=dtype, device=device),
                k_cache=rand(b, capacity, hkv, d, dtype=dtype, device=device),
                v_cache=rand(b, capacity, hkv, d, dtype=dtype, device=device),
                seq_lens=seq_lens_of(b, capacity, device))


class HostApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ctx = ingot.Runtime().context("none", arch="gfx942")
        for p in ingot.paths.pack_dirs():
            cls.ctx.open_pack(p)

    def raises(self, text, fn, *args, **kwargs):
        with self.assertRaises(ingot.IngotError) as cm:
            fn(*args, **kwargs)
        self.assertIn(text, str(cm.exception))
        return str(cm.exception)

    def plan(self, **kw):
        kw.setdefault("context", self.ctx)
        return ingot.DecodePlan(**kw)

    # ---- accept cases first: an API stuck on "error" would pass every test below

    def test_plan_contiguous(self):
        for dtype, name in ((torch.bfloat16, "bf16"), (torch.float16, "fp16")):
            for causal in (False, True):
                t = gqa_case(dtype=dtype)
                p = self.plan(**t, causal=causal)
                self.assertTrue(p.kernel.startswith(f"attention_decode_{name}_d128_g4_sq1_contig"), p.kernel)
                self.assertTrue(1 <= p.num_splits <= 256)
                self.assertEqual(p.launches, 2 if p.num_splits > 1 else 1)
                self.assertEqual(p.capacity, t["k_cache"].shape[1])
                if p.num_splits > 1:
                    self.assertGreater(p.workspace_size, 0)
                # every argument right: a host context only plans
                self.raises("UNAVAILABLE", p.run, **{k: v for k, v in t.items()})

    def test_plan_three_dim_q_and_paged(self):
        t = gqa_case()
        t["q"] = t["q"][:, :, 0, :]  # [B, Hq, D]
        p3 = self.plan(**t)
        self.assertIn("_g4_sq1_contig", p3.kernel)
        self.raises("UNAVAILABLE", p3.run, **t)
        b, page, pages = 3, 16, random.randint(4, 64)
        q = rand(b, 8, 1, 128)
        k, v = rand(b * pages, page, 2, 128), rand(b * pages, page, 2, 128)
        table = torch.randperm(b * pages).to(torch.int32).reshape(b, pages)
        p = self.plan(q=q, k_cache=k, v_cache=v, seq_lens=seq_lens_of(b, pages * page), page_table=table)
        self.assertIn("_paged", p.kernel)
        self.assertEqual(p.capacity, pages * page)

    def test_strided_views_pass_as_they_are(self):
        # q a view with a non-contiguous batch stride: torch's strides are passed, not copied
        big = rand(2, 8, 1, 256)
        t = gqa_case()
        t["q"] = big[..., :128]
        self.assertFalse(t["q"].is_contiguous())
        p = self.plan(**t)
        self.assertEqual(p._plan.graph.q.strides[0], 8 * 256)
        self.raises("UNAVAILABLE", p.run, **t)

    def test_decode_caches_plans(self):
        torch_api._plans.clear()
        t = gqa_case(capacity=1024)
        for _ in range(2):
            self.raises("decode: execute: UNAVAILABLE", ingot.decode, **t, context=self.ctx)
        self.assertEqual(len(torch_api._plans), 1)
        t2 = gqa_case(capacity=2048)
        self.raises("UNAVAILABLE", ingot.decode, **t2, context=self.ctx)
        self.assertEqual(len(torch_api._plans), 2)

    # ---- every misuse names the argument

    def test_dtypes(self):
        t = gqa_case()
        self.raises("q.dtype = float32 (allowed: bfloat16, float16)", self.plan, **dict(t, q=t["q"].float()))
        self.raises("k_cache.dtype = float16 (allowed: bfloat16, the dtype of q)", self.plan,
                    **dict(t, k_cache=t["k_cache"].half()))
        self.raises("v_cache.dtype = float32", self.plan, **dict(t, v_cache=t["v_cache"].float()))
        self.raises("seq_lens.dtype = int64 (allowed: int32; seq_lens.int() converts)", self.plan,
                    **dict(t, seq_lens=t["seq_lens"].long()))

    def test_types_and_ranks(self):
        t = gqa_case()
        self.raises("q is list (allowed: a torch.Tensor)", self.plan, **dict(t, q=[1, 2]))
        self.raises("seq_lens is NoneType", self.plan, **dict(t, seq_lens=None))
        self.raises("q has 2 dims, shape [8, 128] (allowed: [B, Hq, Sq, D] or [B, Hq, D])", self.plan,
                    **dict(t, q=t["q"][0, :, 0, :]))
        self.raises("k_cache has 3 dims", self.plan, **dict(t, k_cache=t["k_cache"][0]))
        self.raises("v_cache has shape", self.plan, **dict(t, v_cache=t["v_cache"][:, :64]))
        self.raises("seq_lens has 2 dims", self.plan, **dict(t, seq_lens=t["seq_lens"].reshape(2, 1)))
        self.raises("causal = 1 (allowed: True, False)", self.plan, **t, causal=1)
        self.raises("return_lse = 'yes' (allowed: True, False)", self.plan, **t, return_lse="yes")
        self.raises("page_table.dtype = int64", self.plan,
                    **dict(t, page_table=torch.zeros(2, 4, dtype=torch.int64)))

    def test_strides(self):
        t = gqa_case()
        wide = rand(*t["k_cache"].shape[:3], 256)
        self.raises("k_cache.stride(-1) = 2 (allowed: 1, the head dim adjacent; k_cache.contiguous() gives it)",
                    self.plan, **dict(t, k_cache=wide[..., ::2]))

    def test_shapes_the_graph_checks(self):
        t = gqa_case()
        # B of seq_lens differs from q's: libingot names the graph field
        msg = self.raises("DecodePlan: plan: INVALID_ARGUMENT", self.plan, **dict(t, seq_lens=seq_lens_of(3, 64)))
        self.assertIn("seq_lens", msg)
        # a head dim no kernel has (every group runs since issue 22)
        msg = self.raises("NO_MATCH", self.plan, **gqa_case(d=72))
        self.assertIn("head_dim 72", msg)

    def test_devices(self):
        t = gqa_case()
        # no context: q's own device, which must be a GPU
        self.raises("decode: q is on cpu (allowed: a cuda device)", ingot.decode, **t)
        if not GPU:
            self.raises("DecodePlan: q is on cpu (allowed: a cuda device)", ingot.DecodePlan, **t)

    def test_run_against_the_plan(self):
        t = gqa_case(capacity=512)
        p = self.plan(**t)
        msg = self.raises("DecodePlan.run: buffers: k_cache is bfloat16 dims [2,1024,2,128]", p.run, **dict(t, k_cache=rand(2, 1024, 2, 128),
                                                                     v_cache=rand(2, 1024, 2, 128)))
        self.assertIn("as planned", msg)
        self.raises("q has 3 dims (allowed: 4, as planned)", p.run, **dict(t, q=t["q"][:, :, 0, :]))
        self.raises("page_table is given (allowed: None, as planned)", p.run, **t,
                    page_table=torch.zeros(2, 32, dtype=torch.int32))
        self.raises("out is float32 [2, 8, 1, 128]", p.run, **t, out=torch.empty(2, 8, 1, 128))
        self.raises("out is bfloat16 [2, 8, 128]", p.run, **t, out=rand(2, 8, 128))
        self.raises("lse is given (allowed: None; the plan was made with return_lse=False)", p.run, **t,
                    lse=torch.empty(2, 8, 1))
        # an output given right passes every check and reaches the (host) execute
        self.raises("UNAVAILABLE", p.run, **t, out=torch.full((2, 8, 1, 128), float("nan")).to(torch.bfloat16))


def reference(q, k, v, seq_lens, causal, scale, page_table=None):
    """float32 attention over each sequence's first seq_lens[b] tokens (bottom-right causal)."""
    b_, hq, sq, d = q.shape
    out = torch.empty(b_, hq, sq, d, dtype=torch.float32, device=q.device)
    for b in range(b_):
        n = int(seq_lens[b])
        if page_table is not None:
            page = k.shape[1]
            idx = page_table[b].long()
            kb = k[idx].reshape(-1, k.shape[2], d)[:n].float()
            vb = v[idx].reshape(-1, v.shape[2], d)[:n].float()
        else:
            kb, vb = k[b, :n].float(), v[b, :n].float()
        g = hq // kb.shape[1]
        kb = kb.permute(1, 0, 2).repeat_interleave(g, 0)  # [Hq, n, D]
        vb = vb.permute(1, 0, 2).repeat_interleave(g, 0)
        s = torch.matmul(q[b].float(), kb.transpose(1, 2)) * scale  # [Hq, Sq, n]
        if causal:
            i = torch.arange(sq, device=q.device).view(sq, 1)
            j = torch.arange(n, device=q.device).view(1, n)
            s = s.masked_fill(j >= n - sq + 1 + i, float("-inf"))
        out[b] = torch.matmul(torch.softmax(s, -1), vb)
    return out


@unittest.skipUnless(GPU, "no CUDA or ROCm device")
class GpuApiTest(unittest.TestCase):
    def check(self, o, ref, what):
        err = (o.float() - ref).abs().max().item()
        self.assertFalse(math.isnan(err), what)
        self.assertLess(err, 0.02, what)

    def test_decode_against_reference(self):
        for dtype in (torch.bfloat16, torch.float16):
            for causal in (False, True):
                t = gqa_case(b=3, capacity=random.choice((256, 4096)), dtype=dtype, device="cuda")
                for b in range(3):  # NaN past each valid length: never read
                    n = int(t["seq_lens"][b])
                    t["k_cache"][b, n:] = float("nan")
                    t["v_cache"][b, n:] = float("nan")
                o = torch.full(t["q"].shape, float("nan"), dtype=dtype, device="cuda")  # poisoned
                got = ingot.decode(**t, causal=causal, out=o)
                self.assertIs(got, o)
                ref = reference(t["q"], t["k_cache"], t["v_cache"], t["seq_lens"], causal,
                                1 / math.sqrt(128))
                self.check(o, ref, f"{dtype} causal={causal}")

    def test_paged_against_reference(self):
        b, page, pages = 3, 16, 32
        q = rand(b, 8, 1, 128, device="cuda")
        k, v = rand(b * pages, page, 2, 128, device="cuda"), rand(b * pages, page, 2, 128, device="cuda")
        table = torch.randperm(b * pages, device="cuda").to(torch.int32).reshape(b, pages)
        seq_lens = seq_lens_of(b, pages * page, "cuda")
        o = ingot.decode(q, k, v, seq_lens, page_table=table)
        ref = reference(q, k, v, seq_lens, False, 1 / math.sqrt(128), page_table=table)
        self.check(o, ref, "paged")

    def test_plan_on_two_streams_and_in_a_graph(self):
        t = gqa_case(b=4, capacity=4096, device="cuda")
        plan = ingot.DecodePlan(**t)
        ref = reference(t["q"], t["k_cache"], t["v_cache"], t["seq_lens"], False, 1 / math.sqrt(128))
        s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
        outs = []
        for s in (s1, s2):
            with torch.cuda.stream(s):
                o = torch.full(t["q"].shape, float("nan"), dtype=torch.bfloat16, device="cuda")
                outs.append(plan.run(**t, out=o))
        torch.cuda.synchronize()
        for o in outs:
            self.check(o, ref, "stream")
        if plan.workspace_size:
            self.assertIsNot(plan.workspace(s1), plan.workspace(s2))
        # captured: warm up on a side stream, capture, then new inputs in place and replay
        static_o = torch.full(t["q"].shape, float("nan"), dtype=torch.bfloat16, device="cuda")
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            plan.run(**t, out=static_o)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            plan.run(**t, out=static_o)
        t["q"].copy_(rand(*t["q"].shape, device="cuda"))
        t["seq_lens"].copy_(seq_lens_of(4, 4096, "cuda"))
        static_o.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        ref = reference(t["q"], t["k_cache"], t["v_cache"], t["seq_lens"], False, 1 / math.sqrt(128))
        self.check(static_o, ref, "graph replay")

    def test_checked_layouts_run_again(self):
        """run() skips the checks only for a layout that passed them: fresh values in the
        same layout give fresh results (on new and reused outputs, a new stream's
        workspace), and any change of dtype, shape, stride, device or option is checked
        again and refused as on the first call."""
        t = gqa_case(b=3, capacity=1024, device="cuda")
        plan = ingot.DecodePlan(**t)
        side = torch.cuda.Stream()
        for i in range(4):
            t = gqa_case(b=3, capacity=1024, device="cuda")  # fresh values, the same layout
            o = torch.full(t["q"].shape, float("nan"), dtype=torch.bfloat16, device="cuda")
            if i == 3:
                with torch.cuda.stream(side):  # a stream the plan has no workspace on yet
                    got = plan.run(**t, out=o)
                torch.cuda.synchronize()
            else:
                got = plan.run(**t, out=o) if i % 2 else plan.run(**t)
            ref = reference(t["q"], t["k_cache"], t["v_cache"], t["seq_lens"], False, 1 / math.sqrt(128))
            self.check(got, ref, f"run {i}")
            d = ingot.decode(**t, causal=True)
            self.check(d, reference(t["q"], t["k_cache"], t["v_cache"], t["seq_lens"], True,
                                    1 / math.sqrt(128)), f"decode {i}")
        bad = dict(t, seq_lens=t["seq_lens"].long())
        with self.assertRaisesRegex(ingot.IngotError, r"^DecodePlan.run: seq_lens.dtype = int64"):
            plan.run(**bad)
        with self.assertRaisesRegex(ingot.IngotError, r"^DecodePlan.run: out"):
            plan.run(**t, out=torch.empty(3, 8, 1, 128, dtype=torch.float16, device="cuda"))
        with self.assertRaisesRegex(ingot.IngotError, r"^decode: causal = 1 \(allowed: True, False\)"):
            ingot.decode(**t, causal=1)
        with self.assertRaisesRegex(ingot.IngotError, r"^decode: scale = True"):
            ingot.decode(**t, scale=True)

    def test_lse_and_sdpa(self):
        t = gqa_case(b=2, hq=8, hkv=8, capacity=512, dtype=torch.float16, device="cuda")
        t["seq_lens"].fill_(512)
        try:
            o, lse = ingot.decode(**t, return_lse=True)
        except ingot.IngotError as e:
            self.assertIn("NO_MATCH", str(e))  # the pack carries LSE for some shapes only
            return
        sdpa = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
        if sdpa is not None:
            ref = sdpa(t["q"], t["k_cache"].transpose(1, 2), t["v_cache"].transpose(1, 2))
            self.check(o, ref.float(), "sdpa")
        self.assertEqual(tuple(lse.shape), (2, 8, 1))
        self.assertEqual(lse.dtype, torch.float32)


if __name__ == "__main__":
    for var in ("INGOT_LIBRARY", "INGOT_PACKS"):
        if not os.environ.get(var):
            sys.exit(f"{var} is not set\n{__doc__}")
    unittest.main()
