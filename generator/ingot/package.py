"""The packaging step: code objects + authored descriptors -> a packaged pack
folder (docs/INTERNALS.md §1). Each code object's kernarg signature and
resources are read back from the object itself; a kernarg signature that
disagrees with the UDD fails the build. The packaged KDP pins every code object
and every other descriptor file of the folder by sha256 (`descriptors`), so
that the KDP's bytes, and a detached signature over them, vouch for the whole
pack. The folder is assembled beside its final place and renamed over it, so a
failed packaging leaves the old pack intact."""

import glob
import hashlib
import json
import os
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

from ingot.archs import ARCHS
from ingot.codeobj import CodeObjectError, read_amd, read_cubin
from ingot.descriptors import dumps
from ingot.families import FAMILIES


class PackageError(Exception):
    pass


def _load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _check_signature(obj_path, symbol, got, udd, vendor):
    """The kernarg signature read back from a code object against the UDD's."""
    want = udd["signature"]
    if got["kernarg_size"] != udd["kernarg_size"]:
        raise PackageError(f"{obj_path}: {symbol}: kernarg size {got['kernarg_size']} bytes, "
                           f"the UDD says {udd['kernarg_size']}")
    if len(got["signature"]) != len(want):
        raise PackageError(f"{obj_path}: {symbol}: {len(got['signature'])} kernel arguments, "
                           f"the UDD says {len(want)}")
    for g, w in zip(got["signature"], want):
        if g["offset"] != w["offset"] or g["size"] != w["size"] or (vendor == "amd" and g["kind"] != w["kind"]):
            kind = f" {g['kind']}" if vendor == "amd" else ""
            raise PackageError(f"{obj_path}: {symbol}: argument '{w['name']}' is{kind} at offset "
                               f"{g['offset']} size {g['size']}, the UDD says {w['kind']} at offset "
                               f"{w['offset']} size {w['size']}")


def package_pack(generated, objects, out, readelf, archs=None, quiet=False, objdump="llvm-objdump-22",
                 dispatch_library=None):
    """dispatch_library: the pack's dispatch stub built as a shared object (ingot build),
    shipped as dispatch/ingot_<pack>_dispatch.so, where libingot looks for it."""
    try:
        return _package(generated, objects, out, readelf, objdump, archs, quiet, dispatch_library)
    except (PackageError, CodeObjectError, OSError, KeyError, ValueError) as e:
        print(f"ingot package: error: {e}", file=sys.stderr)
        return 1


def _object_path(objects, inst, arch):
    """Where the build put instance inst's code object for arch (cmake/IngotPack.cmake)."""
    return os.path.join(objects, arch.name, f"{inst}.{arch.name}.{arch.suffix}")


