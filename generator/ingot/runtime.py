"""ctypes binding of libingot (no compiled extension): open packs, plan an
attention decode graph and execute it on torch tensors in the same process.
The torch-facing API (ingot.decode, ingot.DecodePlan: torch_api.py) is built on
it; this layer takes raw stream handles and caller-allocated workspaces.

    rt = Runtime()                       # $INGOT_LIBRARY, the installed libingot, or build/lib
    ctx = rt.context("cuda")
    ctx.open_pack("build/packs/attention_decode")
    plan = ctx.plan(q, k, v, o, seq_lens, capacity=L, causal=False)
    plan.execute(plan.buffers(q, k, v, o, seq_lens), workspace,
                 stream=torch.cuda.current_stream().cuda_stream)

Every misuse (a wrong type, dtype, rank, device or range, a path that is not
one) raises IngotError with a message that names the argument and what is
allowed, before anything reaches the C library: ctypes would otherwise wrap an
out-of-range integer or cut a string at a NUL byte without a word. Tensors are
read through dtype, dim(), shape, stride(), is_cuda, device, data_ptr(),
numel() and element_size(), so anything that has them (torch tensors, or a
test's stand-ins) will do. Importing this module imports neither torch nor
the generator's dependencies.
"""

import ctypes as C
import math
import os

DTYPES = {"bfloat16": 1, "float16": 2, "float32": 3, "int32": 4, "int64": 5}
BACKENDS = {"none": 0, "cuda": 1, "hip": 2}
MAX_RANK = 4  # INGOT_MAX_RANK
INT32_MAX = 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
UINTPTR_MAX = 2**64 - 1
FLT_MAX = 3.4028234663852886e38
ERR_BYTES = 1024


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
    """The one exception ingot's Python API raises: its message names the
    argument (or file) that is wrong and what is allowed."""


def _text(b):
    """A C string from libingot as text. Messages quote file names, which need
    not be UTF-8: undecodable bytes become U+FFFD instead of an exception."""
    return b.decode("utf-8", errors="replace") if b else ""


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _int_arg(where, name, value, lo, hi, allowed=None):
    """value as an int in lo..hi, or IngotError naming it: ctypes would wrap it."""
    if not _is_int(value):
        raise IngotError(f"{where}: {name} = {value!r} is {type(value).__name__} "
                         f"(allowed: {allowed or f'an integer in {lo}..{hi}'})")
    if not lo <= value <= hi:
        raise IngotError(f"{where}: {name} = {value} (allowed: {allowed or f'an integer in {lo}..{hi}'})")
    return value


def _c_string(where, name, value):
    """A str, bytes or os.PathLike as the bytes of a C string (file names through
    the file-system encoding, so any name os.listdir gives round-trips)."""
    if value is None:
        raise IngotError(f"{where}: {name} is None (allowed: a str, bytes or os.PathLike)")
    try:
        raw = os.fsencode(value)
    except TypeError:
        raise IngotError(f"{where}: {name} is {type(value).__name__} "
                         f"(allowed: a str, bytes or os.PathLike)") from None
    if b"\0" in raw:
        raise IngotError(f"{where}: {name} {value!r} holds a NUL byte (allowed: none; C strings end there)")
    return raw


def _tensor_attrs(where, name, t):
    """Fails unless t looks like a torch tensor, naming what it is instead."""
    needed = ("dtype", "dim", "shape", "stride", "data_ptr")
    missing = [a for a in needed if not hasattr(t, a)]
    if missing:
        raise IngotError(f"{where}: {name} is {type(t).__name__}, not a tensor "
                         f"(it has no {', '.join(missing)}; allowed: a torch tensor)")


def _dtype_name(t):
    return str(t.dtype).replace("torch.", "")


def _device_index(t):
    """(is_cuda, index) of a tensor; index None when the device does not say."""
    if not bool(getattr(t, "is_cuda", False)):
        return False, None
    index = getattr(getattr(t, "device", None), "index", None)
    return True, index if _is_int(index) else None


def check_device(where, name, t, ordinal):
    """A device context runs on one device: a tensor on another GPU is refused
    (one in host memory is the C validation's to name)."""
    is_cuda, index = _device_index(t)
    if is_cuda and index is not None and index != ordinal:
        raise IngotError(f"{where}: {name} is on device {index} (allowed: device {ordinal}, the context's)")


