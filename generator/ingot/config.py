"""Stage 2 and 3: validate a loaded config (schema, then semantic rules) and
expand its variants into a sorted tuple of frozen kernel instances."""

import itertools
import re
from dataclasses import dataclass

from ingot import descriptors
from ingot.archs import ARCHS, known_archs
from ingot.errors import ErrorSink
from ingot.families import FAMILIES
from ingot.schema import Context, Int, List, Map, Str, show

IDENT = re.compile(r"[a-z][a-z0-9_]*")
ENGINE = re.compile(r"[a-z][a-z0-9_]*:[A-Z][A-Za-z0-9]*")
VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")
FIELD_TYPES = ["bool", "int", "float", "string", "int_list"]


def _variant_schema(family):
    return Map({
        "name": (Str(pattern=IDENT, pattern_desc="a lower-case identifier ([a-z][a-z0-9_]*)"), True, None),
        "priority": (Int(-1000, 1000), False, 0),
        "axes": (Map({k: (List(v, unique=True), k not in family.axis_defaults, None)
                      for k, v in family.axes.items()}), True, None),
        "exclude": (List(Map({k: (v, False, None) for k, v in family.axes.items()}), min_len=0), False, []),
        "knobs": (Map({k: (v, False, None) for k, v in family.knobs.items()}), False, {}),
        "admit": (family.admit, True, None),
        # A variant tuned for some archs only (its kernels have code objects for those).
        "archs": (List(Str(choices=known_archs()), unique=True), False, None),
    })


def _schema(family):
    """The pack config's schema under `family`; family None (the config names
    none, or one the generator does not have) checks the keys of the core only:
    a family's parts are left unchecked, not judged by another family's rules."""
    if family is None:
        knobs = variants = _Any()
        own = {k: (_Any(), False, None) for f in FAMILIES.values() for k in f.pack_keys}
    else:
        knobs = Map({k: (v, k not in family.optional_knobs, family.optional_knobs.get(k))
                     for k, v in family.knobs.items()})
        variants = List(_variant_schema(family))
        own = family.pack_keys
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
        "knobs": (knobs, True, None),
        **own,
        "behavior_notes": (List(Str(max_len=256), min_len=0), False, []),
        "variants": (variants, True, None),
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
    settings: tuple  # ((key, value), ...): the family's own top-level keys (Family.pack_keys)
    behavior_notes: tuple
    instances: tuple
    config_path: str
    config_sha256: str

    def instance(self, name):
        return next(i for i in self.instances if i.name == name)

    def setting(self, key):
        return dict(self.settings)[key]


@dataclass(frozen=True)
class Variant:
    """A variant as the core hands it to its family: its axes (the family's
    axis_defaults filled in), the pack's knobs with its own over them, its
    admit as the family's schema checked it, the archs it is built for (Arch
    entries) and its key path in the config, for errors."""
    pack: str
    name: str
    priority: int
    axes: dict
    knobs: dict
    admit: dict
    archs: tuple
    path: tuple


def validate_and_expand(located, config_sha256):
    """Returns a Pack or raises ConfigErrors naming every problem."""
    sink = ErrorSink()
    ctx = Context(located, sink)
    data = located.data
    fam_name = data.get("family") if isinstance(data, dict) else None
    family = FAMILIES.get(fam_name) if isinstance(fam_name, str) else None
    cfg = _schema(family).check(data, (), ctx)
    sink.raise_if_any()
    names_fit = _check_name_limits(cfg["pack"], (), family, ctx)

    archs = [ARCHS[a] for a in sorted(cfg["archs"])]
    _check_metadata_fields(cfg, family, ctx)
    instances = []
    names = set()
    for vi, var in enumerate(cfg["variants"]):
        vpath = ("variants", vi)
        if var["name"] in names:
            ctx.error(vpath + ("name",), f"duplicate variant name '{var['name']}'")
        names.add(var["name"])
        instances += _expand_variant(cfg, family, var, vpath, archs, ctx)
    if names_fit:
        _check_name_limits(cfg["pack"], instances, family, ctx)
    sink.raise_if_any()
    _check_duplicates_and_shadowing(instances, {v["name"]: i for i, v in enumerate(cfg["variants"])}, ctx)
    sink.raise_if_any()

    fields = tuple((f["name"], f["type"], f["default"]) for f in cfg["metadata_fields"])
    return Pack(
        name=cfg["pack"], family=family.name, engine=cfg["engine"], sdk_version=cfg["sdk_version"],
        description=cfg["description"], archs=tuple(a.name for a in archs), metadata_fields=fields,
        knobs=tuple(sorted(cfg["knobs"])), settings=tuple(sorted((k, cfg[k]) for k in family.pack_keys)),
        behavior_notes=tuple(cfg["behavior_notes"]),
        instances=tuple(sorted(instances, key=lambda i: i.name)),
        config_path=located.path, config_sha256=config_sha256)