def _package(generated, objects, out, readelf, objdump, archs, quiet, dispatch_library=None):
    desc_dir = os.path.join(generated, "descriptors")
    kdps = glob.glob(os.path.join(desc_dir, "*.kdp.json"))
    if len(kdps) != 1:
        raise PackageError(f"{desc_dir}: expected exactly one *.kdp.json, found {len(kdps)}")
    kdp = _load_json(kdps[0])
    if archs:
        unknown = [a for a in archs if a not in kdp["arch"]]
        if unknown:
            raise PackageError(f"arch(s) {', '.join(unknown)} not in pack {kdp['name']} (it has: {', '.join(kdp['arch'])})")
        # An arch left out (no compiler here) leaves the packaged KDP, not just its objects.
        kdp["arch"] = [a for a in kdp["arch"] if a in archs]
    udd = next(d for d in map(_load_json, glob.glob(os.path.join(desc_dir, "*.udd.json")))
               if d["id"] == kdp["dispatch"])

    # A kernel built for some archs only (a variant's `archs`) packages those; one
    # with none of the packaged archs leaves the pack with its kernel-scope UMDs.
    kept = [kd for kd in kdp["kernelDescriptors"] if any(a in kd["kernel_source"]["sources"] for a in kdp["arch"])]
    dropped_umds = ({m for kd in kdp["kernelDescriptors"] for m in kd["matchers"]} -
                    {m for kd in kept for m in kd["matchers"]})
    if not kept:
        raise PackageError(f"pack {kdp['name']}: no kernel is built for the packaged archs "
                           f"({', '.join(kdp['arch'])})")
    kdp["kernelDescriptors"] = kept

    parent = os.path.dirname(os.path.abspath(out))
    os.makedirs(parent, exist_ok=True)
    stage = tempfile.mkdtemp(prefix=".pack-", dir=parent)
    try:
        for path in sorted(glob.glob(os.path.join(desc_dir, "*.json"))):
            if path not in kdps and _load_json(path).get("id") not in dropped_umds:
                shutil.copyfile(path, os.path.join(stage, os.path.basename(path)))
        # Each object's kernels, read (readelf, objdump: processes of their own) on
        # several threads; the results are taken in the pack's order, so the first
        # error reported is the same as in a serial read.
        jobs = [(kd["name"], ARCHS[a]) for kd in kdp["kernelDescriptors"]
                for a in kdp["arch"] if a in kd["kernel_source"]["sources"]]
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            read = {}
            for inst, arch in jobs:
                obj_path = _object_path(objects, inst, arch)
                if os.path.isfile(obj_path):
                    read[obj_path] = (pool.submit(read_amd, obj_path, readelf, objdump, arch.name)
                                      if arch.vendor == "amd" else pool.submit(read_cubin, obj_path))
        for kd in kdp["kernelDescriptors"]:
            src = kd["kernel_source"]
            objs = {}
            for arch_name in (a for a in kdp["arch"] if a in src["sources"]):
                arch = ARCHS[arch_name]
                inst = kd["name"]
                obj_path = _object_path(objects, inst, arch)
                fname = os.path.basename(obj_path)
                if obj_path not in read:
                    raise PackageError(f"{obj_path}: code object missing for kernel {inst} on {arch.name}")
                kernels = read[obj_path].result()
                resources = {}
                for entry, symbol in sorted(src["symbols"].items()):
                    if symbol not in kernels:
                        raise PackageError(f"{obj_path}: kernel symbol {symbol} not found "
                                           f"(has: {', '.join(sorted(kernels)) or 'none'})")
                    _check_signature(obj_path, symbol, kernels[symbol], udd, arch.vendor)
                    resources[entry] = kernels[symbol]["resources"]
                rel = f"code/{arch.name}/{fname}"
                os.makedirs(os.path.join(stage, "code", arch.name), exist_ok=True)
                shutil.copyfile(obj_path, os.path.join(stage, rel))
                sha = _sha256_file(os.path.join(stage, rel))
                # The object's kernarg layout and version, as its first entry point has them.
                first = kernels[src["symbols"][udd["entry_points"][0]]]
                if arch.vendor == "amd" and first["code_object_version"] != arch.code_object_version:
                    raise PackageError(f"{obj_path}: code object v{first['code_object_version']}, but the arch "
                                       f"table builds {arch.name} as v{arch.code_object_version} "
                                       f"(-mcode-object-version={arch.code_object_version}); rebuild it")
                objs[arch.name] = {
                    "path": rel, "sha256": sha, "kernarg_size": first["kernarg_size"],
                    "signature": [{"kind": w["kind"], "offset": g["offset"], "size": g["size"]}
                                  for g, w in zip(first["signature"], udd["signature"])],
                    "resources": resources,
                    # Dynamic LDS each entry point is launched with (bytes; the generator's).
                    "dynamic_lds": {e: int(src.get("dynamic_lds", {}).get(arch.name, {}).get(e, 0))
                                    for e in sorted(src["symbols"])},
                }
                if arch.vendor == "amd":
                    # What the loader checks against the ELF header (docs/INTERNALS.md §2).
                    objs[arch.name]["code_object_version"] = first["code_object_version"]
            kd["kernel_source"] = {"kind": "code_object", "symbols": src["symbols"], "objects": objs}
        if dispatch_library:
            os.makedirs(os.path.join(stage, "dispatch"))
            rel = f"dispatch/{udd['dispatch_symbol']}.so"
            shutil.copyfile(dispatch_library, os.path.join(stage, rel))
            # The runtime loads the library only if its bytes hash to this (and a signature
            # over the KDP then covers it too).
            kdp["dispatch_library"] = {"path": rel, "sha256": _sha256_file(os.path.join(stage, rel))}
        # The descriptors as copied: the runtime refuses a folder whose files differ from these.
        kdp["descriptors"] = {name: _sha256_file(os.path.join(stage, name))
                              for name in sorted(os.listdir(stage)) if name.endswith(".json")}
        with open(os.path.join(stage, os.path.basename(kdps[0])), "w", encoding="utf-8") as f:
            f.write(dumps(kdp))
        old = None
        if os.path.exists(out):
            old = tempfile.mkdtemp(prefix=".old-", dir=parent)
            os.rmdir(old)
            os.rename(out, old)
        os.rename(stage, out)
        stage = None
        if old:
            shutil.rmtree(old)
    finally:
        if stage and os.path.exists(stage):
            shutil.rmtree(stage)
    if not quiet:
        n = len(kdp["kernelDescriptors"])
        print(f"ingot package: {kdp['name']}: {n} kernels x {len(kdp['arch'])} archs -> {out}")
    return 0


