"""The PEP 517 build backend of ingot's wheel (pyproject.toml: build-backend).

Pure standard library, so `pip install .` needs nothing it would fetch: no
setuptools, no wheel package (pyenv's and venv's pythons may lack
bdist_wheel, and PyPI is not reachable). It writes exactly these files, and
nothing else from the tree or from build/:

    ingot/**/*.py                     the generator and the runtime API (generator/ingot)
    ingot/share/templates/*           templates and the hand-written headers (templates/)
    ingot/share/schemas/*.schema.json the descriptor schemas (schemas/)
    ingot/share/configs/*.yaml        the pack configs (configs/)
    ingot/share/include/ingot/...     ingot.h and dispatch.h (what a dispatch stub compiles against)
    ingot/share/packs/<pack>/...      the packaged packs of configs/*.yaml (from BUILD/packs), when built
    ingot/lib/libingot.so             the runtime (BUILD/lib), when built
    ingot/bin/ingot-inspect           the inspection tool (BUILD/bin), when built
    ingot-<version>.dist-info/        METADATA, WHEEL, entry_points.txt, RECORD

BUILD is $INGOT_BUILD_DIR, else build/ beside this file. Without a built
libingot the wheel is pure Python (the generator only) and says so on stderr.
An editable install (`pip install -e .`) adds generator/ to sys.path instead.

The sdist (`python3 -m build --sdist`, or build_sdist) holds what building that
pure wheel needs, under ingot-<version>/: pyproject.toml, setup_backend.py,
README.md, PKG-INFO, and generator/ingot, templates/, schemas/, configs/ and the
two headers as in the tree (sdist_files). The runtime, the packs and the
kernels are built from the repository (make), not from the sdist.
"""

import base64
import glob
import hashlib
import os
import re
import stat
import io
import sys
import sysconfig
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.abspath(__file__))
NAME = "ingot"


def _version():
    with open(os.path.join(ROOT, "generator", "ingot", "__init__.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError("generator/ingot/__init__.py: no __version__ line")
    return m.group(1)


def _pyproject():
    """The few [project] fields the metadata needs, read without tomllib (3.9, 3.10)."""
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()

    def field(key):
        m = re.search(rf'^{key} = "([^"]*)"', text, re.M)
        return m.group(1) if m else ""

    deps = re.search(r"^dependencies = \[([^\]]*)\]", text, re.M)
    return {"description": field("description"), "requires-python": field("requires-python"),
            "dependencies": re.findall(r'"([^"]+)"', deps.group(1)) if deps else []}


def build_dir():
    return os.path.abspath(os.environ.get("INGOT_BUILD_DIR") or os.path.join(ROOT, "build"))


def shipped_pack_names():
    """The packs whose dispatch stubs libingot carries: one per configs/*.yaml."""
    return sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(ROOT, "configs", "*.yaml")))