def describe(t, name="tensor", where="plan", as_device=False):
    """TensorDesc of a torch tensor (or None -> absent, rank 0). as_device: described
    as device memory wherever it is (a host context's plan, which never runs)."""
    d = TensorDesc()
    if t is None:
        return d
    _tensor_attrs(where, name, t)
    dt = _dtype_name(t)
    if dt not in DTYPES:
        raise IngotError(f"{where}: {name}.dtype = {dt} (allowed: {', '.join(DTYPES)})")
    try:
        rank = t.dim()
        shape = [t.shape[i] for i in range(rank)] if _is_int(rank) and 1 <= rank <= MAX_RANK else None
        strides = [t.stride(i) for i in range(rank)] if shape is not None else None
    except (RuntimeError, TypeError, IndexError, ValueError) as e:  # e.g. a sparse tensor has no strides
        raise IngotError(f"{where}: {name}: its shape or strides cannot be read ({e}; allowed: a strided "
                         f"tensor)") from None
    if shape is None:
        raise IngotError(f"{where}: {name} has {rank} dims (allowed: 1..{MAX_RANK})")
    d.dtype = DTYPES[dt]
    d.rank = rank
    for i in range(rank):
        d.dims[i] = _int_arg(where, f"{name}.shape[{i}]", shape[i], INT64_MIN, INT64_MAX)
    for i in range(rank):
        d.strides[i] = _int_arg(where, f"{name}.stride({i})", strides[i], INT64_MIN, INT64_MAX)
    d.memory = 0 if as_device or _device_index(t)[0] else 1
    return d


def _same_desc(a, b):
    if (a.dtype, a.rank, a.memory) != (b.dtype, b.rank, b.memory):
        return False
    return all(a.dims[i] == b.dims[i] and a.strides[i] == b.strides[i] for i in range(a.rank))


def _show_desc(d):
    if d.rank == 0:
        return "absent"
    dt = next((k for k, v in DTYPES.items() if v == d.dtype), str(d.dtype))
    dims = ",".join(str(d.dims[i]) for i in range(d.rank))
    strides = ",".join(str(d.strides[i]) for i in range(d.rank))
    return f"{dt} dims [{dims}] strides [{strides}] {'host' if d.memory else 'device'}"


_DEFAULT = object()


class Runtime:
    def __init__(self, lib_path=_DEFAULT):
        """lib_path: the libingot.so to load (default: ingot.paths.library())."""
        if lib_path is _DEFAULT:
            from ingot import paths
            lib_path = paths.library()
            if not os.path.isfile(lib_path):
                if os.environ.get("INGOT_LIBRARY"):
                    raise IngotError(f"Runtime: INGOT_LIBRARY = {lib_path!r}: no such file (allowed: the path of "
                                     f"a libingot.so, or INGOT_LIBRARY unset for the installed one)")
                raise IngotError(f"Runtime: libingot not found at {lib_path!r} (allowed: an ingot installed with its "
                                 f"runtime, `make` in the source tree, or INGOT_LIBRARY=/path/to/libingot.so)")
        raw = _c_string("Runtime", "lib_path", lib_path)
        try:
            self.lib = L = C.CDLL(raw)
        except OSError as e:
            raise IngotError(f"Runtime: cannot load libingot from {os.fsdecode(raw)!r}: {e}") from None
        try:
            self._declare(L)
        except AttributeError as e:
            raise IngotError(f"Runtime: {os.fsdecode(raw)!r} is not libingot ({e})") from None

    @staticmethod
    def _declare(L):
        P = C.c_void_p
        L.ingot_status_string.argtypes = [C.c_int]
        L.ingot_status_string.restype = C.c_char_p
        L.ingot_version_string.argtypes = []
        L.ingot_version_string.restype = C.c_char_p
        L.ingot_context_create_ex.argtypes = [C.c_int, C.c_int, C.POINTER(P), C.c_char_p, C.c_size_t]
        L.ingot_context_create_host.argtypes = [C.c_char_p, C.POINTER(P)]
        L.ingot_context_destroy.argtypes = [P]
        L.ingot_context_destroy.restype = None
        L.ingot_context_last_error.argtypes = [P]
        L.ingot_context_last_error.restype = C.c_char_p
        L.ingot_context_arch.argtypes = [P]
        L.ingot_context_arch.restype = C.c_char_p
        L.ingot_context_kernel_count.argtypes = [P]
        L.ingot_context_kernel_count.restype = C.c_size_t
        L.ingot_context_open_pack.argtypes = [P, C.c_char_p]
        L.ingot_plan_create.argtypes = [P, C.POINTER(Graph), C.POINTER(P)]
        L.ingot_plan_destroy.argtypes = [P]
        L.ingot_plan_destroy.restype = None
        L.ingot_plan_kernel_name.argtypes = [P]
        L.ingot_plan_kernel_name.restype = C.c_char_p
        L.ingot_plan_workspace_size.argtypes = [P]
        L.ingot_plan_workspace_size.restype = C.c_size_t
        L.ingot_plan_num_splits.argtypes = [P]
        L.ingot_plan_launch_count.argtypes = [P]
        L.ingot_plan_execute_ex.argtypes = [P, P, C.POINTER(Buffers), P, C.c_size_t, C.c_char_p, C.c_size_t]

    def status(self, s):
        return _text(self.lib.ingot_status_string(s))

    @property
    def version(self):
        return _text(self.lib.ingot_version_string())

    def context(self, backend="cuda", ordinal=0, arch=None):
        return Context(self, backend, ordinal, arch)


