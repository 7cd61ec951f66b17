"""The attention decode family: single-token (and speculative) decode over a
contiguous or paged KV cache, split-KV, optional LSE. The algorithm lives in
templates/ingot_attention_decode.h (an umbrella over headers by concern,
ingot_ad_*.h); this module describes it to the generator through FAMILY (the
interface: ingot/families/__init__.py and family.py)."""

import dataclasses
from dataclasses import dataclass

from ingot.families.family import Const, Family, KnownSpill
from ingot.schema import Bool, Int, List, Map, Range, Str

NAME = "attention_decode"

DTYPES = ("bf16", "fp16")
# Multiples of 16: a token takes the next power of two of D/8 lanes (the ones
# past D/8 idle); the tensor-core path (sm_90) takes multiples of 64.
HEAD_DIMS = (64, 80, 96, 112, 128, 160, 192, 256)
KV_LAYOUTS = ("contiguous", "paged")
MASKS = ("none", "causal")
MAX_GROUP = 65535  # Hq / Hkv: row blocks of a KV head are grid x, at most 2^31 / (Hkv x splits)
MAX_ROWS = 16  # q and accumulator rows one wave keeps in registers (a workgroup: waves x them under row_waves)
MAX_SIMT_ROWS = 8  # ... on the SIMT path (16: both halves of the tensor- and matrix-core tiles)
MAX_SPLITS = 256  # kernel limit (kMaxSplits in the header)
INT32_MAX = (1 << 31) - 1
# The graph's own bound on capacity; a kernel's is lower (capacity_limit below).
KERNEL_MAX_CAPACITY = INT32_MAX
# The kernels' token indices are int32 and run up to this many tiles past the
# capacity (the ring's copies NS - 1 tiles ahead, at most 8 stages); the plan
# refuses larger capacities (INGOT_AD_TOKEN_INDEX_TILES in
# runtime/src/families/attention_decode/ingot_attention_decode_plan.h; test_expand reads both).
TOKEN_INDEX_TILES = 8
# Grid y (merge: Hkv) and z (B) are at most 65535 on every arch; the plan
# refuses more (runtime/src/families/attention_decode/ingot_attention_decode_plan.h).
MAX_KV_HEADS = 65535
MAX_BATCH = 65535
MAX_SQ = 8  # query tokens per sequence (speculative decode)
HEAD_DIM_STEP = 16  # head dims are multiples of it (HEAD_DIMS)
MAX_PAGE_SIZE = 1 << 20  # tokens per KV page
MAX_BLOCK_THREADS = 1024  # waves x wave size of one workgroup, on every arch
MERGE_WAVES = 4  # the merge kernel's waves per workgroup, whatever the split's
MAX_TILES_PER_SPLIT = 1 << 20  # the split policy's bound on a segment's tiles
ELEMENT_BYTES = 2

AXES = {
    "dtype": Str(choices=list(DTYPES)),
    "head_dim": Int(1, 4096),
    "group": Int(1, MAX_GROUP),
    "kv_layout": Str(choices=list(KV_LAYOUTS)),
    "max_sq": Int(1, MAX_SQ),
}
AXIS_DEFAULTS = {"max_sq": [1]}  # a variant without max_sq makes one-query kernels

KNOBS = {
    "waves": Int(1, 16),
    "tokens_per_wave": Int(1, 256),
    "max_rows": Int(1, 64),
    "max_splits": Int(1, MAX_SPLITS),
    "occupancy": Int(0, 16),  # workgroups per CU the compiler should fit (0: no hint)
    # simt: CUDA-core / VALU math everywhere; auto: tensor cores where the arch
    # has them (sm_90 mma.sync), the SIMT path elsewhere.
    "math": Str(choices=["auto", "simt"]),
    # Tensor-core path: 0 keeps the next chunk in registers; 2..8 stream K and V
    # through that many shared-memory stages per wave (async copies).
    "stages": Int(0, 8),
    # Experiment: 1 stamps each workgroup's phases into records past the workspace's
    # partials (bench/kernel_probe.py --trace; tensor-core path, NVIDIA archs).
    "trace": Int(0, 1),
    # true: the waves of a workgroup take different rows of the same tokens (each
    # its max_rows of waves x max_rows rows) instead of different tokens of the
    # same rows, so that a large group (multi-query: 48/1, 71/1) reads K and V
    # once per waves x max_rows rows; on the tensor-core path through one
    # shared-memory ring the workgroup fills together (stages >= 2).
    "row_waves": Bool(),
}
OPTIONAL_KNOBS = {"occupancy": 0, "math": "simt", "stages": 0, "trace": 0, "row_waves": False}

