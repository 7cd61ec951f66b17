"""ctypes binding of libingot (no compiled extension): open packs, plan an
attention decode graph and execute it on torch tensors in the same process.

    rt = Runtime("build/lib/libingot.so")
    ctx = rt.context("cuda")
    ctx.open_pack("build/packs/attention_decode")
    plan = ctx.plan(q, k, v, o, seq_lens, capacity=L, causal=False)
    plan.execute(q, k, v, o, seq_lens, workspace, stream=torch.cuda.current_stream().cuda_stream)
"""

import ctypes as C
import math

DTYPES = {"bfloat16": 1, "float16": 2, "float32": 3, "int32": 4, "int64": 5}
BACKENDS = {"none": 0, "cuda": 1, "hip": 2}


class TensorDesc(C.Structure):
    _fields_ = [("dtype", C.c_int), ("rank", C.c_int), ("dims", C.c_int64 * 4),
                ("strides", C.c_int64 * 4), ("memory", C.c_int)]


class Graph(C.Structure):
    _fields_ = [("q", TensorDesc), ("k", TensorDesc), ("v", TensorDesc), ("o", TensorDesc),
                ("lse", TensorDesc), ("seq_lens", TensorDesc), ("page_table", TensorDesc),
                ("kv_layout", C.c_int), ("capacity", C.c_int64), ("mask", C.c_int),
                ("mask_align", C.c_int), ("scale", C.c_float)]


class Buffers(C.Structure):
    _fields_ = [("q", C.c_void_p), ("k", C.c_void_p), ("v", C.c_void_p), ("o", C.c_void_p),
                ("lse", C.c_void_p), ("seq_lens", C.c_void_p), ("page_table", C.c_void_p)]


class IngotError(RuntimeError):
    pass


def describe(t):
    """TensorDesc of a torch tensor (or None -> absent)."""
    d = TensorDesc()
    if t is None:
        return d
    d.dtype = DTYPES[str(t.dtype).replace("torch.", "")]
    d.rank = t.dim()
    for i in range(t.dim()):
        d.dims[i] = t.shape[i]
        d.strides[i] = t.stride(i)
    d.memory = 0 if t.is_cuda else 1
    return d


class Runtime:
    def __init__(self, lib_path):
        self.lib = L = C.CDLL(lib_path)
        P = C.c_void_p
        L.ingot_status_string.restype = C.c_char_p
        L.ingot_context_create_ex.argtypes = [C.c_int, C.c_int, C.POINTER(P), C.c_char_p, C.c_size_t]
        L.ingot_context_create_host.argtypes = [C.c_char_p, C.POINTER(P)]
        L.ingot_context_destroy.argtypes = [P]
        L.ingot_context_last_error.argtypes = [P]
        L.ingot_context_last_error.restype = C.c_char_p
        L.ingot_context_arch.argtypes = [P]
        L.ingot_context_arch.restype = C.c_char_p
        L.ingot_context_open_pack.argtypes = [P, C.c_char_p]
        L.ingot_plan_create.argtypes = [P, C.POINTER(Graph), C.POINTER(P)]
        L.ingot_plan_destroy.argtypes = [P]
        L.ingot_plan_kernel_name.argtypes = [P]
        L.ingot_plan_kernel_name.restype = C.c_char_p
        L.ingot_plan_workspace_size.argtypes = [P]
        L.ingot_plan_workspace_size.restype = C.c_size_t
        L.ingot_plan_num_splits.argtypes = [P]
        L.ingot_plan_launch_count.argtypes = [P]
        L.ingot_plan_execute_ex.argtypes = [P, P, C.POINTER(Buffers), P, C.c_size_t, C.c_char_p, C.c_size_t]

    def status(self, s):
        return self.lib.ingot_status_string(s).decode()

    def context(self, backend="cuda", ordinal=0, arch=None):
        return Context(self, backend, ordinal, arch)


class Context:
    def __init__(self, rt, backend, ordinal, arch):
        self.rt, self.h = rt, C.c_void_p()
        if backend == "none":
            s = rt.lib.ingot_context_create_host(arch.encode() if arch else None, C.byref(self.h))
            err = b""
        else:
            buf = C.create_string_buffer(512)
            s = rt.lib.ingot_context_create_ex(BACKENDS[backend], ordinal, C.byref(self.h), buf, 512)
            err = buf.value
        if s:
            raise IngotError(f"context: {rt.status(s)}: {err.decode()}")

    def __del__(self):
        if getattr(self, "h", None):
            self.rt.lib.ingot_context_destroy(self.h)
            self.h = None

    def error(self):
        return self.rt.lib.ingot_context_last_error(self.h).decode()

    @property
    def arch(self):
        return self.rt.lib.ingot_context_arch(self.h).decode()

    def open_pack(self, path):
        s = self.rt.lib.ingot_context_open_pack(self.h, path.encode())
        if s:
            raise IngotError(f"open_pack: {self.rt.status(s)}: {self.error()}")

    def plan(self, q, k, v, o, seq_lens, capacity, causal=False, lse=None, page_table=None, scale=None):
        g = Graph()
        g.q, g.k, g.v, g.o = describe(q), describe(k), describe(v), describe(o)
        g.lse, g.seq_lens, g.page_table = describe(lse), describe(seq_lens), describe(page_table)
        g.kv_layout = 1 if page_table is not None else 0
        g.capacity = capacity
        g.mask = 1 if causal else 0
        g.mask_align = 0
        g.scale = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
        h = C.c_void_p()
        s = self.rt.lib.ingot_plan_create(self.h, C.byref(g), C.byref(h))
        if s:
            raise IngotError(f"plan: {self.rt.status(s)}: {self.error()}")
        return Plan(self, h)


class Plan:
    def __init__(self, ctx, h):
        self.ctx, self.h = ctx, h
        L = ctx.rt.lib
        self.kernel = L.ingot_plan_kernel_name(h).decode()
        self.workspace_size = L.ingot_plan_workspace_size(h)
        self.num_splits = L.ingot_plan_num_splits(h)
        self.launches = L.ingot_plan_launch_count(h)

    def __del__(self):
        if getattr(self, "h", None):
            self.ctx.rt.lib.ingot_plan_destroy(self.h)
            self.h = None

    def buffers(self, q, k, v, o, seq_lens, lse=None, page_table=None):
        b = Buffers()
        b.q, b.k, b.v, b.o = q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr()
        b.lse = lse.data_ptr() if lse is not None else None
        b.seq_lens = seq_lens.data_ptr()
        b.page_table = page_table.data_ptr() if page_table is not None else None
        return b

    def execute(self, buffers, workspace, stream):
        err = C.create_string_buffer(512)
        ws_ptr = workspace.data_ptr() if workspace is not None else None
        ws_size = workspace.numel() * workspace.element_size() if workspace is not None else 0
        s = self.ctx.rt.lib.ingot_plan_execute_ex(self.h, C.c_void_p(stream), C.byref(buffers),
                                                  ws_ptr, ws_size, err, 512)
        if s:
            raise IngotError(f"execute: {self.ctx.rt.status(s)}: {err.value.decode()}")
