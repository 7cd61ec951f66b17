"""The torch-facing API: attention decode on torch tensors (docs/python.md).

    o = ingot.decode(q, k_cache, v_cache, seq_lens)                 # plans (cached), runs
    plan = ingot.DecodePlan(q, k_cache, v_cache, seq_lens)          # plans once
    o = plan.run(q, k_cache, v_cache, seq_lens)                     # any number of times

Layouts (docs/attention_decode.md): q [B, Hq, Sq, D] (or [B, Hq, D], one query
token); k_cache, v_cache [B, capacity, Hkv, D], or paged [pages, page_size,
Hkv, D] with page_table [B, max_pages] int32; seq_lens [B] int32, the valid
length of each sequence (clamped to the capacity). The output is [B, Hq, Sq, D]
(q's shape) in q's dtype; with return_lse, also the log-sum-exp [B, Hq, Sq]
(or [B, Hq]) in float32. Strides are torch's, in elements, passed as they are.

Runs on torch's current stream of q's device, never synchronizes and never
reads seq_lens on the host, so a run can be captured in torch.cuda.graphs (run
once before capturing, so that the plan and the workspace exist). A plan owns
one workspace per stream it runs on. Every misuse raises ingot.IngotError
naming the argument and what is allowed.

libingot is $INGOT_LIBRARY or the installed one; the packs opened are
$INGOT_PACKS (os.pathsep-separated pack folders or folders of them) or the
shipped ones (ingot.paths)."""

import collections
import math
import threading

from ingot import paths
from ingot.runtime import Buffers, IngotError, Runtime

_lock = threading.Lock()
_runtime = None
_contexts = {}  # (backend, device index) -> Context with the default packs open
_plans = collections.OrderedDict()  # ingot.decode's cache: key -> DecodePlan
PLAN_CACHE_SIZE = 64
CHECKED_LAYOUTS = 16  # per plan: argument layouts that passed every check (DecodePlan.run's fast path)
KV_DTYPES = ("bfloat16", "float16")
_LABELS = {"k": "k_cache", "v": "v_cache", "o": "out"}  # the binding's graph names -> this API's


def _torch():
    try:
        import torch
    except ImportError:
        raise IngotError("ingot.decode and DecodePlan need PyTorch (allowed: a python with torch installed; "
                         "the generator and ingot.runtime work without it)") from None
    return torch


def _runtime_():
    global _runtime
    if _runtime is None:
        _runtime = Runtime()
    return _runtime


def default_context(device=None):
    """The runtime context of a torch CUDA (or ROCm) device, with the default
    packs open; one per device, made on first use."""
    torch = _torch()
    if device is None:
        if not torch.cuda.is_available():
            raise IngotError("default_context: torch sees no CUDA or ROCm device (allowed: a machine with one, "
                             "or a host context for planning only: ingot.Runtime().context('none', arch=...))")
        device = torch.device("cuda", torch.cuda.current_device())
    device = torch.device(device)
    if device.type != "cuda":
        raise IngotError(f"default_context: device {device} (allowed: a cuda device)")
    index = device.index if device.index is not None else torch.cuda.current_device()
    backend = "hip" if getattr(torch.version, "hip", None) else "cuda"
    with _lock:
        ctx = _contexts.get((backend, index))
        if ctx is None:
            ctx = _runtime_().context(backend, index)
            packs = paths.pack_dirs()
            if not packs:
                raise IngotError("default_context: no pack to open (allowed: an ingot installed with its packs, "
                                 "`make` in the source tree, or INGOT_PACKS=/path/to/pack)")
            for p in packs:
                ctx.open_pack(p)
            _contexts[(backend, index)] = ctx
    return ctx


