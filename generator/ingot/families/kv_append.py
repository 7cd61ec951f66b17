"""The KV-cache append family: one launch writes Sq new tokens' K and V per
sequence into a contiguous or paged cache at the sequence's device length and
(advance) moves that length past them, so that append and attention decode
replay as one graph token after token (runtime/include/ingot/kv_append.h says
the device semantics). The algorithm lives in templates/ingot_kva_append.h;
this module describes it to the generator through FAMILY (the interface:
ingot/families/__init__.py and family.py).

A kernel is specialized on its dtype, its cache layout and its workgroup size
only; head dim, KV heads, batch, Sq, capacity and page size are kernel
arguments, admitted by ranges."""

from dataclasses import dataclass

from ingot.families.family import Const, Family
from ingot.schema import Int, Map, Range, Str

NAME = "kv_append"

DTYPES = ("bf16", "fp16")
KV_LAYOUTS = ("contiguous", "paged")
INT32_MAX = (1 << 31) - 1
# A row of head_dim elements moves as 16-byte vectors of 8 elements; the plan
# refuses other head dims (INGOT_KVA_HEAD_DIM_* in
# runtime/src/families/kv_append/ingot_kv_append_plan.h; test_kv_append reads both).
HEAD_DIM_STEP = 8
MAX_HEAD_DIM = 512
MAX_THREADS = 1024  # a workgroup's threads on every arch
MAX_PAGE_SIZE = 1 << 20  # tokens per KV page (the attention family's bound too)
# One workgroup per sequence: grid x, at most 2^31 - 1 on every arch, and AMD
# counts a grid's work-items (batch x threads) in 32 bits (batch_limit below).
UINT32_MAX = (1 << 32) - 1
MAX_KV_HEADS = 65535  # as the attention family's
DEFAULT_THREADS = 256

AXES = {
    "dtype": Str(choices=list(DTYPES)),
    "kv_layout": Str(choices=list(KV_LAYOUTS)),
}
AXIS_DEFAULTS = {}

KNOBS = {
    # Threads per workgroup (one workgroup per sequence): whole waves of every
    # arch the kernel is built for (check_variant).
    "threads": Int(32, MAX_THREADS),
}
OPTIONAL_KNOBS = {"threads": DEFAULT_THREADS}

# Everything a kernel admits is a runtime value, checked against a range; the
# defaults admit everything the kernels can run.
ADMIT = Map({
    "batch": (Range(1, INT32_MAX), False, None),  # default: 1..batch_limit(threads)
    "num_kv_heads": (Range(1, MAX_KV_HEADS), False, (1, MAX_KV_HEADS)),
    "seq_q": (Range(1, INT32_MAX), False, (1, INT32_MAX)),
    "head_dim": (Range(HEAD_DIM_STEP, MAX_HEAD_DIM), False, (HEAD_DIM_STEP, MAX_HEAD_DIM)),
    "capacity": (Range(1, INT32_MAX), False, (1, INT32_MAX)),
    # paged kernels only
    "page_size": (Range(1, MAX_PAGE_SIZE), False, None),
})
PACK_KEYS = {}

# The kernarg signature of the entry point (INGOT_KVA_PARAMS in
# templates/ingot_kva_append.h), in order; Family.signature() lays out the offsets.
SIGNATURE = (
    [(n, "global_buffer", 8) for n in ("k_new", "v_new", "k_cache", "v_cache", "seq_lens", "page_table")]
    + [(n, "by_value", 8) for n in (
        "k_new_stride_b", "k_new_stride_s", "k_new_stride_h",
        "v_new_stride_b", "v_new_stride_s", "v_new_stride_h",
        "k_cache_stride_b", "k_cache_stride_t", "k_cache_stride_h",
        "v_cache_stride_b", "v_cache_stride_t", "v_cache_stride_h",
        "page_table_stride")]
    + [(n, "by_value", 4) for n in ("capacity", "page_size", "num_pages", "sq", "num_kv_heads", "head_dim",
                                     "advance")]
)

