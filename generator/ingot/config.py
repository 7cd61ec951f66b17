"""Stage 2 and 3: validate a loaded config (schema, then semantic rules) and
expand its variants into a sorted tuple of frozen kernel instances."""

import itertools
import re
from dataclasses import dataclass

from ingot import descriptors
from ingot.archs import ARCHS, known_archs
from ingot.errors import ErrorSink
from ingot.families import FAMILIES
from ingot.families import attention_decode as ad
from ingot.schema import Context, Int, List, Map, Str, show

IDENT = re.compile(r"[a-z][a-z0-9_]*")
ENGINE = re.compile(r"[a-z][a-z0-9_]*:[A-Z][A-Za-z0-9]*")
VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")
FIELD_TYPES = ["bool", "int", "float", "string", "int_list"]


def _variant_schema(family):
    return Map({
        "name": (Str(pattern=IDENT, pattern_desc="a lower-case identifier ([a-z][a-z0-9_]*)"), True, None),
        "priority": (Int(-1000, 1000), False, 0),
        "axes": (Map({k: (List(v, unique=True), k != "max_sq", None) for k, v in family.axes.items()}), True, None),
        "exclude": (List(Map({k: (v, False, None) for k, v in family.axes.items()}), min_len=0), False, []),
        "knobs": (Map({k: (v, False, None) for k, v in family.knobs.items()}), False, {}),
        "admit": (family.admit, True, None),
        # A variant tuned for some archs only (its kernels have code objects for those).
        "archs": (List(Str(choices=known_archs()), unique=True), False, None),
    })


def _schema(family):
    return Map({
        "pack": (Str(pattern=IDENT, pattern_desc="a lower-case identifier ([a-z][a-z0-9_]*)",
                     max_len=4096), True, None),
        "family": (Str(choices=sorted(FAMILIES)), True, None),
        "engine": (Str(pattern=ENGINE, pattern_desc="an engine name like 'ingot:AttentionDecode'"), True, None),
        "sdk_version": (Str(pattern=VERSION, pattern_desc="a version like '0.1.0'"), True, None),
        "description": (Str(max_len=1000), False, ""),
        "archs": (List(Str(choices=known_archs()), unique=True), True, None),
        "metadata_fields": (List(Map({
            "name": (Str(pattern=IDENT, pattern_desc="a lower-case identifier"), True, None),
            "type": (Str(choices=FIELD_TYPES), True, None),
            "default": (_Any(), False, _NO_DEFAULT),
        }), unique=False), True, None),
        "knobs": (Map({k: (v, k not in ad.OPTIONAL_KNOBS, ad.OPTIONAL_KNOBS.get(k))
                       for k, v in family.knobs.items()}), True, None),
        "split": (family.split, False, {"ctas_per_cu": 2, "min_tiles_per_split": 1,
                                             "max_tiles_per_split": 64, "saturating_percent": 60,
                                             "saturating_cu_percent": 80}),
        "behavior_notes": (List(Str(max_len=256), min_len=0), False, []),
        "variants": (List(_variant_schema(family)), True, None),
    })


class _NoDefault:
    def __repr__(self):
        return "<no default>"


_NO_DEFAULT = _NoDefault()


class _Any:
    def check(self, value, path, ctx):
        return value


@dataclass(frozen=True)
class Pack:
    name: str
    family: str
    engine: str
    sdk_version: str
    description: str
    archs: tuple
    metadata_fields: tuple  # ((name, type, default or _NO_DEFAULT), ...)
    knobs: tuple  # knob names a user may tune
    split: tuple  # ((key, value), ...)
    behavior_notes: tuple
    instances: tuple
    config_path: str
    config_sha256: str

    def instance(self, name):
        return next(i for i in self.instances if i.name == name)


def validate_and_expand(located, config_sha256):
    """Returns a Pack or raises ConfigErrors naming every problem."""
    sink = ErrorSink()
    ctx = Context(located, sink)
    data = located.data
    fam_name = data.get("family") if isinstance(data, dict) else None
    family = FAMILIES.get(fam_name, FAMILIES[ad.NAME])
    cfg = _schema(family).check(data, (), ctx)
    sink.raise_if_any()
    names_fit = _check_name_limits(cfg["pack"], (), ctx)

    archs = [ARCHS[a] for a in sorted(cfg["archs"])]
    _check_metadata_fields(cfg, ctx)
    instances = []
    names = set()
    for vi, var in enumerate(cfg["variants"]):
        vpath = ("variants", vi)
        if var["name"] in names:
            ctx.error(vpath + ("name",), f"duplicate variant name '{var['name']}'")
        names.add(var["name"])
        instances += _expand_variant(cfg, var, vpath, archs, ctx)
    if names_fit:
        _check_name_limits(cfg["pack"], instances, ctx)
    sink.raise_if_any()
    _check_duplicates_and_shadowing(instances, {v["name"]: i for i, v in enumerate(cfg["variants"])}, ctx)
    sink.raise_if_any()

    fields = tuple((f["name"], f["type"], f["default"]) for f in cfg["metadata_fields"])
    return Pack(
        name=cfg["pack"], family=family.name, engine=cfg["engine"], sdk_version=cfg["sdk_version"],
        description=cfg["description"], archs=tuple(a.name for a in archs), metadata_fields=fields,
        knobs=tuple(sorted(cfg["knobs"])), split=tuple(sorted(cfg["split"].items())),
        behavior_notes=tuple(cfg["behavior_notes"]),
        instances=tuple(sorted(instances, key=lambda i: i.name)),
        config_path=located.path, config_sha256=config_sha256)