class _Spec:
    """What the binding reads of a tensor, for a tensor not yet allocated (the
    output, the LSE): dtype, shape, contiguous strides and device."""

    def __init__(self, shape, dtype, device):
        self.shape, self.dtype, self.device = tuple(shape), dtype, device
        self.is_cuda = device.type == "cuda"
        strides, s = [], 1
        for d in reversed(self.shape):
            strides.insert(0, s)
            s *= d
        self._strides = strides

    def dim(self):
        return len(self.shape)

    def stride(self, i):
        return self._strides[i]

    def data_ptr(self):
        return 0


def _name_of(t):
    return str(t.dtype).replace("torch.", "")


def _check_tensor(torch, where, name, t, ranks, dtypes=None, hint=""):
    if not isinstance(t, torch.Tensor):
        raise IngotError(f"{where}: {name} is {type(t).__name__} (allowed: a torch.Tensor)")
    if t.layout != torch.strided:
        raise IngotError(f"{where}: {name} has layout {t.layout} (allowed: torch.strided)")
    if t.dim() not in ranks:
        raise IngotError(f"{where}: {name} has {t.dim()} dims, shape {list(t.shape)} "
                         f"(allowed: {' or '.join(ranks.values())})")
    if dtypes and _name_of(t) not in dtypes:
        raise IngotError(f"{where}: {name}.dtype = {_name_of(t)} (allowed: {', '.join(dtypes)}{hint})")


def _check_args(torch, where, q, k, v, seq_lens, page_table, causal, return_lse, host):
    """The checks that need torch; the graph's own (what a kernel admits, dims
    that must agree) are libingot's and come back naming the graph field."""
    _check_tensor(torch, where, "q", q, {4: "[B, Hq, Sq, D]", 3: "[B, Hq, D]"}, KV_DTYPES)
    kv_ranks = {4: "[pages, page_size, Hkv, D]" if page_table is not None else "[B, capacity, Hkv, D]"}
    for name, t in (("k_cache", k), ("v_cache", v)):
        _check_tensor(torch, where, name, t, kv_ranks, (_name_of(q),), ", the dtype of q")
    if tuple(k.shape) != tuple(v.shape):
        raise IngotError(f"{where}: v_cache has shape {list(v.shape)} (allowed: {list(k.shape)}, that of k_cache)")
    _check_tensor(torch, where, "seq_lens", seq_lens, {1: "[B]"}, ("int32",), "; seq_lens.int() converts")
    if page_table is not None:
        _check_tensor(torch, where, "page_table", page_table, {2: "[B, max_pages]"}, ("int32",),
                      "; page_table.int() converts")
    for name, value in (("causal", causal), ("return_lse", return_lse)):
        if not isinstance(value, bool):
            raise IngotError(f"{where}: {name} = {value!r} (allowed: True, False)")
    for name, t in (("q", q), ("k_cache", k), ("v_cache", v)):
        if t.shape[-1] > 1 and t.stride(-1) != 1:
            raise IngotError(f"{where}: {name}.stride(-1) = {t.stride(-1)} (allowed: 1, the head dim adjacent; "
                             f"{name}.contiguous() gives it)")
    if host:
        return
    if q.device.type != "cuda":
        raise IngotError(f"{where}: q is on {q.device} (allowed: a cuda device)")
    tensors = [("k_cache", k), ("v_cache", v), ("seq_lens", seq_lens)]
    if page_table is not None:
        tensors.append(("page_table", page_table))
    for name, t in tensors:
        if t.device != q.device:
            raise IngotError(f"{where}: {name} is on {t.device} (allowed: {q.device}, the device of q)")


def _capacity(where, k, page_table, capacity):
    natural = k.shape[1] * page_table.shape[1] if page_table is not None else k.shape[1]
    if capacity is None:
        return natural
    if isinstance(capacity, bool) or not isinstance(capacity, int):
        raise IngotError(f"{where}: capacity = {capacity!r} (allowed: None or an integer)")
    return capacity


def _layout_key(t):
    return None if t is None else (str(t.dtype), tuple(t.shape), tuple(t.stride()), str(t.device))


