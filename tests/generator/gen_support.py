"""Shared helpers of the generator tests: where things are, running the `ingot`
command in-process, and snapshots of a folder to prove it was not touched."""

import contextlib
import io
import json
import os

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MAIN_CONFIG = os.path.join(REPO, "configs", "attention_decode.yaml")
SEED_CONFIG = os.path.join(REPO, "tests", "data", "test_seed.yaml")
MINIMAL_CONFIG = os.path.join(REPO, "tests", "generator", "data", "minimal.yaml")
BAD_CONFIG_DIR = os.path.join(REPO, "tests", "generator", "bad_configs")
SCHEMA_DIR = os.path.join(REPO, "schemas")
GENERATED = os.path.join(REPO, "generated")
KINDS = ("ued", "kmd", "udd", "umd", "kdp")


def run_cli(argv):
    """Runs ingot.cli.main(argv) in this process; returns (exit code, stdout, stderr)."""
    from ingot.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return rc, out.getvalue(), err.getvalue()


def snapshot(root):
    """{relative path: (bytes, mtime_ns)} of every file under root, folders included
    as (None, None), so that any write, rename, new file or new folder shows."""
    snap = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            snap[os.path.relpath(os.path.join(dirpath, d), root) + "/"] = (None, None)
        for n in filenames:
            p = os.path.join(dirpath, n)
            with open(p, "rb") as f:
                snap[os.path.relpath(p, root)] = (f.read(), os.stat(p).st_mtime_ns)
    return snap


def read_tree(root):
    """{relative path: text} of every file under root."""
    out = {}
    for dirpath, _, filenames in os.walk(root):
        for n in filenames:
            p = os.path.join(dirpath, n)
            with open(p, encoding="utf-8") as f:
                out[os.path.relpath(p, root)] = f.read()
    return out


def descriptor_kind(filename):
    """'x.kdp.json' -> 'kdp'; every descriptor file ends in .<kind>.json."""
    kind = filename.rsplit(".", 2)[-2]
    if kind not in KINDS:
        raise ValueError(f"{filename}: not a descriptor file name")
    return kind


def load_schemas():
    schemas = {}
    for kind in KINDS:
        with open(os.path.join(SCHEMA_DIR, f"{kind}.schema.json"), encoding="utf-8") as f:
            schemas[kind] = json.load(f)
    return schemas


def fake_code_object_reader(entry_points, signature):
    """A stand-in for codeobj.read_amd / read_cubin: answers for a file named
    <instance>.<arch>.<suffix> what a well-formed code object of that instance
    would hold (every entry point, the UDD's signature, plausible resources)."""
    from ingot.archs import ARCHS

    def read(path, *_readelf):
        inst, arch = os.path.basename(path).split(".")[:2]
        amd = ARCHS[arch].vendor == "amd"
        sig = [{"kind": a["kind"], "offset": a["offset"], "size": a["size"]} if amd
               else {"offset": a["offset"], "size": a["size"]} for a in signature]
        kernels = {}
        for n, entry in enumerate(entry_points):
            if amd:
                res = {"vgpr": 100 - 20 * n, "sgpr": 50, "agpr": 0, "agpr_spill": 0, "spill": 0, "scratch": 0,
                       "lds": 9344 - 1000 * n, "wavefront_size": ARCHS[arch].wave_size, "code_bytes": 4000 + n}
            else:
                res = {"registers": 128 - 20 * n, "spill": 0, "scratch": 0, "lds": 9344 - 1000 * n,
                       "code_bytes": 3000 + n}
            kernels[f"{inst}_{entry}"] = {"signature": sig, "kernarg_size": signature[-1]["offset"] + signature[-1]["size"],
                                          "resources": res}
            if amd:
                kernels[f"{inst}_{entry}"]["code_object_version"] = ARCHS[arch].code_object_version
        return kernels

    return read


def _pack_descriptor(gen_dir, suffix):
    desc = os.path.join(gen_dir, "descriptors")
    (name,) = [n for n in os.listdir(desc) if n.endswith(suffix)]
    with open(os.path.join(desc, name), encoding="utf-8") as f:
        return json.load(f)


def write_fake_objects(gen_dir, objects, archs):
    """One file of distinct bytes per kernel and arch it is built for, where the
    build puts code objects."""
    from ingot.archs import ARCHS

    for kd in _pack_descriptor(gen_dir, ".kdp.json")["kernelDescriptors"]:
        for arch in (a for a in archs if a in kd["kernel_source"]["sources"]):
            d = os.path.join(objects, arch)
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, f"{kd['name']}.{arch}.{ARCHS[arch].suffix}"), "wb") as f:
                f.write(f"not really a code object: {kd['name']} for {arch}\n".encode())


def run_package(gen_dir, objects, out, archs=None, reader=None):
    """The real packaging step with `reader` standing in for read_amd and
    read_cubin (default: fake_code_object_reader). Returns (exit code, stderr)."""
    import contextlib
    from unittest import mock

    import ingot.package as package

    udd = _pack_descriptor(gen_dir, ".udd.json")
    read = reader or fake_code_object_reader(udd["entry_points"], udd["signature"])
    err = io.StringIO()
    with mock.patch.object(package, "read_amd", read), mock.patch.object(package, "read_cubin", read), \
            contextlib.redirect_stderr(err):
        rc = package.package_pack(gen_dir, objects, out, "llvm-readelf-unused", archs, quiet=True)
    return rc, err.getvalue()


def package_with_fake_objects(gen_dir, work, archs=None, reader=None):
    """Fake code objects under work/objects, packaged into work/packs/<pack>.
    Returns (exit code, packaged folder, stderr)."""
    kdp = _pack_descriptor(gen_dir, ".kdp.json")
    objects = os.path.join(work, "objects")
    write_fake_objects(gen_dir, objects, archs or kdp["arch"])
    out = os.path.join(work, "packs", kdp["name"])
    rc, err = run_package(gen_dir, objects, out, archs, reader)
    return rc, out, err