def _check_name_limits(pack_name, instances, ctx):
    """The first name derived from the pack name that would pass a runtime limit
    is an error at `pack`, naming the limit and the longest pack name that fits."""
    over = [(what, s, limit) for what, s, limit in descriptors.limited_names(pack_name, instances)
            if len(s.encode("utf-8")) > limit[1]]
    if not over:
        return True
    what, s, (desc, limit) = over[0]
    fits = min(limit - (len(t.encode("utf-8")) - len(pack_name))
               for _, t, (_, limit) in descriptors.limited_names(pack_name, instances))
    ctx.error(("pack",), f"pack name of {len(pack_name)} characters is too long: {what} "
              f"{show(s)} would be {len(s.encode('utf-8'))} bytes, over the runtime's limit of {limit} bytes "
              f"on {desc} "
              f"(allowed: a pack name of at most {max(fits, 0)} characters"
              f"{' for these variants' if instances else ''})")
    return False


def _check_metadata_fields(cfg, ctx):
    """The config declares the KMD; it must describe exactly what the family emits."""
    declared = {}
    for i, f in enumerate(cfg["metadata_fields"]):
        p = ("metadata_fields", i)
        if f["name"] in declared:
            ctx.error(p + ("name",), f"duplicate metadata field '{f['name']}'")
            continue
        declared[f["name"]] = f
        want = ad.METADATA_TYPES.get(f["name"])
        if want is None:
            ctx.error(p + ("name",), f"metadata field '{f['name']}' is not produced by family "
                      f"'{ad.NAME}' (it produces: {', '.join(sorted(ad.METADATA_TYPES))})")
        elif f["type"] != want:
            ctx.error(p + ("type",), f"metadata field '{f['name']}' has type {show(f['type'])}, "
                      f"but family '{ad.NAME}' produces type {show(want)}")
        if f["default"] is not _NO_DEFAULT and not _value_has_type(f["default"], f["type"]):
            ctx.error(p + ("default",), f"default {show(f['default'])} is not of type {show(f['type'])}")
    for name in sorted(set(ad.METADATA_TYPES) - set(declared)):
        ctx.error(("metadata_fields",), f"missing metadata field '{name}' "
                  f"(type {ad.METADATA_TYPES[name]}), which every kernel of family '{ad.NAME}' has")


def _value_has_type(v, t):
    if t == "bool":
        return isinstance(v, bool)
    if t == "int":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "float":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t == "string":
        return isinstance(v, str)
    return isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)