# The C expression the dispatch stub writes for each kernarg (plan params P,
# buffers b; templates/kv_append_dispatch.c.j2).
KERNARG_EXPR = {
    "k_new": "b->k_new", "v_new": "b->v_new", "k_cache": "b->k_cache", "v_cache": "b->v_cache",
    "seq_lens": "b->seq_lens", "page_table": "b->page_table",
    "k_new_stride_b": "P->k_new_stride[0]", "k_new_stride_s": "P->k_new_stride[1]",
    "k_new_stride_h": "P->k_new_stride[2]",
    "v_new_stride_b": "P->v_new_stride[0]", "v_new_stride_s": "P->v_new_stride[1]",
    "v_new_stride_h": "P->v_new_stride[2]",
    "k_cache_stride_b": "P->k_cache_stride[0]", "k_cache_stride_t": "P->k_cache_stride[1]",
    "k_cache_stride_h": "P->k_cache_stride[2]",
    "v_cache_stride_b": "P->v_cache_stride[0]", "v_cache_stride_t": "P->v_cache_stride[1]",
    "v_cache_stride_h": "P->v_cache_stride[2]",
    "page_table_stride": "P->page_table_stride", "capacity": "P->capacity", "page_size": "P->page_size",
    "num_pages": "P->num_pages", "sq": "P->sq", "num_kv_heads": "P->num_kv_heads", "head_dim": "P->head_dim",
    "advance": "P->advance",
}

ENTRY_POINTS = ("append",)

METADATA_TYPES = {"dtype": "string", "kv_layout": "string", "threads": "int"}


@dataclass(frozen=True)
class Instance:
    """One append kernel: its dtype, layout and workgroup size, and the graphs it admits."""
    pack: str
    variant: str
    priority: int
    dtype: str
    kv_layout: str
    threads: int
    batch: tuple
    num_kv_heads: tuple
    seq_q: tuple
    head_dim: tuple
    capacity: tuple
    page_size: tuple  # (lo, hi) for a paged kernel; () for a contiguous one
    archs: tuple = ()

    @property
    def name(self):
        layout = "contig" if self.kv_layout == "contiguous" else "paged"
        return f"{self.pack}_{self.dtype}_{layout}_t{self.threads}"

    def filename(self, arch):
        return f"kernels/{arch}/{self.name}.hip"

    def symbol(self, entry):
        return f"{self.name}_{entry}"

    @property
    def code_key(self):
        return (self.dtype, self.kv_layout, self.threads)

    @property
    def rank(self):
        """Kernels that both admit a graph do the same work: the pack's priority decides."""
        return (self.priority,)

    def spec(self):
        return {}

    def entry_dynamic_lds(self, arch):
        return {}

    def metadata(self):
        return {"dtype": self.dtype, "kv_layout": self.kv_layout, "threads": self.threads}

    def admission(self):
        return {
            "dtype": frozenset([self.dtype]), "kv_layout": frozenset([self.kv_layout]),
            "batch": self.batch, "num_kv_heads": self.num_kv_heads, "seq_q": self.seq_q,
            "head_dim": self.head_dim, "capacity": self.capacity,
            "page_size": self.page_size or frozenset([0]),
            "arch": frozenset(self.archs),
        }

    def constraints(self):
        """The kernel-scope UMD (fields: runtime/src/families/kv_append/kv_append_family.c)."""
        c = [
            {"field": "dtype", "op": "eq", "value": self.dtype},
            {"field": "kv_layout", "op": "eq", "value": self.kv_layout},
            {"field": "batch", "op": "range", "min": self.batch[0], "max": self.batch[1]},
            {"field": "num_kv_heads", "op": "range", "min": self.num_kv_heads[0], "max": self.num_kv_heads[1]},
            {"field": "seq_q", "op": "range", "min": self.seq_q[0], "max": self.seq_q[1]},
            {"field": "head_dim", "op": "range", "min": self.head_dim[0], "max": self.head_dim[1]},
            {"field": "capacity", "op": "range", "min": self.capacity[0], "max": self.capacity[1]},
        ]
        if self.page_size:
            c.append({"field": "page_size", "op": "range", "min": self.page_size[0], "max": self.page_size[1]})
        return c


# What every kernel of the family reads and writes the same way: rows of
# head_dim elements as 16-byte vectors (last stride 1, the others multiples of 8
# elements: dense_d), the lengths as one int32 array in device memory, a page
# table row as adjacent int32 entries.
GRAPH_CONSTRAINTS = [
    {"field": "head_dim", "op": "multiple_of", "value": HEAD_DIM_STEP},
    {"field": "head_dim", "op": "range", "min": HEAD_DIM_STEP, "max": MAX_HEAD_DIM},
    {"field": "k_new.layout", "op": "eq", "value": "dense_d"},
    {"field": "v_new.layout", "op": "eq", "value": "dense_d"},
    {"field": "k_cache.layout", "op": "eq", "value": "dense_d"},
    {"field": "v_cache.layout", "op": "eq", "value": "dense_d"},
    {"field": "seq_lens.dtype", "op": "eq", "value": "int32"},
    {"field": "seq_lens.memory", "op": "eq", "value": "device"},
    {"field": "seq_lens.layout", "op": "eq", "value": "contiguous"},
    {"field": "page_table.dtype", "op": "in", "values": ["absent", "int32"]},
    {"field": "page_table.layout", "op": "in", "values": ["absent", "dense_rows"]},
]