# A kernel's rows are sized for its group (the axis `group`: group x max_sq
# rows, at most max_rows per workgroup: 8 a wave on the SIMT path, 16 on the matrix paths), and it
# runs any group in its range of
# `groups` (default: its own group only) on those rows: smaller groups pad the
# unused rows, larger ones take several row blocks. Any number of KV heads in
# `num_kv_heads` runs on it; `heads` pins exact (Hq, Hkv) pairs for a pack that
# wants only those.
ADMIT = Map({
    "num_kv_heads": (Range(1, MAX_KV_HEADS), False, (1, MAX_KV_HEADS)),
    # [[lo, hi], ...]: each range holds exactly one of the axis' groups, whose
    # kernels admit the groups lo..hi
    "groups": (List(Range(1, MAX_GROUP), unique=True), False, None),
    "heads": (List(List(Int(1, MAX_KV_HEADS * MAX_GROUP), min_len=2, max_len=2), unique=True), False, None),
    "batch": (Range(1, MAX_BATCH), True, None),
    "seq_q": (Range(1, MAX_SQ), False, None),
    "capacity": (Range(1, KERNEL_MAX_CAPACITY), True, None),
    "page_sizes": (List(Int(1, MAX_PAGE_SIZE), unique=True), False, None),
    "masks": (List(Str(choices=list(MASKS)), unique=True), True, None),
    "lse": (Bool(), False, False),
})

SPLIT = Map({
    "ctas_per_cu": (Int(1, 64), False, 2),
    "min_tiles_per_split": (Int(1, 1 << 16), False, 1),
    "max_tiles_per_split": (Int(1, MAX_TILES_PER_SPLIT), False, 64),
    # the share of the resident workgroups whose loads keep DRAM busy (the split
    # count's time model: fewer run latency-bound)
    "saturating_percent": (Int(1, 100), False, 60),
    # ... when spread over at least this share of the CUs (a CU's own limit)
    "saturating_cu_percent": (Int(1, 100), False, 80),
})
# The pack's `split`: the dispatch stub's split-KV policy (templates/attention_decode_dispatch.c.j2).
PACK_KEYS = {"split": (SPLIT, False, {k: default for k, (_node, _req, default) in SPLIT.fields.items()})}

# The kernarg signature of every entry point (templates/ingot_ad_params.h,
# INGOT_AD_PARAMS), in order; Family.signature() lays out their offsets.
SIGNATURE = (
    [(n, "global_buffer", 8) for n in ("q", "k", "v", "o", "lse", "seq_lens", "page_table", "workspace")]
    + [(n, "by_value", 8) for n in (
        "q_stride_b", "q_stride_h", "q_stride_s", "k_stride_b", "k_stride_t", "k_stride_h",
        "v_stride_b", "v_stride_t", "v_stride_h", "o_stride_b", "o_stride_h", "o_stride_s",
        "page_table_stride")]
    + [(n, "by_value", 4) for n in ("capacity", "page_size", "sq", "num_splits", "num_kv_heads", "flags", "scale",
                                     "group")]
)

# The C expression the dispatch stub writes for each kernarg (plan p, buffers b,
# workspace ws; templates/attention_decode_dispatch.c.j2).
KERNARG_EXPR = {
    "q": "b->q", "k": "b->k", "v": "b->v", "o": "b->o", "lse": "b->lse", "seq_lens": "b->seq_lens",
    "page_table": "b->page_table", "workspace": "ws",
    "q_stride_b": "P->q_stride[0]", "q_stride_h": "P->q_stride[1]", "q_stride_s": "P->q_stride[2]",
    "k_stride_b": "P->k_stride[0]", "k_stride_t": "P->k_stride[1]", "k_stride_h": "P->k_stride[2]",
    "v_stride_b": "P->v_stride[0]", "v_stride_t": "P->v_stride[1]", "v_stride_h": "P->v_stride[2]",
    "o_stride_b": "P->o_stride[0]", "o_stride_h": "P->o_stride[1]", "o_stride_s": "P->o_stride[2]",
    "page_table_stride": "P->page_table_stride", "capacity": "P->capacity", "page_size": "P->page_size",
    "sq": "P->sq", "num_splits": "p->num_splits", "num_kv_heads": "P->num_kv_heads", "flags": "P->flags",
    "scale": "P->scale", "group": "P->group",
}

# The uniform split first (`ingot package` reads the kernarg layout and code-object
# version of a code object at its first entry point) and merge; the balanced split
# and merge (issue 23) are entry points of their own, so that the uniform kernels
# carry none of their code (registers, instruction bytes) and the plan picks by launch.
ENTRY_POINTS = ("split", "merge", "balanced_split", "balanced_merge")
# Entry points launched with the split kernel's LDS (dynamic where it has a ring past the static limit).
SPLIT_ENTRY_POINTS = ("split", "balanced_split")

METADATA_TYPES = {
    "dtype": "string", "head_dim": "int", "group": "int", "max_sq": "int", "rows": "int",
    "kv_layout": "string", "waves": "int", "tokens_per_wave": "int", "max_splits": "int", "lse": "bool",
    "row_waves": "bool",
}