def census_rows(pack_dir):
    kdp_path = glob.glob(os.path.join(pack_dir, "*.kdp.json"))
    if len(kdp_path) != 1:
        raise PackageError(f"{pack_dir}: expected one *.kdp.json, found {len(kdp_path)}")
    kdp = _load_json(kdp_path[0])
    rows = []
    for kd in kdp["kernelDescriptors"]:
        for arch, obj in sorted(kd["kernel_source"]["objects"].items()):
            for entry, r in sorted(obj["resources"].items()):
                regs = r.get("registers", r.get("vgpr", 0))
                dyn = obj.get("dynamic_lds", {}).get(entry, 0)
                rows.append((kdp["name"], kd["name"], arch, entry, regs, r.get("sgpr", "-"), r["spill"],
                             r["scratch"], r["lds"], dyn, r["code_bytes"], r.get("agpr_spill", 0)))
    return kdp, rows


def spill_line(row):
    """A census row's spill as 'kernel arch entry: scratch N, spill N' (AMD: ' (N in AGPRs)' after)."""
    _p, k, arch, entry, _regs, _sgpr, spill, scratch, _lds, _dyn, _code, agpr_spill = row
    agpr = f" ({agpr_spill} in AGPRs)" if arch in ARCHS and ARCHS[arch].vendor == "amd" else ""
    return f"{k} {arch} {entry}: scratch {scratch}, spill {spill}{agpr}"


def spill_lines(rows):
    """(known, new) for the census rows with a spill or scratch: known maps each KnownSpill of
    a family (Family.known_spills) that covers some of them to those rows; new lists the rest,
    as spill_line's lines."""
    table = [ks for f in FAMILIES.values() for ks in f.known_spills]
    known, new = {}, []
    for row in rows:
        _p, k, arch, entry, _regs, _sgpr, spill, scratch, _lds, _dyn, _code, agpr_spill = row
        if not (spill or scratch):
            continue
        ks = next((ks for ks in table if ks.covers(k, arch, spill, scratch, agpr_spill)), None)
        if ks is not None:
            known.setdefault(ks, []).append((k, arch, entry, spill))
        else:
            new.append(spill_line(row))
    return known, new


def print_census(pack_dirs):
    try:
        total = 0
        for d in pack_dirs:
            kdp, rows = census_rows(d)
            archs = sorted({r[2] for r in rows})
            print(f"pack {kdp['name']}: {len(kdp['kernelDescriptors'])} kernels, archs {', '.join(archs)}, "
                  f"{len(rows)} entry points")
            # spill: registers spilled, to scratch or (AMD) to AGPRs; "in agpr" says how many went there
            print(f"  {'kernel':58} {'arch':7} {'entry':14} {'regs':>5} {'sgpr':>5} {'spill':>6} {'in agpr':>7} "
                  f"{'scratch':>8} {'lds':>7} {'dyn lds':>7} {'code':>7}")
            for _p, k, arch, entry, regs, sgpr, spill, scratch, lds, dyn, code, agpr_spill in rows:
                print(f"  {k:58} {arch:7} {entry:14} {regs:>5} {sgpr!s:>5} {spill:>6} {agpr_spill:>7} {scratch:>8} "
                      f"{lds:>7} {dyn:>7} {code:>7}")
            for arch in archs:
                worst = [r for r in rows if r[2] == arch]
                print(f"  {arch}: {len({r[1] for r in worst})} kernels, max regs {max(r[4] for r in worst)}, "
                      f"spills {sum(r[6] for r in worst)} ({sum(r[11] for r in worst)} in AGPRs), scratch {sum(r[7] for r in worst)}, "
                      f"max lds {max(r[8] for r in worst)}, max dynamic lds {max(r[9] for r in worst)}")
            known, new = spill_lines(rows)
            for ks, hits in known.items():
                lo, hi = min(h[3] for h in hits), max(h[3] for h in hits)
                print(f"  known spill, {'/'.join(sorted({h[1] for h in hits}))}: {len(hits)} entry points of "
                      f"{len({h[0] for h in hits})} kernels, {lo if lo == hi else f'{lo}-{hi}'} bytes (at most {ks.max_bytes}"
                      f"{', AGPRs only' if ks.agpr_only else ''}): {ks.why}")
            for line in new:
                print(f"  NEW spill (no known spill covers it: time it, then record it in the family's "
                      f"known_spills, or remove it): {line}")
            total += len(kdp["kernelDescriptors"])
        print(f"census: {len(pack_dirs)} pack(s), {total} kernels")
        return 0
    except (PackageError, OSError, KeyError, ValueError) as e:
        print(f"ingot census: error: {e}", file=sys.stderr)
        return 1
