"""Checks of a descriptor folder that a JSON Schema cannot express: every id
reference resolves to a descriptor of the right kind and scope, ids are unique,
kernel metadata follows the KMD, the UDD's kernarg layout is consistent, and
every kernel source or code object a KDP names exists. Each check returns a list
of messages (empty: it holds), so a test can show them all and a negative
control can assert the exact one."""

import glob
import hashlib
import json
import os

from jsonschema import Draft202012Validator

from gen_support import descriptor_kind


def load_descriptor_dir(path):
    """{file name: parsed JSON} of every *.json in path."""
    docs = {}
    for p in sorted(glob.glob(os.path.join(path, "*.json"))):
        with open(p, encoding="utf-8") as f:
            docs[os.path.basename(p)] = json.load(f)
    return docs


def schema_errors(docs, schemas):
    out = []
    for name, doc in sorted(docs.items()):
        validator = Draft202012Validator(schemas[descriptor_kind(name)])
        for e in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path)):
            where = "/".join(str(p) for p in e.absolute_path)
            out.append(f"{name}: /{where}: {e.message}")
    return out


def _metadata_type_ok(value, typ):
    if typ == "bool":
        return isinstance(value, bool)
    if typ == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if typ == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if typ == "string":
        return isinstance(value, str)
    if typ == "int_list":
        return isinstance(value, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in value)
    return False


def signature_errors(udd):
    """Offsets naturally aligned, ascending without overlap, kernarg_size = end of the last."""
    out, end = [], 0
    for i, a in enumerate(udd["signature"]):
        if a["offset"] % a["size"]:
            out.append(f"signature[{i}] {a['name']}: offset {a['offset']} is not a multiple of its size {a['size']}")
        if a["offset"] < end:
            out.append(f"signature[{i}] {a['name']}: offset {a['offset']} overlaps the previous argument (ends at {end})")
        end = a["offset"] + a["size"]
    if udd["kernarg_size"] != end:
        out.append(f"kernarg_size {udd['kernarg_size']} is not the end of the last argument ({end})")
    return out


def code_object_state(pack_dir, obj):
    """'missing', 'changed' (its bytes do not hash to obj['sha256']) or 'ok' for a
    packaged code object entry {path, sha256, ...} of the pack in pack_dir."""
    path = os.path.join(pack_dir, obj["path"])
    if not os.path.isfile(path):
        return "missing"
    with open(path, "rb") as f:
        return "ok" if hashlib.sha256(f.read()).hexdigest() == obj["sha256"] else "changed"


