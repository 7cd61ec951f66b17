"""The ctypes binding (runtime/python/ingot_runtime.py) on the built libingot,
on host contexts (no GPU, no torch here): tensors are small stand-ins with the
attributes the binding reads. The accept case first (a plan of the test pack's
seed graph, its buffers and an execute that a host context refuses after the
argument checks), then every misuse, each an IngotError whose message names
the argument and what is allowed.

The pack is the shipped one (its dispatch stub is compiled into libingot;
test_seed's is not), and a copy of test_seed serves where only the loading
matters.

usage: test_ingot_runtime.py LIBINGOT MAIN_PACK TEST_SEED_PACK [unittest args]"""

import os
import random
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "runtime", "python"))
import ingot_runtime as ir  # noqa: E402

LIB = PACK = SEED_PACK = None
SEED_KERNEL = "attention_decode_bf16_d128_g4_sq1_contig_w4t16_tc"  # on gfx942


class FakeDtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"


class FakeDevice:
    def __init__(self, index):
        self.index = index


class FakeTensor:
    """What the binding reads of a torch tensor, and nothing more."""

    def __init__(self, shape, dtype="bfloat16", strides=None, cuda=True, index=0, ptr=None, elem=2):
        self.shape = tuple(shape)
        self.dtype = FakeDtype(dtype)
        if strides is None:
            strides, s = [], 1
            for d in reversed(self.shape):
                strides.insert(0, s)
                s *= d
        self._strides = tuple(strides)
        self.is_cuda = cuda
        self.device = FakeDevice(index if cuda else None)
        self._ptr = ptr if ptr is not None else random.randrange(1, 1 << 20) * 256
        self._elem = elem

    def dim(self):
        return len(self.shape)

    def stride(self, i):
        return self._strides[i]

    def data_ptr(self):
        return self._ptr

    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def element_size(self):
        return self._elem


def seed_tensors(capacity):
    """The seed graph: bf16, B=1, Hq=8, Hkv=2, Sq=1, D=128."""
    return dict(q=FakeTensor((1, 8, 1, 128)), k=FakeTensor((1, capacity, 2, 128)),
                v=FakeTensor((1, capacity, 2, 128)), o=FakeTensor((1, 8, 1, 128)),
                seq_lens=FakeTensor((1,), "int32", elem=4))


class BindingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rt = ir.Runtime(LIB)

    def setUp(self):
        self.ctx = self.rt.context("none", arch="gfx942")
        self.ctx.open_pack(PACK)
        self.capacity = random.randint(64, 65536)
        self.t = seed_tensors(self.capacity)

    def plan(self, **over):
        args = dict(self.t, capacity=self.capacity)
        args.update(over)
        return self.ctx.plan(**args)

    def raises(self, text, fn, *args, **kwargs):
        with self.assertRaises(ir.IngotError) as cm:
            fn(*args, **kwargs)
        self.assertIn(text, str(cm.exception))
        return str(cm.exception)

    # ---- accept cases first: a binding stuck on "error" would pass every test below

    def test_accept_plan_and_execute(self):
        for causal in (False, True):
            plan = self.plan(causal=causal)
            self.assertEqual(plan.kernel, SEED_KERNEL)
            self.assertTrue(1 <= plan.num_splits <= 256)
            self.assertEqual(plan.launches, 2 if plan.num_splits > 1 else 1)
            self.assertGreaterEqual(self.ctx.kernel_count, 40)
            b = plan.buffers(**self.t)
            self.assertEqual(b.q, self.t["q"].data_ptr())
            self.assertIsNone(b.lse)
            ws = FakeTensor((max(plan.workspace_size // 4, 1),), "float32", elem=4)
            # every argument right: a host context only plans
            self.raises("execute: UNAVAILABLE: ingot_plan_execute: a host context", plan.execute, b, ws,
                        random.randrange(0, 1 << 48))
            self.raises("execute: UNAVAILABLE", plan.execute, b, ws, None)

    def test_accept_plan_outlives_context(self):
        plan = self.plan()
        b = plan.buffers(**self.t)
        ws = FakeTensor((max(plan.workspace_size // 4, 1),), "float32", elem=4)
        self.ctx.__del__()  # the C context goes first; the plan keeps it alive
        self.assertIsNone(self.ctx.h)
        lib = self.rt.lib
        self.assertEqual(ir._text(lib.ingot_plan_kernel_name(plan.h)), SEED_KERNEL)
        self.assertEqual(lib.ingot_plan_workspace_size(plan.h), plan.workspace_size)
        self.raises("execute: UNAVAILABLE: ingot_plan_execute: a host context", plan.execute, b, ws, 0)
        del plan

    # ---- tensors

    def test_float64_tensor(self):
        for name in ("q", "k", "v", "o", "seq_lens"):
            t = dict(self.t)
            t[name] = FakeTensor(t[name].shape, "float64", elem=8)
            self.raises(f"plan: {name}.dtype = float64 (allowed: bfloat16, float16, float32, int32, int64)",
                        self.ctx.plan, capacity=self.capacity, **t)

    def test_five_dims(self):
        self.raises("plan: k has 5 dims (allowed: 1..4)", self.plan, k=FakeTensor((1, self.capacity, 2, 128, 1)))
        self.raises("plan: lse has 5 dims (allowed: 1..4)", self.plan, lse=FakeTensor((1, 8, 1, 1, 1), "float32"))
        self.raises("plan: q has 0 dims (allowed: 1..4)", self.plan, q=FakeTensor(()))

    def test_not_a_tensor(self):
        self.raises("plan: q is list, not a tensor", self.plan, q=[[1.0] * 128] * 8)
        self.raises("plan: v is int, not a tensor", self.plan, v=7)
        self.raises("plan: page_table is str, not a tensor", self.plan, page_table="table")
        self.raises("plan: o is None (required: a tensor)", self.plan, o=None)
        self.raises("plan: seq_lens is None (required: a tensor)", self.plan, seq_lens=None)

    def test_dims_that_do_not_fit_int64(self):
        self.raises("plan: k.shape[1] = 18446744073709551616 (allowed: an integer in", self.plan,
                    k=FakeTensor((1, 2**64, 2, 128)))
        self.raises("plan: q.stride(0) = 'x' is str", self.plan,
                    q=FakeTensor((1, 8, 1, 128), strides=("x", 128, 128, 1)))

    def test_wrong_memory_and_device(self):
        # a host tensor where the kernels read: the C validation names it
        self.raises("plan: INVALID_ARGUMENT: graph: k.memory = host (allowed: device; the kernels read it)",
                    self.plan, k=FakeTensor((1, self.capacity, 2, 128), cuda=False))
        # lengths in host memory: a decline with the constraint
        self.raises('seq_lens.memory = "host", allowed eq "device"', self.plan,
                    seq_lens=FakeTensor((1,), "int32", cuda=False, elem=4))
        # a device context runs on its own device only
        ir.check_device("plan", "q", FakeTensor((1, 8, 1, 128), index=0), 0)
        self.raises("plan: v is on device 1 (allowed: device 0, the context's)", ir.check_device, "plan", "v",
                    FakeTensor((1, 8, 1, 128), index=1), 0)
        self.raises("buffers: o is on device 3 (allowed: device 2, the context's)", ir.check_device, "buffers",
                    "o", FakeTensor((1, 8, 1, 128), index=3), 2)

    def test_dtypes_the_kernels_rely_on(self):
        self.raises('lse.dtype = "fp16", allowed in ["absent","fp32"]', self.plan,
                    lse=FakeTensor((1, 8, 1), "float16"))
        self.raises('v_dtype = "fp16", allowed eq "bf16"', self.plan,
                    v=FakeTensor((1, self.capacity, 2, 128), "float16"))
        pages = (self.capacity + 63) // 64
        self.raises('page_table.dtype = "int64", allowed in ["absent","int32"]', self.plan,
                    k=FakeTensor((pages, 64, 2, 128)), v=FakeTensor((pages, 64, 2, 128)),
                    page_table=FakeTensor((1, pages), "int64", elem=8))

    # ---- scalars

    def test_capacity(self):
        self.raises("plan: capacity = 1180591620717411303424 (allowed: an integer in 1..2147483647)", self.plan,
                    capacity=2**70)
        self.raises("plan: capacity = -9223372036854775809 (allowed: an integer in 1..2147483647)", self.plan,
                    capacity=-(2**63) - 1)
        self.raises("plan: INVALID_ARGUMENT: graph: capacity = 1099511627776 (allowed: 1..2147483647)", self.plan,
                    capacity=2**40)
        self.raises("plan: capacity = '4096' is str", self.plan, capacity="4096")
        self.raises("plan: capacity = 4096.0 is float", self.plan, capacity=4096.0)
        self.raises("plan: capacity = True is bool", self.plan, capacity=True)

    def test_scale_and_causal(self):
        self.raises("plan: scale = nan (allowed: a finite number", self.plan, scale=float("nan"))
        self.raises("plan: scale = 1e+39 (allowed: a finite number within float32", self.plan, scale=1e39)
        self.raises("plan: scale = '0.1' is str (allowed: a finite number)", self.plan, scale="0.1")
        self.raises("plan: causal = 'yes' (allowed: True, False)", self.plan, causal="yes")

    # ---- contexts and packs

    def test_context_arguments(self):
        self.raises("context: backend = 'cuda0' (allowed: 'none', 'cuda', 'hip')", self.rt.context, "cuda0")
        self.raises("context: backend = None", self.rt.context, None)
        self.raises("context: ordinal = -1 (allowed: an integer in 0..2147483647)", self.rt.context, "cuda", -1)
        self.raises("context: ordinal = 1099511627776 (allowed: an integer in 0..2147483647)", self.rt.context,
                    "cuda", 2**40)
        self.raises("context: ordinal = '0' is str", self.rt.context, "cuda", "0")
        self.raises("context: arch = 'sm_90' with backend 'cuda' (allowed: None;", self.rt.context, "cuda", 0,
                    "sm_90")
        self.raises("context: INVALID_ARGUMENT: arch = 'SM 90' (allowed: None, or 1..31 of a-z 0-9 _",
                    self.rt.context, "none", 0, "SM 90")
        self.raises("context: arch is int (allowed: a str, bytes or os.PathLike)", self.rt.context, "none", 0, 90)
        self.raises("context: arch 'gfx\\x00942' holds a NUL byte", self.rt.context, "none", 0, "gfx\0942")

    def test_open_pack_arguments(self):
        self.raises("open_pack: path is None (allowed: a str, bytes or os.PathLike)", self.ctx.open_pack, None)
        self.raises("open_pack: path is int (allowed: a str, bytes or os.PathLike)", self.ctx.open_pack, 3)
        self.raises("holds a NUL byte (allowed: none; C strings end there)", self.ctx.open_pack, PACK + "\0/x")
        # opening the same pack twice: the C message comes through
        self.raises("open_pack: INVALID_PACK", self.ctx.open_pack, PACK)

    def test_non_utf8_names(self):
        tmp = tempfile.mkdtemp(prefix="ingot-binding-")
        try:
            pack = os.path.join(tmp, "pack")
            shutil.copytree(SEED_PACK, pack)
            with open(os.path.join(os.fsencode(pack), b"\xff\xfe.umd.json"), "wb") as f:
                f.write(b"not json")
            ctx = self.rt.context("none")
            msg = self.raises("open_pack: INVALID_PACK: ", ctx.open_pack, pack)
            self.assertIn("\ufffd\ufffd.umd.json", msg)
            missing = os.path.join(os.fsencode(tmp), b"\xc3(-no-such-pack")
            msg = self.raises("open_pack: IO_ERROR: ", ctx.open_pack, missing)
            self.assertIn("\ufffd(-no-such-pack", msg)
        finally:
            shutil.rmtree(tmp)

    def test_closed_handles(self):
        plan = self.plan()
        b = plan.buffers(**self.t)
        self.ctx.__del__()
        self.raises("open_pack: the context is closed", self.ctx.open_pack, PACK)
        self.raises("plan: the context is closed", self.plan)
        self.assertEqual(self.ctx.error(), "")
        plan.__del__()
        self.raises("execute: the plan is destroyed", plan.execute, b, None, 0)
        self.raises("buffers: the plan is destroyed", plan.buffers, **self.t)

    def test_unreadable_strides(self):
        class Sparse(FakeTensor):
            def stride(self, i):
                raise RuntimeError("sparse tensors do not have strides")
        self.raises("plan: k: its shape or strides cannot be read (sparse tensors do not have strides; allowed: a "
                    "strided tensor)", self.plan, k=Sparse((1, self.capacity, 2, 128)))

    def test_runtime_arguments(self):
        self.raises("Runtime: lib_path is None", ir.Runtime, None)
        self.raises("Runtime: cannot load libingot from '/nonexistent/libingot.so'", ir.Runtime,
                    "/nonexistent/libingot.so")
        self.raises("is not libingot (", ir.Runtime, "libm.so.6")
        self.assertEqual(self.rt.status(1234), "UNKNOWN_STATUS")
        self.assertEqual(self.rt.status(3), "NO_MATCH")

    # ---- buffers and execute

    def test_buffers_must_match_the_plan(self):
        plan = self.plan()
        other = FakeTensor((1, self.capacity, 2, 128), strides=(self.capacity * 2 * 136, 2 * 136, 136, 1))
        self.raises("buffers: k is bfloat16 dims [1,%d,2,128] strides [%d,272,136,1] device (allowed: bfloat16 dims "
                    "[1,%d,2,128] strides [%d,256,128,1] device, as planned)"
                    % (self.capacity, self.capacity * 272, self.capacity, self.capacity * 256),
                    plan.buffers, **dict(self.t, k=other))
        self.raises("buffers: q is float16", plan.buffers, **dict(self.t, q=FakeTensor((1, 8, 1, 128), "float16")))
        self.raises("buffers: lse is float32 dims [1,8,1] strides [8,1,1] device (allowed: absent, as planned)",
                    plan.buffers, lse=FakeTensor((1, 8, 1), "float32", elem=4), **self.t)
        self.raises("buffers: v is None (required: a tensor)", plan.buffers, **dict(self.t, v=None))
        self.raises("buffers: o is tuple, not a tensor", plan.buffers, **dict(self.t, o=(1, 2)))
        self.raises("buffers: q.dtype = float64", plan.buffers,
                    **dict(self.t, q=FakeTensor((1, 8, 1, 128), "float64", elem=8)))
        self.raises("buffers: q.data_ptr() = -16 (allowed: an integer in 0..18446744073709551615)", plan.buffers,
                    **dict(self.t, q=FakeTensor((1, 8, 1, 128), ptr=-16)))

    def test_execute_arguments(self):
        plan = self.plan()
        b = plan.buffers(**self.t)
        self.raises("execute: buffers is dict (allowed: what plan.buffers() returns)", plan.execute, dict(self.t),
                    None, 0)
        self.raises("execute: workspace is list, not a tensor", plan.execute, b, [0.0] * 16, 0)
        self.raises("execute: stream = -1 (allowed: None or a stream handle", plan.execute, b, None, -1)
        self.raises("execute: stream = 18446744073709551616 (allowed: None or a stream handle", plan.execute, b,
                    None, 2**64)
        self.raises("execute: stream = 'default' is str", plan.execute, b, None, "default")
        # the C checks come through with their message
        bad = plan.buffers(**self.t)
        bad.q = 0x10001  # not 16-byte aligned
        self.raises("execute: INVALID_ARGUMENT: ingot_plan_execute: buffers->q", plan.execute, bad, None, 0)


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__.split("\n\n")[-1])
    LIB, PACK, SEED_PACK = sys.argv[1:4]
    seed = int(os.environ.get("INGOT_TEST_SEED", random.randrange(1 << 30)))
    random.seed(seed)
    print(f"random seed {seed} (set INGOT_TEST_SEED to repeat)")
    unittest.main(argv=[sys.argv[0]] + sys.argv[4:], verbosity=2)