def _expand_variant(cfg, var, vpath, archs, ctx):
    axes = dict(var["axes"])
    if axes.get("max_sq") is None:
        axes["max_sq"] = [1]
    keys = sorted(axes)
    knobs = dict(cfg["knobs"])
    knobs.update({k: v for k, v in var["knobs"].items() if v is not None})
    admit = var["admit"]
    apath = vpath + ("admit",)
    ok = True
    if var["archs"] is not None:
        names = [a.name for a in archs]
        for i, a in enumerate(var["archs"]):
            if a not in names:
                ctx.error(vpath + ("archs", i), f"arch {show(a)} is not one of the pack's archs "
                          f"(allowed: {', '.join(names)})")
                ok = False
        archs = [a for a in archs if a.name in var["archs"]]

    for i, hd in enumerate(axes["head_dim"]):
        if hd not in ad.HEAD_DIMS:
            ctx.error(vpath + ("axes", "head_dim", i), f"head dim {hd} is not supported by the kernel "
                      f"(supported: {', '.join(map(str, ad.HEAD_DIMS))})")
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
                      f"instance of variant '{var['name']}' runs (groups: "
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
    for j, ex in enumerate(var["exclude"]):
        for k, val in ex.items():
            if val is not None and val not in axes.get(k, []):
                ctx.error(vpath + ("exclude", j, k), f"{show(val)} is not a value of axis '{k}' "
                          f"(values: {', '.join(show(x) for x in axes.get(k, []))})")
                ok = False
    if not ok:
        return []

    out = []
    for combo in itertools.product(*(axes[k] for k in keys)):
        point = dict(zip(keys, combo))
        if any(all(point[k] == v for k, v in ex.items() if v is not None) for ex in var["exclude"]):
            continue
        heads = ()
        if admit["heads"] is not None:
            lo, hi = ranges[point["group"]]
            heads = tuple(sorted(tuple(h) for h in admit["heads"] if lo <= h[0] // h[1] <= hi))
            if not heads:
                continue  # the pin leaves this group no pair: not an instance
        seq_q = admit["seq_q"] or (1, point["max_sq"])
        if seq_q[1] > point["max_sq"]:
            ctx.error(apath + ("seq_q",), f"seq_q up to {seq_q[1]} exceeds the instance's max_sq "
                      f"{point['max_sq']}")
            return []
        rows = min(point["group"] * point["max_sq"], knobs["max_rows"], ad.MAX_ROWS)
        inst = ad.Instance(
            pack=cfg["pack"], variant=var["name"], dtype=point["dtype"], head_dim=point["head_dim"],
            group=point["group"], kv_layout=point["kv_layout"], max_sq=point["max_sq"],
            waves=knobs["waves"], tokens_per_wave=knobs["tokens_per_wave"], rows=rows,
            max_splits=knobs["max_splits"], occupancy=knobs["occupancy"], math=knobs["math"],
            stages=knobs["stages"],
            priority=var["priority"],
            num_kv_heads=(kv_lo, kv_hi), heads=heads,
            batch=tuple(admit["batch"]), seq_q=tuple(seq_q), capacity=tuple(admit["capacity"]),
            page_sizes=tuple(sorted(admit["page_sizes"] or [])) if point["kv_layout"] == "paged" else (),
            masks=tuple(sorted(admit["masks"])), lse=admit["lse"], archs=tuple(a.name for a in archs),
            trace=knobs["trace"],
            groups=ranges[point["group"]] if ranges[point["group"]] != (point["group"],) * 2 else ())
        if not _check_instance_fits(inst, archs, vpath, ctx):
            return []
        if inst.capacity[1] > inst.capacity_limit:
            ctx.error(apath + ("capacity",), f"capacity up to {inst.capacity[1]} is past what instance "
                      f"{inst.name}'s int32 token indices allow: they run {ad.TOKEN_INDEX_TILES} tiles of "
                      f"{inst.tile} tokens past the capacity (allowed: at most "
                      f"{inst.capacity_limit} = 2^31 - 1 - {ad.TOKEN_INDEX_TILES} x {inst.tile})")
            return []
        out.append(inst)
    if not out:
        ctx.error(vpath, f"variant '{var['name']}' expands to no kernel instance "
                  "(every axis combination is excluded or has no pinned heads pair)")
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
            if inst.rows > 8:
                why.append(f"{inst.rows} rows per workgroup exceed 8")
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
            ring = (f" (its shared-memory ring: {inst.waves} waves x {inst.stages} stages x "
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


def _covers(a, b):
    """Does admission set/range a cover b? Either may be a frozenset or an
    inclusive (lo, hi) range of integers (num_kv_heads: a range, or the KV
    heads of pinned pairs)."""
    if isinstance(a, frozenset):
        if isinstance(b, frozenset):
            return b <= a
        return b[1] - b[0] < len(a) and all(x in a for x in range(b[0], b[1] + 1))
    if isinstance(b, frozenset):
        return all(isinstance(x, int) and a[0] <= x <= a[1] for x in b)
    return a[0] <= b[0] and b[1] <= a[1]


def _check_duplicates_and_shadowing(instances, variant_index, ctx):
    """variant_index: variant name -> its index in `variants`, so that an error
    points at the variant that produced the offending instance."""
    by_key, by_name = {}, {}
    for inst in instances:
        prev = by_key.get(inst.code_key) or by_name.get(inst.name)
        if prev is not None:
            ctx.error(("variants", variant_index[inst.variant]), f"duplicate instance {inst.name}: variants '{prev.variant}' and "
                      f"'{inst.variant}' both produce it")
            continue
        by_key[inst.code_key] = inst
        by_name[inst.name] = inst
    # Selection order among kernels that admit a graph: score = seq_q - max_sq
    # (higher wins), then priority (higher wins), then the least modelled time of
    # the plans. Y shadows X when Y admits every graph X admits and outranks it.
    for x in instances:
        ax = x.admission()
        for y in instances:
            if y is x:
                continue
            ay = y.admission()
            if not all(_covers(ay[k], ax[k]) for k in ax):
                continue
            if _wins(y, x):
                ctx.error(("variants", variant_index[x.variant]), f"instance {x.name} (variant '{x.variant}') can never be "
                          f"chosen: {y.name} (variant '{y.variant}') admits every graph it admits "
                          "and wins the selection")
                break


def _wins(y, x):
    """Does y win the selection over x on every graph both admit? (INTERNALS.md §3:
    score = seq_q - max_sq, then priority, higher wins. Between kernels of one
    rank the plan's modelled time decides graph by graph, so neither always wins.)"""
    return (-y.max_sq, y.priority) > (-x.max_sq, x.priority)