@dataclass(frozen=True)
class Instance:
    """One kernel instance: the shape its code is specialized for, its knobs, and
    the graphs it admits."""
    pack: str
    variant: str
    dtype: str
    head_dim: int
    group: int  # the group its rows are sized for
    kv_layout: str
    max_sq: int
    waves: int
    tokens_per_wave: int
    rows: int
    max_splits: int
    occupancy: int
    math: str
    stages: int
    priority: int
    num_kv_heads: tuple  # (lo, hi): the KV heads it runs with
    heads: tuple  # ((hq, hkv), ...) pinned pairs of its group; () when any Hkv in num_kv_heads
    batch: tuple
    seq_q: tuple
    capacity: tuple
    page_sizes: tuple
    masks: tuple
    lse: bool
    archs: tuple = ()  # the archs it is built for (the variant's, else the pack's)
    trace: int = 0  # knob `trace`
    groups: tuple = ()  # (lo, hi): the groups (Hq / Hkv) it runs; () = (group, group)
    row_waves: bool = False  # knob `row_waves`: rows (a wave's rows x waves) the waves share tokens of

    @property
    def wave_rows(self):
        """Rows one wave holds (rows is the workgroup's: waves x these under row_waves)."""
        return self.rows // self.waves if self.row_waves else self.rows

    @property
    def token_waves(self):
        """Waves that take different tokens of a step (1 under row_waves)."""
        return 1 if self.row_waves else self.waves

    @property
    def group_range(self):
        return self.groups or (self.group, self.group)

    @property
    def name(self):
        layout = "contig" if self.kv_layout == "contiguous" else "paged"
        occ = f"o{self.occupancy}" if self.occupancy else ""
        tc = "_tc" if self.math == "auto" else ""
        st = f"s{self.stages}" if self.stages else ""
        trace = "x" if self.trace else ""
        rw = "rw" if self.row_waves else ""
        return (f"{self.pack}_{self.dtype}_d{self.head_dim}_g{self.group}_sq{self.max_sq}_{layout}"
                f"_w{self.waves}t{self.tokens_per_wave}{occ}{tc}{st}{rw}{trace}")

    def filename(self, arch):
        return f"kernels/{arch}/{self.name}.hip"

    def symbol(self, entry):
        return f"{self.name}_{entry}"

    @property
    def code_key(self):
        """What changes the code: two instances with the same key are duplicates."""
        return (self.dtype, self.head_dim, self.group, self.kv_layout, self.max_sq, self.waves,
                self.tokens_per_wave, self.rows, self.occupancy, self.math, self.stages, self.trace,
                self.row_waves)

    @property
    def tile(self):
        """Tokens one workgroup streams per step."""
        return self.token_waves * self.tokens_per_wave

    @property
    def capacity_limit(self):
        """The largest capacity its int32 token indices allow (TOKEN_INDEX_TILES)."""
        return INT32_MAX - TOKEN_INDEX_TILES * self.tile

    @property
    def rows_total(self):
        return self.group * self.max_sq

    @property
    def rank(self):
        """Selection order among kernels that admit a graph (INTERNALS.md §3):
        score = seq_q - max_sq, then priority, higher wins. Between kernels of
        one rank the plan's modelled time decides graph by graph."""
        return (-self.max_sq, self.priority)

    def spec(self):
        return {"rows_total": self.rows_total}

    def entry_dynamic_lds(self, arch):
        """The split kernels' ring (uniform and balanced), where they are launched with dynamic LDS."""
        n = self.dynamic_lds(arch)
        return {e: n for e in SPLIT_ENTRY_POINTS} if n else {}

    def metadata(self):
        return {"dtype": self.dtype, "head_dim": self.head_dim, "group": self.group,
                "max_sq": self.max_sq, "rows": self.rows, "kv_layout": self.kv_layout,
                "waves": self.waves, "tokens_per_wave": self.tokens_per_wave,
                "max_splits": self.max_splits, "lse": self.lse, "row_waves": self.row_waves}

    def admission(self):
        """Per-dimension admitted sets, for the shadowing check. Each value is a
        frozenset or an inclusive (lo, hi) range."""
        return {
            "dtype": frozenset([self.dtype]), "head_dim": frozenset([self.head_dim]),
            "kv_layout": frozenset([self.kv_layout]), "group": self.group_range,
            # KV head counts: a range, or the pinned pairs' (all of this group)
            "num_kv_heads": frozenset(h[1] for h in self.heads) if self.heads else self.num_kv_heads,
            "batch": self.batch, "seq_q": self.seq_q, "capacity": self.capacity,
            "page_sizes": frozenset(self.page_sizes), "masks": frozenset(self.masks),
            "lse": frozenset([False, True] if self.lse else [False]),
            "arch": frozenset(self.archs),
        }

    def constraints(self):
        """The kernel-scope UMD: what this kernel admits, as data."""
        c = [
            {"field": "dtype", "op": "eq", "value": self.dtype},
            {"field": "kv_dtype", "op": "eq", "value": self.dtype},
            {"field": "o_dtype", "op": "eq", "value": self.dtype},
            {"field": "head_dim", "op": "eq", "value": self.head_dim},
            {"field": "group", "op": "range", "min": self.group_range[0], "max": self.group_range[1]},
            {"field": "num_kv_heads", "op": "range", "min": self.num_kv_heads[0], "max": self.num_kv_heads[1]},
            {"field": "batch", "op": "range", "min": self.batch[0], "max": self.batch[1]},
            {"field": "seq_q", "op": "range", "min": self.seq_q[0], "max": self.seq_q[1]},
            {"field": "capacity", "op": "range", "min": self.capacity[0], "max": self.capacity[1]},
            {"field": "kv_layout", "op": "eq", "value": self.kv_layout},
            {"field": "mask", "op": "in", "values": list(self.masks)},
            # v is read with k's loads and conversions: the same dtype (after the
            # entries above, whose order the descriptor tests index into)
            {"field": "v_dtype", "op": "eq", "value": self.dtype},
        ]
        if self.heads:  # a pack's pin, after the group's own constraints
            c.append({"field": "heads", "op": "in", "values": [list(h) for h in self.heads]})
        if self.kv_layout == "paged":
            c.append({"field": "page_size", "op": "in", "values": list(self.page_sizes)})
        c.append({"field": "lse", "op": "in", "values": [False, True] if self.lse else [False]})
        return c

    @property
    def mma_dim(self):
        """The tensor-core path's head dim: D padded to a multiple of 64 (kMmaDim)."""
        return (self.head_dim + 63) // 64 * 64

    @property
    def lanes_per_token(self):
        """D/8 lanes hold a token's elements; a token takes the next power of two."""
        n = 1
        while n < self.head_dim // 8:
            n *= 2
        return n

    def tokens_per_load(self, arch):
        return arch.wave_size // self.lanes_per_token

    def uses_mfma(self, arch):
        """The matrix-core split path (templates/ingot_ad_split_mfma.h; traits
        kUseMfma say the same): math auto on AMD and on the emulated wave64 test
        arch, bf16 or fp16 (docs/decisions/0024-amd-mfma-fp16.md), head dim 64 or 128
        (not 256: docs/decisions/0025-amd-mfma-d256.md), at least 4 rows, 16-token tiles."""
        matrix_cores = arch.vendor == "amd" or arch.wave_size == 64
        return (self.math == "auto" and matrix_cores and self.head_dim in (64, 128)
                and self.wave_rows >= 4 and self.tokens_per_wave % 16 == 0)

    def matrix_path(self, arch):
        """The split runs on tensor cores (NVIDIA's 32-lane waves, math auto) or AMD's matrix
        cores (uses_mfma): a wave may hold 16 rows, both halves of their 16-row tile."""
        tensor_cores = self.math == "auto" and arch.vendor == "nvidia" and arch.wave_size == 32
        return tensor_cores or self.uses_mfma(arch)

    def uses_ring(self, arch):
        """The tensor-core path with a shared-memory ring (NVIDIA only)."""
        return self.math == "auto" and self.stages > 0 and arch.vendor == "nvidia"

    def split_lds_bytes(self, arch):
        """LDS of the split kernel: SplitShared (ingot_ad_split_finish.h), or the
        SplitSmem union with the ring (ingot_ad_split_mma.h), at least as large as
        either, in 16-byte units."""
        split = 4 * (self.waves * self.tokens_per_wave * self.wave_rows
                     + self.token_waves * (2 * self.rows + self.rows * self.head_dim))
        if self.uses_ring(arch):
            split = max(split, self.token_waves * self.stages * 2 * self.tokens_per_wave * self.mma_dim
                        * ELEMENT_BYTES)
        return (split + 15) // 16 * 16

    def balanced_lds_bytes(self):
        """Static LDS the balanced split adds beside the split's (BalanceShared,
        ingot_ad_balanced.h: per wave two 64-bit totals and a 32-bit count, the piece of
        20 bytes, a flag), in 16-byte units."""
        return (20 * self.waves + 24 + 15) // 16 * 16

    def dynamic_lds(self, arch):
        """Bytes of dynamic LDS the split kernel is launched with: its ring, where
        that and the balanced split's own are past the arch's static limit (0: static only)."""
        split = self.split_lds_bytes(arch)
        return split if self.uses_ring(arch) and split + self.balanced_lds_bytes() > arch.max_lds_bytes else 0

    def lds_bytes(self, arch):
        """Static LDS of the split kernel (when not dynamic) or of the merge kernel
        (MergeShared, ingot_ad_merge.h), the larger."""
        split = 0 if self.dynamic_lds(arch) else self.split_lds_bytes(arch)
        return max(split, merge_lds_bytes(arch))