def _check_name_limits(pack_name, instances, family, ctx):
    """The first name derived from the pack name that would pass a runtime limit
    is an error at `pack`, naming the limit and the longest pack name that fits."""
    over = [(what, s, limit) for what, s, limit in descriptors.limited_names(pack_name, instances, family)
            if len(s.encode("utf-8")) > limit[1]]
    if not over:
        return True
    what, s, (desc, limit) = over[0]
    fits = min(limit - (len(t.encode("utf-8")) - len(pack_name))
               for _, t, (_, limit) in descriptors.limited_names(pack_name, instances, family))
    ctx.error(("pack",), f"pack name of {len(pack_name)} characters is too long: {what} "
              f"{show(s)} would be {len(s.encode('utf-8'))} bytes, over the runtime's limit of {limit} bytes "
              f"on {desc} "
              f"(allowed: a pack name of at most {max(fits, 0)} characters"
              f"{' for these variants' if instances else ''})")
    return False


def _check_metadata_fields(cfg, family, ctx):
    """The config declares the KMD; it must describe exactly what the family emits."""
    declared = {}
    for i, f in enumerate(cfg["metadata_fields"]):
        p = ("metadata_fields", i)
        if f["name"] in declared:
            ctx.error(p + ("name",), f"duplicate metadata field '{f['name']}'")
            continue
        declared[f["name"]] = f
        want = family.metadata_types.get(f["name"])
        if want is None:
            ctx.error(p + ("name",), f"metadata field '{f['name']}' is not produced by family "
                      f"'{family.name}' (it produces: {', '.join(sorted(family.metadata_types))})")
        elif f["type"] != want:
            ctx.error(p + ("type",), f"metadata field '{f['name']}' has type {show(f['type'])}, "
                      f"but family '{family.name}' produces type {show(want)}")
        if f["default"] is not _NO_DEFAULT and not _value_has_type(f["default"], f["type"]):
            ctx.error(p + ("default",), f"default {show(f['default'])} is not of type {show(f['type'])}")
    for name in sorted(set(family.metadata_types) - set(declared)):
        ctx.error(("metadata_fields",), f"missing metadata field '{name}' "
                  f"(type {family.metadata_types[name]}), which every kernel of family '{family.name}' has")


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


def _expand_variant(cfg, family, var, vpath, archs, ctx):
    """The variant's instances: the core checks its archs and excludes, the
    family its own rules; then the family makes the instances of the axis
    points the excludes leave. [] after any error."""
    axes = dict(var["axes"])
    for k, default in family.axis_defaults.items():
        if axes.get(k) is None:
            axes[k] = list(default)
    keys = sorted(axes)
    knobs = dict(cfg["knobs"])
    knobs.update({k: v for k, v in var["knobs"].items() if v is not None})
    ok = True
    if var["archs"] is not None:
        names = [a.name for a in archs]
        for i, a in enumerate(var["archs"]):
            if a not in names:
                ctx.error(vpath + ("archs", i), f"arch {show(a)} is not one of the pack's archs "
                          f"(allowed: {', '.join(names)})")
                ok = False
        archs = [a for a in archs if a.name in var["archs"]]
    for j, ex in enumerate(var["exclude"]):
        for k, val in ex.items():
            if val is not None and val not in axes.get(k, []):
                ctx.error(vpath + ("exclude", j, k), f"{show(val)} is not a value of axis '{k}' "
                          f"(values: {', '.join(show(x) for x in axes.get(k, []))})")
                ok = False
    variant = Variant(pack=cfg["pack"], name=var["name"], priority=var["priority"], axes=axes, knobs=knobs,
                      admit=var["admit"], archs=tuple(archs), path=vpath)
    fits = family.check_variant(variant, ctx)  # even after an error above: every error at once
    if not (ok and fits):
        return []

    points = []
    for combo in itertools.product(*(axes[k] for k in keys)):
        point = dict(zip(keys, combo))
        if not any(all(point[k] == v for k, v in ex.items() if v is not None) for ex in var["exclude"]):
            points.append(point)
    out = family.expand(variant, points, ctx)
    if out is None:
        return []
    if not out:
        ctx.error(vpath, f"variant '{var['name']}' expands to no kernel instance ({family.no_instance_reason})")
    return out


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
    # Y shadows X when Y admits every graph X admits and outranks it (the
    # instances' rank: the order the runtime selects in, before it compares the
    # plans' modelled times).
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
    """Does y win the selection over x on every graph both admit? (The family's
    rank; between kernels of one rank neither always wins.)"""
    return y.rank > x.rank