def _tree(src, dest, keep=lambda rel: True):
    """(archive name, file path) of each regular file under src, sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
        for fn in sorted(filenames):
            path = os.path.join(dirpath, fn)
            rel = os.path.relpath(path, src).replace(os.sep, "/")
            if os.path.isfile(path) and not os.path.islink(path) and keep(rel):
                out.append((f"{dest}/{rel}", path))
    return out


def stub_headers():
    """The runtime headers a dispatch stub compiles against, relative to the tree: the public ones
    (runtime/include/ingot/*.h), the dispatch contract and each family's planner
    (runtime/src/families/<family>/ingot_<family>_plan.h). The wheel lays them out as `make install`
    does: ingot/*.h under include/, the rest under include/ingot/dispatch/."""
    public = sorted(glob.glob(os.path.join(ROOT, "runtime", "include", "ingot", "*.h")))
    planners = sorted(glob.glob(os.path.join(ROOT, "runtime", "src", "families", "*", "ingot_*_plan.h")))
    return [os.path.relpath(p, ROOT).replace(os.sep, "/")
            for p in [*public, os.path.join(ROOT, "runtime", "src", "dispatch.h"), *planners]]


def wheel_files():
    """(archive name, file path) of everything the wheel holds, and whether it
    holds the native runtime (which makes it platform-specific)."""
    files = _tree(os.path.join(ROOT, "generator", "ingot"), "ingot", lambda rel: rel.endswith(".py"))
    files += _tree(os.path.join(ROOT, "templates"), "ingot/share/templates")
    files += _tree(os.path.join(ROOT, "schemas"), "ingot/share/schemas", lambda rel: rel.endswith(".schema.json"))
    files += _tree(os.path.join(ROOT, "configs"), "ingot/share/configs", lambda rel: rel.endswith(".yaml"))
    files += [(f"ingot/share/include/{rel[len('runtime/include/'):]}" if rel.startswith("runtime/include/")
               else f"ingot/share/include/ingot/dispatch/{os.path.basename(rel)}", os.path.join(ROOT, rel))
              for rel in stub_headers()]
    build = build_dir()
    lib = os.path.join(build, "lib", "libingot.so")
    native = os.path.isfile(lib)
    if native:
        files.append(("ingot/lib/libingot.so", os.path.realpath(lib)))
        inspect = os.path.join(build, "bin", "ingot-inspect")
        if os.path.isfile(inspect):
            files.append(("ingot/bin/ingot-inspect", inspect))
        for pack in shipped_pack_names():
            pack_dir = os.path.join(build, "packs", pack)
            if not os.path.isfile(os.path.join(pack_dir, f"{pack}.kdp.json")):
                raise RuntimeError(f"{pack_dir}: libingot is built but pack {pack} is not packaged "
                                   f"(run `make`, or set INGOT_BUILD_DIR to a complete build)")
            files += _tree(pack_dir, f"ingot/share/packs/{pack}")
    else:
        print(f"ingot wheel: {lib} not found: the wheel holds the generator only (run `make` first for the "
              f"runtime, ingot-inspect and the packs)", file=sys.stderr)
    return files, native


def sdist_files():
    """(path inside ingot-<version>/, file path) of everything the sdist holds: the tree's files that
    building the pure wheel reads (wheel_files without a build), and the build's own files."""
    files = [(n, os.path.join(ROOT, n)) for n in ("pyproject.toml", "setup_backend.py", "README.md")]
    files += _tree(os.path.join(ROOT, "generator", "ingot"), "generator/ingot", lambda rel: rel.endswith(".py"))
    files += _tree(os.path.join(ROOT, "templates"), "templates")
    files += _tree(os.path.join(ROOT, "schemas"), "schemas", lambda rel: rel.endswith(".schema.json"))
    files += _tree(os.path.join(ROOT, "configs"), "configs", lambda rel: rel.endswith(".yaml"))
    files += [(rel, os.path.join(ROOT, rel)) for rel in stub_headers()]
    return files


def _tag(native):
    if not native:
        return "py3-none-any"
    return "py3-none-" + re.sub(r"[^A-Za-z0-9]", "_", sysconfig.get_platform())


def _dist_info(version, native):
    meta = _pyproject()
    lines = ["Metadata-Version: 2.1", f"Name: {NAME}", f"Version: {version}", f"Summary: {meta['description']}",
             "License: Apache-2.0"]
    if meta["requires-python"]:
        lines.append(f"Requires-Python: {meta['requires-python']}")
    lines += [f"Requires-Dist: {d}" for d in meta["dependencies"]]
    metadata = "\n".join(lines) + "\n"
    wheel = (f"Wheel-Version: 1.0\nGenerator: ingot setup_backend\nRoot-Is-Purelib: {'false' if native else 'true'}\n"
             f"Tag: {_tag(native)}\n")
    entry_points = "[console_scripts]\ningot = ingot.cli:main\ningot-inspect = ingot.paths:inspect_main\n"
    return {"METADATA": metadata, "WHEEL": wheel, "entry_points.txt": entry_points}


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write_wheel(wheel_directory, entries, native):
    """entries: (archive name, bytes, executable). Returns the wheel's file name."""
    version = _version()
    dist = f"{NAME}-{version}.dist-info"
    for fn, text in _dist_info(version, native).items():
        entries.append((f"{dist}/{fn}", text.encode(), False))
    name = f"{NAME}-{version}-{_tag(native)}.whl"
    os.makedirs(wheel_directory, exist_ok=True)
    path = os.path.join(wheel_directory, name)
    tmp = path + ".part"
    record = []
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for arcname, data, executable in entries:
            info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = ((0o755 if executable else 0o644) | stat.S_IFREG) << 16
            z.writestr(info, data)
            record.append(_record_line(arcname, data))
        record.append(f"{dist}/RECORD,,")
        info = zipfile.ZipInfo(f"{dist}/RECORD", date_time=(2020, 1, 1, 0, 0, 0))
        info.external_attr = (0o644 | stat.S_IFREG) << 16
        z.writestr(info, "\n".join(record) + "\n")
    os.replace(tmp, path)
    return name


def _read(path):
    with open(path, "rb") as f:
        return f.read()


# ---- PEP 517 / PEP 660 hooks -------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_sdist(sdist_directory, config_settings=None):
    """ingot-<version>.tar.gz: sdist_files() under ingot-<version>/, and PKG-INFO."""
    version = _version()
    base = f"{NAME}-{version}"
    name = f"{base}.tar.gz"
    os.makedirs(sdist_directory, exist_ok=True)
    path = os.path.join(sdist_directory, name)
    tmp = path + ".part"
    entries = [(rel, _read(p)) for rel, p in sdist_files()]
    entries.append(("PKG-INFO", _dist_info(version, False)["METADATA"].encode()))
    with tarfile.open(tmp, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel, data in sorted(entries):
            info = tarfile.TarInfo(f"{base}/{rel}")
            info.size, info.mtime, info.mode = len(data), 1577836800, 0o644  # 2020-01-01: reproducible
            tar.addfile(info, io.BytesIO(data))
    os.replace(tmp, path)
    return name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files, native = wheel_files()
    entries = [(arc, _read(path), os.access(path, os.X_OK) and arc.startswith("ingot/bin/")) for arc, path in files]
    return _write_wheel(wheel_directory, entries, native)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # The source tree's generator/ on sys.path: data is found in the tree (ingot/paths.py).
    pth = (os.path.join(ROOT, "generator") + "\n").encode()
    return _write_wheel(wheel_directory, [("ingot_editable.pth", pth, False)], False)