def _run_key(torch, tensors):
    """What every check of DecodePlan.run reads of its tensor arguments (type,
    layout, dtype, shape, strides, device; None for an absent one), or None
    when an argument is not a plain tensor (the checks then say what it is)."""
    key = []
    for t in tensors:
        if t is None:
            key.append(None)
        elif type(t) is torch.Tensor:
            key.append((t.dtype, t.layout, t.shape, t.stride(), t.device))
        else:
            return None
    return tuple(key)


def _decode_key(torch, q, k, v, seq_lens, page_table, causal, return_lse, scale, capacity, context):
    """ingot.decode's plan-cache key: the layouts (_run_key; _layout_key's for
    tensor subclasses) and every option with its type (so that causal=1 or
    scale=True, which the checks refuse, never meet a plan made for True or 1.0);
    None where an argument is not a tensor or not hashable (the checks name it)."""
    layouts = _run_key(torch, (q, k, v, seq_lens, page_table))
    try:
        if layouts is None:
            layouts = tuple(_layout_key(t) for t in (q, k, v, seq_lens, page_table))
        key = (layouts,) + tuple((type(x), x) for x in (causal, return_lse, scale, capacity)) + (context,)
        hash(key)
        return key
    except Exception:  # noqa: BLE001  (anything an odd argument raises: the checks say what it is)
        return None