def batch_limit(threads):
    """The largest batch a kernel of `threads` runs: grid x <= 2^31 - 1 and
    batch x threads work-items <= 2^32 - 1 (the plan refuses more)."""
    return min(INT32_MAX, UINT32_MAX // threads)


def check_variant(var, ctx):
    """threads: whole waves on every arch of the variant; page_size: given
    exactly when the variant has a paged layout."""
    ok = True
    threads = var.knobs["threads"]
    for arch in var.archs:
        if threads % arch.wave_size:
            ctx.error(var.path + ("knobs", "threads"), f"threads {threads} is not a whole number of "
                      f"{arch.wave_size}-lane waves of {arch.name} (allowed: a multiple of {arch.wave_size} "
                      f"up to {MAX_THREADS})")
            ok = False
            break
    has_paged = "paged" in var.axes["kv_layout"]
    if var.admit["page_size"] is not None and not has_paged:
        ctx.error(var.path + ("admit", "page_size"), "page_size given, but the variant has no paged kv_layout")
        ok = False
    if var.admit["batch"] is not None and var.admit["batch"][1] > batch_limit(threads):
        ctx.error(var.path + ("admit", "batch"), f"batch up to {var.admit['batch'][1]} is past what "
                  f"{threads}-thread workgroups allow (allowed: at most {batch_limit(threads)}: batch x "
                  f"threads work-items within 2^32 - 1, one workgroup per sequence)")
        ok = False
    lo, hi = var.admit["head_dim"]
    if not any(d % HEAD_DIM_STEP == 0 for d in range(lo, hi + 1)):
        ctx.error(var.path + ("admit", "head_dim"), f"head_dim [{lo}, {hi}] holds no multiple of "
                  f"{HEAD_DIM_STEP} (the kernels move rows as 16-byte vectors of {HEAD_DIM_STEP} elements)")
        ok = False
    return ok


def expand(var, points, ctx):
    admit = var.admit
    out = []
    for point in points:
        paged = point["kv_layout"] == "paged"
        out.append(Instance(
            pack=var.pack, variant=var.name, priority=var.priority, dtype=point["dtype"],
            kv_layout=point["kv_layout"], threads=var.knobs["threads"],
            batch=tuple(admit["batch"] or (1, batch_limit(var.knobs["threads"]))), num_kv_heads=tuple(admit["num_kv_heads"]), seq_q=tuple(admit["seq_q"]),
            head_dim=tuple(admit["head_dim"]), capacity=tuple(admit["capacity"]),
            page_size=tuple(admit["page_size"] or (1, MAX_PAGE_SIZE)) if paged else (),
            archs=tuple(a.name for a in var.archs)))
    return out


def workspace(pack):
    return {"policy": "none", "description": "none: the append writes only the caches and the lengths"}


def kernel_context(inst, arch):
    return {}


def dispatch_context(pack):
    return {}


# The constants its kernel, its planner and this module share: templates/ingot_abi.h.
ABI = (
    Const("INGOT_KVA_HEAD_DIM_STEP", HEAD_DIM_STEP, "a row moves as 16-byte vectors of 8 elements"),
    Const("INGOT_KVA_MAX_HEAD_DIM", MAX_HEAD_DIM, "elements per row of K or V"),
    Const("INGOT_KVA_MAX_THREADS", MAX_THREADS, "threads per workgroup"),
) + tuple(Const(f"INGOT_KVA_ENTRY_{e.upper()}", i, f"launch entry: the UDD's entry_points[{i}], {e}")
          for i, e in enumerate(ENTRY_POINTS))

FAMILY = Family(
    name=NAME, axes=AXES, axis_defaults=AXIS_DEFAULTS, knobs=KNOBS, optional_knobs=OPTIONAL_KNOBS,
    admit=ADMIT, pack_keys=PACK_KEYS,
    check_variant=check_variant, expand=expand,
    no_instance_reason="every axis combination is excluded",
    metadata_types=METADATA_TYPES, entry_points=ENTRY_POINTS, kernargs=tuple(SIGNATURE),
    graph_constraints=GRAPH_CONSTRAINTS, workspace=workspace,
    kernel_template="kv_append.hip.j2",
    dispatch_source_template="kv_append_dispatch.c.j2",
    dispatch_header_template="kv_append_dispatch.h.j2",
    abi=ABI, kernarg_expr=KERNARG_EXPR, kernel_context=kernel_context, dispatch_context=dispatch_context,
)