def reference_errors(docs, rendered=None, pack_dir=None):
    """docs: {file name: descriptor} of one pack folder. rendered: the set of
    files generated beside it (relative to generated/<pack>/), to check an
    authored KDP's sources. pack_dir: the packaged pack folder, to check a
    packaged KDP's code objects and their sha256."""
    out = []
    by_id = {}
    for name, doc in docs.items():
        entries = [(name, descriptor_kind(name), doc)]
        if descriptor_kind(name) == "kdp":
            entries += [(f"{name}: kernel {kd.get('name')}", "kernel", kd) for kd in doc["kernelDescriptors"]]
        for where, kind, d in entries:
            if d["id"] in by_id:
                out.append(f"{where}: id {d['id']} is also the id of {by_id[d['id']][0]}")
            else:
                by_id[d["id"]] = (where, kind, d)

    def resolve(where, ref, kind, scope=None):
        hit = by_id.get(ref)
        if hit is None:
            out.append(f"{where}: {ref} does not resolve")
            return None
        if hit[1] != kind:
            out.append(f"{where}: {ref} is a {hit[1]}, expected a {kind}")
            return None
        if scope is not None and hit[2].get("scope") != scope:
            out.append(f"{where}: {ref} is a UMD of scope {hit[2].get('scope')}, expected {scope}")
            return None
        return hit[2]

    kdps = [(n, d) for n, d in docs.items() if descriptor_kind(n) == "kdp"]
    if len(kdps) != 1:
        return out + [f"expected exactly one KDP, found {len(kdps)}"]
    kname, kdp = kdps[0]
    ued = resolve(f"{kname}: engine", kdp["engine"], "ued")
    udd = resolve(f"{kname}: dispatch", kdp["dispatch"], "udd")
    for i, m in enumerate(kdp["matchers"]):
        resolve(f"{kname}: matchers[{i}]", m, "umd", "graph")
    kmd = None
    if ued is not None:
        kmd = resolve("ued: metadata", ued["metadata"], "kmd")
        for i, m in enumerate(ued["graph_match"]["matchers"]):
            resolve(f"ued: graph_match.matchers[{i}]", m, "umd", "graph")
        if ued["heuristic"] is not None:
            resolve("ued: heuristic", ued["heuristic"], "heuristic")
        if kmd is not None:
            fields = {f["name"] for f in kmd["fields"]}
            for k in ued["knobs"]:
                if k not in fields:
                    out.append(f"ued: knob '{k}' is not a KMD field")
    if udd is not None:
        out += [f"udd: {e}" for e in signature_errors(udd)]

    used_umds = []
    for kd in kdp["kernelDescriptors"]:
        where = f"{kname}: kernel {kd['name']}"
        for i, m in enumerate(kd["matchers"]):
            if resolve(f"{where}: matchers[{i}]", m, "umd", "kernel") is not None:
                used_umds.append(m)
        if kmd is not None:
            fields = {f["name"]: f for f in kmd["fields"]}
            for fname, f in fields.items():
                if fname not in kd["metadata"]:
                    if "default_value" not in f:
                        out.append(f"{where}: metadata lacks mandatory field '{fname}'")
                elif not _metadata_type_ok(kd["metadata"][fname], f["type"]):
                    out.append(f"{where}: metadata {fname}={kd['metadata'][fname]!r} is not a {f['type']}")
            for fname in kd["metadata"]:
                if fname not in fields:
                    out.append(f"{where}: metadata field '{fname}' is not in the KMD")
        src = kd["kernel_source"]
        if udd is not None and sorted(src["symbols"]) != sorted(udd["entry_points"]):
            out.append(f"{where}: symbols for {sorted(src['symbols'])}, the UDD's entry points are "
                       f"{sorted(udd['entry_points'])}")
        if src["kind"] == "hip_source":
            # a kernel is built for all of the KDP's archs or (a variant's `archs`) some of them
            if not src["sources"] or not set(src["sources"]) <= set(kdp["arch"]):
                out.append(f"{where}: sources for {sorted(src['sources'])}, the KDP's archs are {sorted(kdp['arch'])}")
            if rendered is not None:
                for arch, rel in sorted(src["sources"].items()):
                    if rel not in rendered:
                        out.append(f"{where}: source {rel} ({arch}) is not among the generated files")
        else:
            if not src["objects"] or not set(src["objects"]) <= set(kdp["arch"]):
                out.append(f"{where}: objects for {sorted(src['objects'])}, the KDP's archs are {sorted(kdp['arch'])}")
            for arch, obj in sorted(src["objects"].items()):
                if udd is not None:
                    want = [{"kind": a["kind"], "offset": a["offset"], "size": a["size"]} for a in udd["signature"]]
                    if obj["signature"] != want or obj["kernarg_size"] != udd["kernarg_size"]:
                        out.append(f"{where}: {arch} signature disagrees with the UDD")
                if sorted(obj["resources"]) != sorted(src["symbols"]):
                    out.append(f"{where}: {arch} resources for {sorted(obj['resources'])}, "
                               f"entry points are {sorted(src['symbols'])}")
                state = code_object_state(pack_dir, obj) if pack_dir is not None else "ok"
                if state == "missing":
                    out.append(f"{where}: {arch} code object {obj['path']} does not exist")
                elif state == "changed":
                    out.append(f"{where}: {arch} code object {obj['path']} does not hash to its sha256")
    for name, doc in sorted(docs.items()):
        if descriptor_kind(name) == "umd":
            if doc["scope"] == "kernel" and used_umds.count(doc["id"]) != 1:
                out.append(f"{name}: kernel-scope UMD used by {used_umds.count(doc['id'])} kernels, expected 1")
            for i, c in enumerate(doc["constraints"]):
                if c["op"] == "range" and c["min"] > c["max"]:
                    out.append(f"{name}: constraints[{i}] range {c['min']}..{c['max']} is empty")
    return out