def _raw_stream(torch):
    """The handle of torch's current stream of the current device, by the
    cheapest route this torch has."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(torch.cuda.current_device())
    return torch.cuda.current_stream().cuda_stream


class DecodePlan:
    """A decode planned once for one shape (dtypes, shapes, strides, device,
    mask, LSE) and run any number of times on tensors of that shape.

    DecodePlan(q, k_cache, v_cache, seq_lens, page_table=None, causal=False,
               return_lse=False, scale=None, capacity=None, context=None)

    The tensors give only their layout here (nothing is read or launched).
    scale: the softmax scale (default 1/sqrt(D)); capacity: the tokens a
    sequence may hold (default k_cache.shape[1], or page_size x max_pages when
    paged); context: an ingot.runtime Context (default: q's device, with the
    default packs; a host context, backend 'none', plans without running).
    Attributes: kernel, num_splits, launches, workspace_size."""

    def __init__(self, q, k_cache, v_cache, seq_lens, page_table=None, causal=False, return_lse=False,
                 scale=None, capacity=None, context=None):
        torch = _torch()
        where = "DecodePlan"
        host = context is not None and context.backend == "none"
        _check_args(torch, where, q, k_cache, v_cache, seq_lens, page_table, causal, return_lse, host)
        self.context = context if context is not None else default_context(q.device)
        self.causal, self.return_lse, self.squeeze = causal, return_lse, q.dim() == 3
        self._host = host
        q4 = q.unsqueeze(2) if self.squeeze else q
        self._o_shape = tuple(q4.shape)
        self._lse_shape = self._o_shape[:3]
        o = _Spec(self._o_shape, q.dtype, q.device)
        lse = _Spec(self._lse_shape, torch.float32, q.device) if return_lse else None
        self.capacity = _capacity(where, k_cache, page_table, capacity)
        try:
            self._plan = self.context.plan(q4, k_cache, v_cache, o, seq_lens, capacity=self.capacity,
                                           causal=causal, lse=lse, page_table=page_table, scale=scale,
                                           as_device=host)
        except IngotError as e:
            raise IngotError(f"{where}: {e}") from None
        self.paged = page_table is not None
        self.kernel = self._plan.kernel
        self.num_splits = self._plan.num_splits
        self.launches = self._plan.launches
        self.workspace_size = self._plan.workspace_size
        self._workspaces = {}  # stream handle -> uint8 tensor of workspace_size bytes
        self._ws_lock = threading.Lock()
        self._checked = collections.OrderedDict()  # run keys (_run_key) that passed every check

    def __repr__(self):
        return (f"DecodePlan(kernel={self.kernel!r}, num_splits={self.num_splits}, launches={self.launches}, "
                f"workspace_size={self.workspace_size})")

    def workspace(self, stream=None):
        """This plan's workspace on `stream` (a torch.cuda.Stream; default: the
        current stream of the plan's device), allocated on first use."""
        torch = _torch()
        if self.workspace_size == 0:
            return None
        if self._host:
            key, device = 0, "cpu"
        else:
            device = torch.device("cuda", self.context.ordinal)
            stream = stream if stream is not None else torch.cuda.current_stream(device)
            key = stream.cuda_stream
        with self._ws_lock:
            ws = self._workspaces.get(key)
            if ws is None:
                if self._host:
                    ws = torch.empty(self.workspace_size, dtype=torch.uint8)
                else:
                    with torch.cuda.stream(stream):
                        ws = torch.empty(self.workspace_size, dtype=torch.uint8, device=device)
                self._workspaces[key] = ws
        return ws

    def run(self, q, k_cache, v_cache, seq_lens, page_table=None, out=None, lse=None):
        """The decode of these tensors (the planned layout) on the current stream.
        Returns out (allocated when None), and the LSE too with return_lse."""
        torch = _torch()
        key = None if self._host else _run_key(torch, (q, k_cache, v_cache, seq_lens, page_table, out, lse))
        if key is not None and key in self._checked and q.device.index == torch.cuda.current_device():
            return self._run_checked(torch, q, k_cache, v_cache, seq_lens, page_table, out, lse)
        result = self._run(torch, q, k_cache, v_cache, seq_lens, page_table, out, lse)
        if key is not None:
            self._checked[key] = True
            while len(self._checked) > CHECKED_LAYOUTS:
                self._checked.popitem(last=False)
        return result

    def _run_checked(self, torch, q, k_cache, v_cache, seq_lens, page_table, out, lse):
        """run() for arguments of a layout that passed every check before (the
        same types, dtypes, shapes, strides and devices, so the same checks
        would pass again), on the current device: only their addresses are new.
        This is the call a decode loop makes token after token."""
        if out is None:
            out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
        if self.return_lse and lse is None:
            lse = torch.empty(q.shape[:-1], dtype=torch.float32, device=q.device)
        b = Buffers(q.data_ptr(), k_cache.data_ptr(), v_cache.data_ptr(), out.data_ptr(),
                    lse.data_ptr() if lse is not None else None, seq_lens.data_ptr(),
                    page_table.data_ptr() if page_table is not None else None)
        stream = _raw_stream(torch)
        ws = self._workspaces.get(stream) if self.workspace_size else None
        if ws is None and self.workspace_size:
            ws = self.workspace(torch.cuda.current_stream(q.device))
        try:
            self._plan.execute_checked(b, ws.data_ptr() if ws is not None else None, self.workspace_size, stream)
        except IngotError as e:
            raise IngotError(f"DecodePlan.run: {e}") from None
        return (out, lse) if self.return_lse else out

    def _run(self, torch, q, k_cache, v_cache, seq_lens, page_table, out, lse):
        where = "DecodePlan.run"
        if (page_table is not None) != self.paged:
            raise IngotError(f"{where}: page_table is {'given' if page_table is not None else 'None'} "
                             f"(allowed: {'a tensor, as planned' if self.paged else 'None, as planned'})")
        _check_args(torch, where, q, k_cache, v_cache, seq_lens, page_table, self.causal, self.return_lse,
                    self._host)
        if (q.dim() == 3) != self.squeeze:
            raise IngotError(f"{where}: q has {q.dim()} dims (allowed: {3 if self.squeeze else 4}, as planned)")
        q4 = q.unsqueeze(2) if self.squeeze else q
        # out4, lse4: the 4-D (3-D) views the kernel writes; what is returned has q's rank.
        if out is None:
            out4 = torch.empty(self._o_shape, dtype=q.dtype, device=q.device)
            out = out4.squeeze(2) if self.squeeze else out4
        else:
            out4 = self._given(torch, where, "out", out, q.shape, q.dtype, q.device)
        lse4 = None
        if self.return_lse:
            if lse is None:
                lse4 = torch.empty(self._lse_shape, dtype=torch.float32, device=q.device)
                lse = lse4.squeeze(2) if self.squeeze else lse4
            else:
                lse4 = self._given(torch, where, "lse", lse, tuple(q.shape[:-1]), torch.float32, q.device)
        elif lse is not None:
            raise IngotError(f"{where}: lse is given (allowed: None; the plan was made with return_lse=False)")
        try:
            b = self._plan.buffers(q4, k_cache, v_cache, out4, seq_lens, lse4, page_table, labels=_LABELS)
            if self._host:
                self._plan.execute(b, self.workspace(), None)
            else:
                stream = torch.cuda.current_stream(q.device)
                self._plan.execute(b, self.workspace(stream), stream.cuda_stream)
        except IngotError as e:
            raise IngotError(f"{where}: {e}") from None
        return (out, lse) if self.return_lse else out

    def _given(self, torch, where, name, t, shape, dtype, device):
        """A caller's output tensor: the shape of q (or its rows), dtype, device, contiguous."""
        if not isinstance(t, torch.Tensor):
            raise IngotError(f"{where}: {name} is {type(t).__name__} (allowed: a torch.Tensor or None)")
        if tuple(t.shape) != tuple(shape) or t.dtype != dtype or (t.device != device and not self._host):
            raise IngotError(f"{where}: {name} is {_name_of(t)} {list(t.shape)} on {t.device} "
                             f"(allowed: {str(dtype).replace('torch.', '')} {list(shape)} on {device})")
        if not t.is_contiguous():
            raise IngotError(f"{where}: {name} is not contiguous (allowed: a contiguous tensor)")
        return t.unsqueeze(2) if self.squeeze else t

    __call__ = run