class Context:
    def __init__(self, rt, backend, ordinal, arch):
        self.rt, self.h = rt, C.c_void_p()
        if not isinstance(backend, str) or backend not in BACKENDS:
            raise IngotError(f"context: backend = {backend!r} (allowed: {', '.join(map(repr, BACKENDS))})")
        self.backend = backend
        self.ordinal = _int_arg("context", "ordinal", ordinal, 0, INT32_MAX)
        if backend == "none":
            raw = None if arch is None else _c_string("context", "arch", arch)
            s = rt.lib.ingot_context_create_host(raw, C.byref(self.h))
            err = ("" if s != 1 else
                   f"arch = {arch!r} (allowed: None, or 1..31 of a-z 0-9 _, e.g. 'sm_90', 'gfx942')")
        else:
            if arch is not None:
                raise IngotError(f"context: arch = {arch!r} with backend {backend!r} "
                                 f"(allowed: None; a device context reads its arch from the device)")
            buf = C.create_string_buffer(ERR_BYTES)
            s = rt.lib.ingot_context_create_ex(BACKENDS[backend], ordinal, C.byref(self.h), buf, ERR_BYTES)
            err = _text(buf.value)
        if s:
            self.h = C.c_void_p()
            raise IngotError(f"context: {rt.status(s)}: {err}")

    def __del__(self):
        # A plan keeps the C context alive on its own (ingot.h), so the order in
        # which Python collects the two does not matter.
        if getattr(self, "h", None):
            self.rt.lib.ingot_context_destroy(self.h)
            self.h = None

    def _handle(self, where):
        if not self.h:
            raise IngotError(f"{where}: the context is closed (allowed: a context before its __del__)")
        return self.h

    def error(self):
        return _text(self.rt.lib.ingot_context_last_error(self.h)) if self.h else ""

    @property
    def arch(self):
        return _text(self.rt.lib.ingot_context_arch(self._handle("arch")))

    @property
    def kernel_count(self):
        return self.rt.lib.ingot_context_kernel_count(self._handle("kernel_count"))

    def open_pack(self, path):
        raw = _c_string("open_pack", "path", path)
        s = self.rt.lib.ingot_context_open_pack(self._handle("open_pack"), raw)
        if s:
            raise IngotError(f"open_pack: {self.rt.status(s)}: {self.error()}")

    def _check_device(self, where, name, t):
        if t is not None and self.backend != "none":
            check_device(where, name, t, self.ordinal)

    def plan(self, q, k, v, o, seq_lens, capacity, causal=False, lse=None, page_table=None, scale=None,
             as_device=False):
        """A plan of the graph these tensors make. as_device (host contexts only):
        the tensors are described as device memory wherever they live, so that the
        plan is chosen and sized as a device's would be (its execute is refused)."""
        self._handle("plan")
        if as_device and self.backend != "none":
            raise IngotError(f"plan: as_device = True on a {self.backend!r} context (allowed: only on a host "
                             f"context, backend 'none')")
        required = {"q": q, "k": k, "v": v, "o": o, "seq_lens": seq_lens}
        for name, t in required.items():
            if t is None:
                raise IngotError(f"plan: {name} is None (required: a tensor)")
        tensors = dict(required, lse=lse, page_table=page_table)
        g = Graph()
        for name, t in tensors.items():
            setattr(g, name, describe(t, name, "plan", as_device))
            self._check_device("plan", name, t)
        g.kv_layout = 1 if page_table is not None else 0
        g.capacity = _int_arg("plan", "capacity", capacity, INT64_MIN, INT64_MAX,
                              f"an integer in 1..{INT32_MAX}")
        if not isinstance(causal, bool) and causal not in (0, 1):
            raise IngotError(f"plan: causal = {causal!r} (allowed: True, False)")
        g.mask = 1 if causal else 0
        g.mask_align = 0
        if scale is None:
            scale = 1.0 / math.sqrt(g.q.dims[g.q.rank - 1])
        if isinstance(scale, bool) or not isinstance(scale, (int, float)):
            raise IngotError(f"plan: scale = {scale!r} is {type(scale).__name__} (allowed: a finite number)")
        if not math.isfinite(scale) or abs(scale) > FLT_MAX:
            raise IngotError(f"plan: scale = {scale!r} (allowed: a finite number within float32, "
                             f"|scale| <= {FLT_MAX:.7g})")
        g.scale = scale
        h = C.c_void_p()
        s = self.rt.lib.ingot_plan_create(self.h, C.byref(g), C.byref(h))
        if s:
            raise IngotError(f"plan: {self.rt.status(s)}: {self.error()}")
        return Plan(self, h, g, as_device)


