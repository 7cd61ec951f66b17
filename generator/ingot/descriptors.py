"""The five descriptor kinds (docs/INTERNALS.md §2), built as plain dicts and
written as sorted, indented JSON."""

import json

from ingot.archs import ARCHS
from ingot.families import FAMILIES
from ingot.ids import descriptor_id, kernel_id

VERSION = "1.0"


def dumps(obj):
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=True) + "\n"


def names(pack):
    return {
        "ued": f"{pack.name}.ued.json", "kmd": f"{pack.name}.kmd.json",
        "udd": f"{pack.name}.udd.json", "kdp": f"{pack.name}.kdp.json",
        "graph_umd": f"{pack.name}.graph.umd.json",
    }


def build(pack):
    """Returns {filename: dict} of every descriptor of the pack (authored form)."""
    family = FAMILIES[pack.family]
    p = pack.name
    ids = {k: descriptor_id(p, k, p) for k in ("ued", "kmd", "udd", "kdp", "graph_umd")}
    n = names(pack)
    out = {}
    out[n["kmd"]] = {
        "version": VERSION, "id": ids["kmd"], "name": f"{p}.kmd",
        "fields": [_field(name, typ, default) for name, typ, default in pack.metadata_fields],
    }
    out[n["ued"]] = {
        "version": VERSION, "id": ids["ued"], "name": pack.engine, "sdk_version": pack.sdk_version,
        "graph_match": {"kind": "constraints", "matchers": [ids["graph_umd"]]},
        "metadata": ids["kmd"], "heuristic": None,
        # knobs name KMD fields (the runtime checks that); a generator-only knob
        # such as max_rows shapes `rows` but is not itself kernel metadata.
        "knobs": [k for k in pack.knobs if k in {f[0] for f in pack.metadata_fields}],
        "behavior_notes": list(pack.behavior_notes),
    }
    out[n["udd"]] = {
        "version": VERSION, "id": ids["udd"], "name": f"{p}.udd",
        "dispatch_symbol": dispatch_symbol(pack), "entry_points": list(family.entry_points),
        "kernarg_size": family.kernarg_size(), "signature": family.signature(),
        "workspace": family.workspace(pack),
    }
    out[n["graph_umd"]] = {
        "version": VERSION, "id": ids["graph_umd"], "name": f"{p}.graph", "scope": "graph",
        "constraints": family.graph_constraints,
    }
    kernels = []
    for inst in pack.instances:
        umd_name = f"{inst.name}.umd.json"
        umd_id = descriptor_id(p, "umd", inst.name)
        out[umd_name] = {"version": VERSION, "id": umd_id, "name": inst.name, "scope": "kernel",
                         "constraints": inst.constraints()}
        source = {
            "kind": "hip_source",
            "sources": {a: inst.filename(a) for a in inst.archs},
            "symbols": {e: inst.symbol(e) for e in family.entry_points},
            "spec": {"variant": inst.variant, **inst.spec()},
        }
        # Dynamic LDS an entry point is launched with, per arch (where any is).
        dynamic = {a: inst.entry_dynamic_lds(ARCHS[a]) for a in inst.archs if inst.entry_dynamic_lds(ARCHS[a])}
        if dynamic:
            source["dynamic_lds"] = dynamic
        kernels.append({
            "version": VERSION, "id": kernel_id(inst), "name": inst.name, "priority": inst.priority,
            "matchers": [umd_id], "metadata": inst.metadata(), "kernel_source": source,
        })
    out[n["kdp"]] = {
        "version": VERSION, "id": ids["kdp"], "name": p, "engine": ids["ued"], "dispatch": ids["udd"],
        "matchers": [ids["graph_umd"]], "arch": list(pack.archs),
        "provenance": {"generator": "ingot 0.1.0", "config": pack.config_path,
                       "config_sha256": pack.config_sha256},
        "kernelDescriptors": kernels,
    }
    return out


def dispatch_symbol(pack):
    return dispatch_symbol_of(pack.name)


def dispatch_symbol_of(pack_name):
    return f"ingot_{pack_name}_dispatch"


# Limits the runtime applies to the names below; a pack whose names pass them
# would generate, build and package, then fail at open. test_name_limits reads
# both from the C source, so the two sides cannot drift apart.
MAX_DISPATCH_SYMBOL_BYTES = 128  # runtime/src/dispatch_registry.c, generated_name()
MAX_STRING_BYTES = 256  # INGOT_MAX_STRING_BYTES, runtime/src/internal.h (ids, names, paths, symbols)
DISPATCH_LIMIT = ("dispatch symbols (runtime/src/dispatch_registry.c)", MAX_DISPATCH_SYMBOL_BYTES)
STRING_LIMIT = ("descriptor strings (INGOT_MAX_STRING_BYTES, runtime/src/internal.h)", MAX_STRING_BYTES)


def packaged_object_path(inst_name, arch):
    """Where `ingot package` puts an instance's code object for arch (package.py;
    test_package checks the two agree)."""
    return f"code/{arch.name}/{inst_name}.{arch.name}.{arch.suffix}"


def limited_names(pack_name, instances, family):
    """(what, string, (limit description, bytes)) for every name derived from
    the pack name that the runtime checks against a limit: the dispatch symbol,
    the descriptors' names, kernel names, entry symbols and the paths of the
    authored and the packaged KDP."""
    yield "the dispatch symbol", dispatch_symbol_of(pack_name), DISPATCH_LIMIT
    for suffix in ("", ".kmd", ".udd", ".graph"):
        yield "a descriptor name", pack_name + suffix, STRING_LIMIT
    for inst in instances:
        yield f"kernel {inst.name}'s name", inst.name, STRING_LIMIT
        for entry in family.entry_points:
            yield f"kernel {inst.name}'s entry symbol", inst.symbol(entry), STRING_LIMIT
        for arch in inst.archs:
            yield f"kernel {inst.name}'s source path", inst.filename(arch), STRING_LIMIT
            yield (f"kernel {inst.name}'s code-object path", packaged_object_path(inst.name, ARCHS[arch]),
                   STRING_LIMIT)


def _field(name, typ, default):
    f = {"name": name, "type": typ}
    if repr(default) != "<no default>":
        f["default_value"] = default
    return f