def merge_lds_bytes(arch):
    """Static LDS of the merge kernels (MergeShared, templates/ingot_ad_merge.h): a weight per
    segment and the row's total, and 32 columns of each wave's eighth of its lanes' partial sums, as
    floats; test_built_pack checks it against every packaged object's merge and balanced merge (on
    sm_90 a kernel's shared section also holds the block's 1 KiB of reserved shared memory)."""
    return 4 * (MAX_SPLITS + 1 + MERGE_WAVES * arch.wave_size // 8 * 32)


GRAPH_CONSTRAINTS = [
    {"field": "seq_lens.dtype", "op": "eq", "value": "int32"},
    {"field": "seq_lens.memory", "op": "eq", "value": "device"},
    # causal masks aligned bottom-right (decode) or top-left (kFlagTopLeft)
    {"field": "mask_align", "op": "in", "values": ["bottom_right", "top_left"]},
    {"field": "q.layout", "op": "eq", "value": "dense_d"},
    {"field": "k.layout", "op": "eq", "value": "dense_d"},
    {"field": "v.layout", "op": "eq", "value": "dense_d"},
    {"field": "o.layout", "op": "eq", "value": "dense_d"},
    {"field": "lse.layout", "op": "in", "values": ["absent", "contiguous"]},
    # What the kernels read and write besides q, k, v and o: the LSE as fp32 at a
    # flat index, the valid lengths as one int32 array, a page-table row as
    # adjacent int32 entries (templates/ingot_attention_decode.h).
    {"field": "lse.dtype", "op": "in", "values": ["absent", "fp32"]},
    {"field": "seq_lens.layout", "op": "eq", "value": "contiguous"},
    {"field": "page_table.dtype", "op": "in", "values": ["absent", "int32"]},
    {"field": "page_table.layout", "op": "in", "values": ["absent", "dense_rows"]},
]


def check_variant(var, ctx):
    """The family's rules on a variant's axes and admit, each broken one an
    error at its key path. Returns whether the variant may expand."""
    axes, admit, vpath = var.axes, var.admit, var.path
    apath = vpath + ("admit",)
    ok = True
    for i, hd in enumerate(axes["head_dim"]):
        if hd not in HEAD_DIMS:
            ctx.error(vpath + ("axes", "head_dim", i), f"head dim {hd} is not supported by the kernel "
                      f"(supported: {', '.join(map(str, HEAD_DIMS))})")
            ok = False
    # Each axis group's kernels run the groups of its range in `groups` (each
    # range holds exactly one axis group; default: the group alone).
    ranges = {g: (g, g) for g in axes["group"]}
    for i, (lo, hi) in enumerate(admit["groups"] or []):
        inside = [g for g in axes["group"] if lo <= g <= hi]
        if len(inside) != 1:
            ctx.error(apath + ("groups", i), f"groups [{lo}, {hi}] hold {len(inside)} of the axis' groups "
                      f"({', '.join(map(str, inside)) or 'none'}); each range must hold exactly one "
                      f"(axis groups: {', '.join(map(str, axes['group']))})")
            ok = False
        elif ranges[inside[0]] != (inside[0], inside[0]):
            ctx.error(apath + ("groups", i), f"group {inside[0]} has two ranges in groups")
            ok = False
        else:
            ranges[inside[0]] = (lo, hi)
    spans = sorted(ranges.values())
    for a, b in zip(spans, spans[1:]):
        if b[0] <= a[1]:
            ctx.error(apath + ("groups",), f"groups ranges [{a[0]}, {a[1]}] and [{b[0]}, {b[1]}] overlap")
            ok = False
    # A kernel runs any Hkv in num_kv_heads with Hq = g x Hkv for the groups g
    # of its range; `heads`, where given, pins pairs: each must be of a range and
    # within num_kv_heads, and a kernel without a pinned pair makes no instance.
    kv_lo, kv_hi = admit["num_kv_heads"]
    for i, (hq, hkv) in enumerate(admit["heads"] or []):
        if hq % hkv:
            ctx.error(apath + ("heads", i), f"Hq {hq} is not a multiple of Hkv {hkv}")
            ok = False
        elif not any(lo <= hq // hkv <= hi for lo, hi in ranges.values()):
            ctx.error(apath + ("heads", i), f"heads [{hq}, {hkv}] have group {hq // hkv}, which no "
                      f"instance of variant '{var.name}' runs (groups: "
                      f"{', '.join(f'{lo}..{hi}' if lo != hi else str(lo) for lo, hi in sorted(ranges.values()))})")
            ok = False
        elif not kv_lo <= hkv <= kv_hi:
            ctx.error(apath + ("heads", i), f"heads [{hq}, {hkv}] have Hkv {hkv} outside the variant's "
                      f"num_kv_heads [{kv_lo}, {kv_hi}]")
            ok = False
    has_paged = "paged" in axes["kv_layout"]
    if has_paged and not admit["page_sizes"]:
        ctx.error(apath, "missing 'page_sizes', required when kv_layout includes 'paged'")
        ok = False
    for i, ps in enumerate(admit["page_sizes"] or []):
        if ps & (ps - 1):
            ctx.error(apath + ("page_sizes", i), f"page size {ps} is not a power of two")
            ok = False
    if admit["page_sizes"] and not has_paged:
        ctx.error(apath + ("page_sizes",), "page sizes given, but the variant has no paged kv_layout")
        ok = False
    return ok


def _group_range(var, group):
    """The groups the kernels of an axis group run: its range in `groups`, else
    the group alone (check_variant has made the ranges one per group)."""
    return next(((lo, hi) for lo, hi in var.admit["groups"] or [] if lo <= group <= hi), (group, group))


def expand(var, points, ctx):
    """One instance per point, but none for a group that a `heads` pin leaves
    without a pair; None after an error (the variant then makes nothing)."""
    admit, knobs, archs, apath = var.admit, var.knobs, var.archs, var.path + ("admit",)
    out = []
    for point in points:
        groups = _group_range(var, point["group"])
        heads = ()
        if admit["heads"] is not None:
            lo, hi = groups
            heads = tuple(sorted(tuple(h) for h in admit["heads"] if lo <= h[0] // h[1] <= hi))
            if not heads:
                continue  # the pin leaves this group no pair: not an instance
        seq_q = admit["seq_q"] or (1, point["max_sq"])
        if seq_q[1] > point["max_sq"]:
            ctx.error(apath + ("seq_q",), f"seq_q up to {seq_q[1]} exceeds the instance's max_sq "
                      f"{point['max_sq']}")
            return None
        # a wave's rows: the kernel's rows, or under row_waves their share of each wave; at most 16
        # where the instance runs a tensor- or matrix-core path on every arch it is built for, else 8
        waves = knobs["waves"] if knobs["row_waves"] else 1
        wave_rows = min(-(-point["group"] * point["max_sq"] // waves), knobs["max_rows"])
        rows = min(wave_rows, MAX_ROWS) * waves
        inst = Instance(
            pack=var.pack, variant=var.name, dtype=point["dtype"], head_dim=point["head_dim"],
            group=point["group"], kv_layout=point["kv_layout"], max_sq=point["max_sq"],
            waves=knobs["waves"], tokens_per_wave=knobs["tokens_per_wave"], rows=rows,
            max_splits=knobs["max_splits"], occupancy=knobs["occupancy"], math=knobs["math"],
            stages=knobs["stages"],
            priority=var.priority,
            num_kv_heads=tuple(admit["num_kv_heads"]), heads=heads,
            batch=tuple(admit["batch"]), seq_q=tuple(seq_q), capacity=tuple(admit["capacity"]),
            page_sizes=tuple(sorted(admit["page_sizes"] or [])) if point["kv_layout"] == "paged" else (),
            masks=tuple(sorted(admit["masks"])), lse=admit["lse"], archs=tuple(a.name for a in archs),
            trace=knobs["trace"],
            groups=groups if groups != (point["group"],) * 2 else (), row_waves=knobs["row_waves"])
        if inst.wave_rows > MAX_SIMT_ROWS and not all(inst.matrix_path(a) for a in archs):
            inst = dataclasses.replace(inst, rows=min(wave_rows, MAX_SIMT_ROWS) * waves)
        if not _check_instance_fits(inst, archs, var.path, ctx):
            return None
        if inst.capacity[1] > inst.capacity_limit:
            ctx.error(apath + ("capacity",), f"capacity up to {inst.capacity[1]} is past what instance "
                      f"{inst.name}'s int32 token indices allow: they run {TOKEN_INDEX_TILES} tiles of "
                      f"{inst.tile} tokens past the capacity (allowed: at most "
                      f"{inst.capacity_limit} = 2^31 - 1 - {TOKEN_INDEX_TILES} x {inst.tile})")
            return None
        out.append(inst)
    return out


def _check_instance_fits(inst, archs, vpath, ctx):
    ok = True
    if inst.stages == 1:
        ctx.error(vpath + ("knobs", "stages"), "stages 1 overlaps no copy with the math (allowed: 0 for "
                  "the register pipeline, or 2..8 shared-memory stages)")
        return False
    if inst.stages and inst.math != "auto":
        ctx.error(vpath + ("knobs", "stages"), f"stages {inst.stages} needs math 'auto' (the tensor-core "
                  "path streams through shared memory; the SIMT path keeps its pipeline in registers)")
        return False
    if inst.row_waves and inst.waves < 2:
        ctx.error(vpath + ("knobs", "row_waves"), f"row_waves needs 2 or more waves to share a step's "
                  f"tokens (instance {inst.name} has waves {inst.waves})")
        return False
    if inst.trace and (inst.math != "auto" or any(a.vendor != "nvidia" for a in archs)):
        ctx.error(vpath + ("knobs", "trace"), f"trace 1 needs math 'auto' and NVIDIA archs only (its "
                  f"stamps are in the tensor-core path); instance {inst.name} has math '{inst.math}', "
                  f"archs {', '.join(a.name for a in archs)} (a variant may name `archs: [sm_90]`)")
        return False
    for arch in archs:
        lpt = inst.lanes_per_token
        if lpt > arch.wave_size:
            ctx.error(vpath + ("axes", "head_dim"), f"head dim {inst.head_dim} needs {lpt} lanes per "
                      f"token, more than the {arch.wave_size}-lane wave of {arch.name}")
            return False
        if inst.math == "auto" and arch.vendor == "nvidia":
            why = []
            if inst.tokens_per_wave % 16:
                why.append(f"tokens_per_wave {inst.tokens_per_wave} is not a multiple of 16")
            if inst.row_waves and not inst.stages and arch.wave_size == 32:  # (sm_90_w64 runs AMD's paths)
                why.append("row_waves shares a shared-memory ring among the waves: it needs stages 2..8")
            if inst.stages and (inst.tokens_per_wave * inst.head_dim // 8) % arch.wave_size:
                why.append(f"the ring's {inst.tokens_per_wave} x {inst.head_dim // 8} chunk copies per "
                           f"stage are not whole waves of {arch.wave_size}")
            if why:
                ctx.error(vpath + ("knobs", "math"), f"math 'auto' uses tensor cores on {arch.name}, but "
                          f"{'; '.join(why)} (instance {inst.name})")
                ok = False
        tpl = inst.tokens_per_load(arch)
        if inst.tokens_per_wave % tpl:
            ctx.error(vpath + ("knobs", "tokens_per_wave"), f"tokens_per_wave {inst.tokens_per_wave} "
                      f"is not a multiple of {tpl}, the tokens one load covers on {arch.name} "
                      f"for head dim {inst.head_dim} (instance {inst.name})")
            ok = False
        ring = ""
        if inst.uses_ring(arch):
            ring = (f" (its shared-memory ring: {inst.token_waves} waves x {inst.stages} stages x "
                    f"{inst.tokens_per_wave} tokens x head dim {inst.head_dim} x 4 bytes for K and V)")
        if inst.dynamic_lds(arch) > arch.max_dynamic_lds_bytes:
            ctx.error(vpath + ("knobs",), f"instance {inst.name} needs {inst.dynamic_lds(arch)} bytes of "
                      f"LDS, more than the {arch.max_dynamic_lds_bytes} {arch.name} allows a workgroup at "
                      f"launch{ring}")
            ok = False
        if inst.lds_bytes(arch) > arch.max_lds_bytes:
            ctx.error(vpath + ("knobs",), f"instance {inst.name} needs {inst.lds_bytes(arch)} bytes of "
                      f"LDS, more than the {arch.max_lds_bytes} {arch.name} allows{ring}")
            ok = False
    return ok


def workspace(pack):
    return {
        "policy": "derived",
        "description": "fp32, only when the plan splits the KV range (num_splits > 1): per sequence "
                       "and KV head, group*max_sq*num_splits*(head_dim+1) floats",
        "split": dict(pack.setting("split")),
    }


def kernel_context(inst, arch):
    return {"dynamic_lds": inst.dynamic_lds(arch)}


def dispatch_context(pack):
    return {"split": dict(pack.setting("split")), "kernel_max_splits": MAX_SPLITS}


# The constants the kernels (templates/ingot_ad_*.h), the planner
# (runtime/src/families/attention_decode/) and this module share: templates/ingot_abi.h.
# flags (a kernarg): bits 0, 1 and 12 are the graph's, the others a balanced plan's.
FLAG_BALANCED, FLAG_FILL_SHIFT, FLAG_FILL_MASK, FLAG_EVEN, FLAG_BATCH_SHIFT = 4, 3, 0x1ff, 1 << 13, 16
ABI = (
    Const("INGOT_AD_MAX_SPLITS", MAX_SPLITS, "KV segments of one (sequence, KV head) the merge takes"),
    Const("INGOT_AD_MAX_ROWS", MAX_ROWS, "(query head, query token) rows one wave holds (a workgroup: waves x them under row_waves)"),
    Const("INGOT_AD_MAX_SQ", MAX_SQ, "query tokens per sequence"),
    Const("INGOT_AD_HEAD_DIM_STEP", HEAD_DIM_STEP, "head dims are multiples of it"),
    Const("INGOT_AD_MAX_PAGE_SIZE", MAX_PAGE_SIZE, "tokens per KV page"),
    Const("INGOT_AD_MAX_BLOCK_THREADS", MAX_BLOCK_THREADS, "waves x wave size of one workgroup"),
    Const("INGOT_AD_MAX_GROUP", MAX_GROUP, "Hq / Hkv (row blocks of a KV head are grid x)"),
    Const("INGOT_AD_MAX_KV_HEADS", MAX_KV_HEADS, "Hkv (grid y)"),
    Const("INGOT_AD_MAX_BATCH", MAX_BATCH, "B (grid z)"),
    Const("INGOT_AD_TOKEN_INDEX_TILES", TOKEN_INDEX_TILES, "tiles past the capacity the int32 token indices "
          "run (the ring copies up to 8 stages ahead): the plan refuses capacity + this many tiles >= 2^31"),
    Const("INGOT_AD_MAX_TILES_PER_SPLIT", MAX_TILES_PER_SPLIT, "the split policy's max_tiles_per_split"),
    Const("INGOT_AD_MERGE_WAVES", MERGE_WAVES, "the merge kernel's waves per workgroup"),
    Const("INGOT_AD_FLAG_CAUSAL", 1, "flags bit 0: causal mask"),
    Const("INGOT_AD_FLAG_WRITE_LSE", 2, "flags bit 1: write the log-sum-exp"),
    Const("INGOT_AD_FLAG_BALANCED", FLAG_BALANCED, "flags bit 2: a balanced plan (ragged batches)"),
    Const("INGOT_AD_FLAG_FILL_SHIFT", FLAG_FILL_SHIFT, "flags bits 3..11: a balanced plan's fill"),
    Const("INGOT_AD_FLAG_FILL_MASK", FLAG_FILL_MASK, "the fill field, shifted down", hex=True),
    Const("INGOT_AD_FLAG_TOP_LEFT", 1 << 12, "flags bit 12: causal aligned top-left (query i sees keys <= i)"),
    Const("INGOT_AD_FLAG_EVEN", FLAG_EVEN, "flags bit 13: a balanced plan whose units are a multiple of B "
          "(an even batch runs as units / B segments a sequence)"),
    Const("INGOT_AD_FLAG_BATCH_SHIFT", FLAG_BATCH_SHIFT, "flags bits 16..30: a balanced plan's batch B"),
) + tuple(Const(f"INGOT_AD_ENTRY_{e.upper()}", i, f"launch entry: the UDD's entry_points[{i}], {e}")
          for i, e in enumerate(ENTRY_POINTS))

# The spills the shipped kernels have, each timed with it (docs/PERFORMANCE.md, the decisions
# named). Any other spill or scratch, or a larger one, fails tests/generator/test_built_pack.py.
KNOWN_SPILLS = (
    KnownSpill(
        ("sm_90",), r"_d256_g[48]_sq1_paged_w4t16_tcs3$", 24,
        "the paged head-dim-256 rings at 255 registers: a 16-token chunk's accumulators and operands "
        "fill them; timed with the spill (decisions 0014, 0015, 0030, 0040; 0043 left 16-24 bytes "
        "paged and none contiguous)"),
    KnownSpill(
        ("sm_90",), r"_d(80|96|112|128)_g[148]_sq[14]_paged_w[48]t16_tc$", 96,
        "the paged register pipeline: its loads written out a second time for pages shorter than a "
        "chunk (decision 0023: +5.7% at 64K, paged 16, H200)"),
    KnownSpill(
        ("sm_90",), r"_d64_g80_sq1_(contig|paged)_w5t32o3_tcs4rw$", 16,
        "Falcon-7B's row-wave kernel held to 128 registers for three workgroups an SM (H100, B=32: "
        "8K 38.5 -> 36.5 us, 64K 278 -> 248 us against two at 159 registers; decision 0040); "
        "since decision 0043 8 bytes contiguous and 16 in the paged balanced split, with B=32 64K "
        "238.0 -> 228.9 us and 8K 36.6 -> 35.7 (H100)"),
)

FAMILY = Family(
    name=NAME, axes=AXES, axis_defaults=AXIS_DEFAULTS, knobs=KNOBS, optional_knobs=OPTIONAL_KNOBS,
    admit=ADMIT, pack_keys=PACK_KEYS,
    check_variant=check_variant, expand=expand,
    no_instance_reason="every axis combination is excluded or has no pinned heads pair",
    metadata_types=METADATA_TYPES, entry_points=ENTRY_POINTS, kernargs=tuple(SIGNATURE),
    graph_constraints=GRAPH_CONSTRAINTS, workspace=workspace,
    kernel_template="attention_decode.hip.j2",
    dispatch_source_template="attention_decode_dispatch.c.j2",
    dispatch_header_template="attention_decode_dispatch.h.j2",
    kernarg_expr=KERNARG_EXPR, kernel_context=kernel_context, dispatch_context=dispatch_context,
    abi=ABI, known_spills=KNOWN_SPILLS,
)