def decode(q, k_cache, v_cache, seq_lens, page_table=None, causal=False, return_lse=False, scale=None,
           capacity=None, out=None, lse=None, context=None):
    """Attention decode: softmax(scale * q k^T, over each sequence's first
    seq_lens[b] tokens[, causal]) v. Plans once per layout (a cache of
    PLAN_CACHE_SIZE plans) and runs on torch's current stream. Returns the
    output [B, Hq, Sq, D] (q's shape), and with return_lse also the LSE.
    context: as DecodePlan's (default: q's device, with the default packs)."""
    torch = _torch()
    # The plan cache's key: the layouts and every option, each with its type (so that
    # causal=1 or scale=True, which the checks refuse, never meet a plan made for
    # True or 1.0). A layout met before skips the checks here; run() has its own.
    key = _decode_key(torch, q, k_cache, v_cache, seq_lens, page_table, causal, return_lse, scale, capacity,
                      context)
    with _lock:
        plan = _plans.get(key) if key is not None else None
        if plan is not None:
            _plans.move_to_end(key)
    if plan is None:
        host = context is not None and context.backend == "none"
        _check_args(torch, "decode", q, k_cache, v_cache, seq_lens, page_table, causal, return_lse, host)
        if scale is not None and (isinstance(scale, bool) or not isinstance(scale, (int, float)) or
                                  not math.isfinite(scale)):
            raise IngotError(f"decode: scale = {scale!r} (allowed: None or a finite number)")
        plan = DecodePlan(q, k_cache, v_cache, seq_lens, page_table=page_table, causal=causal,
                          return_lse=return_lse, scale=scale, capacity=capacity, context=context)
        if key is not None:  # (None: an argument no key holds, planned afresh each call)
            with _lock:
                _plans[key] = plan
                while len(_plans) > PLAN_CACHE_SIZE:
                    _plans.popitem(last=False)
    try:
        return plan.run(q, k_cache, v_cache, seq_lens, page_table=page_table, out=out, lse=lse)
    except IngotError as e:
        raise IngotError(str(e).replace("DecodePlan.run: ", "decode: ", 1)) from None