class Plan:
    def __init__(self, ctx, h, graph=None, as_device=False):
        self.ctx, self.h, self.graph, self.as_device = ctx, h, graph, as_device
        L = ctx.rt.lib
        self.kernel = _text(L.ingot_plan_kernel_name(h))
        self.workspace_size = L.ingot_plan_workspace_size(h)
        self.num_splits = L.ingot_plan_num_splits(h)
        self.launches = L.ingot_plan_launch_count(h)

    def __del__(self):
        if getattr(self, "h", None):
            self.ctx.rt.lib.ingot_plan_destroy(self.h)
            self.h = None

    def _pointer(self, name, t, label=None):
        """The address of a tensor planned as `name` (called `label` in messages):
        same dtype, dims, strides and memory as at plan time, or the kernel would
        read it wrongly."""
        label = label or name
        d = describe(t, label, "buffers", self.as_device)
        self.ctx._check_device("buffers", label, t)
        if self.graph is not None:
            planned = getattr(self.graph, name)
            if not _same_desc(d, planned):
                raise IngotError(f"buffers: {label} is {_show_desc(d)} (allowed: {_show_desc(planned)}, "
                                 f"as planned)")
        if t is None:
            return None
        ptr = t.data_ptr()
        return _int_arg("buffers", f"{label}.data_ptr()", ptr, 0, UINTPTR_MAX)

    def _handle(self, where):
        if not self.h:
            raise IngotError(f"{where}: the plan is destroyed (allowed: a plan before its __del__)")
        return self.h

    def buffers(self, q, k, v, o, seq_lens, lse=None, page_table=None, labels=None):
        """The addresses of these tensors, checked against the plan. labels: the
        caller's names for them in messages (e.g. {"k": "k_cache"})."""
        self._handle("buffers")
        labels = labels or {}
        for name, t in (("q", q), ("k", k), ("v", v), ("o", o), ("seq_lens", seq_lens)):
            if t is None:
                raise IngotError(f"buffers: {labels.get(name, name)} is None (required: a tensor)")
        b = Buffers()
        for name, t in (("q", q), ("k", k), ("v", v), ("o", o), ("seq_lens", seq_lens), ("lse", lse),
                        ("page_table", page_table)):
            setattr(b, name, self._pointer(name, t, labels.get(name)))
        return b

    def execute(self, buffers, workspace, stream):
        self._handle("execute")
        if not isinstance(buffers, Buffers):
            raise IngotError(f"execute: buffers is {type(buffers).__name__} (allowed: what plan.buffers() returns)")
        ws_ptr, ws_size = None, 0
        if workspace is not None:
            for attr in ("data_ptr", "numel", "element_size"):
                if not hasattr(workspace, attr):
                    raise IngotError(f"execute: workspace is {type(workspace).__name__}, not a tensor "
                                     f"(it has no {attr}; allowed: a torch tensor or None)")
            self.ctx._check_device("execute", "workspace", workspace)
            if self.ctx.backend != "none" and not _device_index(workspace)[0]:
                raise IngotError("execute: workspace is in host memory (allowed: a tensor on the context's "
                                 "device, or None when workspace_size is 0)")
            ws_ptr = _int_arg("execute", "workspace.data_ptr()", workspace.data_ptr(), 0, UINTPTR_MAX)
            ws_size = _int_arg("execute", "workspace size", workspace.numel() * workspace.element_size(), 0,
                               UINTPTR_MAX)
        stream = 0 if stream is None else stream
        _int_arg("execute", "stream", stream, 0, UINTPTR_MAX,
                 "None or a stream handle, e.g. torch.cuda.current_stream().cuda_stream")
        self.execute_checked(buffers, ws_ptr, ws_size, stream)

    def execute_checked(self, buffers, ws_ptr, ws_size, stream):
        """execute() for a caller that has made its arguments the way execute()
        checks them (a Buffers from buffers(), integer pointer, size and stream
        handle in range): ingot.DecodePlan's path for tensors it checked before.
        libingot still checks what it always checks (the plan, the workspace size)."""
        err = C.create_string_buffer(ERR_BYTES)
        s = self.ctx.rt.lib.ingot_plan_execute_ex(self._handle("execute"), C.c_void_p(stream), C.byref(buffers),
                                                  ws_ptr, ws_size, err, ERR_BYTES)
        if s:
            raise IngotError(f"execute: {self.ctx.rt.status(s)}: {_text(err.value)}")
