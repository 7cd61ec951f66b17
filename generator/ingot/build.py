"""`ingot build CONFIG --out DIR`: generate, compile and package one pack in one
command, without CMake. What it writes:

    DIR/<pack>/                          the packaged pack (what the runtime opens)
    DIR/<pack>/dispatch/ingot_<pack>_dispatch.so
                                         the pack's dispatch stub as a shared object, which
                                         libingot loads from the pack when no program links it
    DIR/.ingot-build/<pack>/generated/   the generator's output (only changed files rewritten)
    DIR/.ingot-build/<pack>/objects/     code objects, each with a .d (headers read) and a
                                         .stamp (the command and the sha256 of every input)

Incremental by content: a code object is compiled again only when its command
or the bytes of its source or of a header it read changed; the pack is packaged
again only when an object, a descriptor or the dispatch library changed. The
compilers and their flags are the arch table's (ingot.archs: the same that
cmake/IngotPack.cmake reads from `ingot list --json`): clang-22 for AMD archs,
nvcc for sm_90 (on PATH or in /usr/local/cuda/bin; skipped with a warning where
missing). Exit codes: 0 built, 2 a config or input error, 1 a failed compile or
packaging (the compiler's own message is printed)."""

import concurrent.futures
import hashlib
import json
import os
import shutil
import subprocess
import sys

from ingot import paths
from ingot.archs import ARCHS

TOOLS = {"clang": ("clang-22", "apt-get install clang-22 lld-22"),
         "readelf": ("llvm-readelf-22", "apt-get install llvm-22"),
         "objdump": ("llvm-objdump-22", "apt-get install llvm-22")}


class BuildError(Exception):
    pass


def _which(name, hint=None):
    return shutil.which(name) or (shutil.which(name, path=hint) if hint else None)


def find_nvcc():
    """$INGOT_NVCC (when it is not an executable, sm_90 is skipped as without nvcc), else nvcc
    on PATH or in /usr/local/cuda/bin."""
    env = os.environ.get("INGOT_NVCC")
    if env is not None:
        return env if os.path.isfile(env) and os.access(env, os.X_OK) else None
    return _which("nvcc", "/usr/local/cuda/bin")


def _tool(key):
    name, install = TOOLS[key]
    path = _which(name)
    if not path:
        raise BuildError(f"{name} not found on PATH ({install})")
    return path


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def parse_depfile(path):
    """The prerequisites of a make-style depfile (`target: a b \\` lines)."""
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        text = f.read().replace("\\\n", " ")
    deps = []
    for line in text.splitlines():
        if ":" not in line:
            continue
        rest = line.split(": ", 1)[1] if ": " in line else line.split(":", 1)[1]
        words, cur, i = [], "", 0
        while i < len(rest):
            c = rest[i]
            if c == "\\" and i + 1 < len(rest) and rest[i + 1] == " ":
                cur, i = cur + " ", i + 2
                continue
            if c.isspace():
                if cur:
                    words.append(cur)
                cur = ""
            else:
                cur += c
            i += 1
        if cur:
            words.append(cur)
        deps += words
    return deps


def _stamp_of(cmd, inputs):
    return {"command": cmd, "inputs": {p: _sha256(p) for p in sorted(set(inputs))}}


def _up_to_date(obj, cmd):
    stamp_path = obj + ".stamp"
    if not (os.path.isfile(obj) and os.path.isfile(stamp_path)):
        return False
    try:
        with open(stamp_path, encoding="utf-8") as f:
            old = json.load(f)
        if old.get("command") != cmd:
            return False
        for p, sha in old.get("inputs", {}).items():
            if not os.path.isfile(p) or _sha256(p) != sha:
                return False
        return True
    except (OSError, ValueError, AttributeError):
        return False


def _compile(job):
    """Compiles one object unless it is up to date. Returns (obj, compiled, error)."""
    obj, cmd, depfile, src = job
    if _up_to_date(obj, cmd):
        return obj, False, None
    os.makedirs(os.path.dirname(obj), exist_ok=True)
    for p in (obj, obj + ".stamp"):
        if os.path.exists(p):
            os.remove(p)
    r = subprocess.run(cmd + depfile, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        return obj, True, f"{' '.join(cmd)}\n{r.stdout.decode(errors='replace')}"
    deps = parse_depfile(obj + ".d") if os.path.isfile(obj + ".d") else []
    stamp = _stamp_of(cmd, [src] + [d for d in deps if os.path.isfile(d)])
    with open(obj + ".stamp", "w", encoding="utf-8") as f:
        json.dump(stamp, f, indent=1, sort_keys=True)
    return obj, True, None


def _compile_jobs(pack, gen_dir, obj_root, archs, tools):
    template_dir = paths.template_dir()
    jobs = []
    for inst in pack.instances:
        for a in archs:
            src = os.path.join(gen_dir, "kernels", a, f"{inst.name}.hip")
            if not os.path.isfile(src):
                continue  # a variant built for some of the pack's archs only
            arch = ARCHS[a]
            obj = os.path.join(obj_root, a, f"{inst.name}.{a}.{arch.suffix}")
            compiler = tools["nvcc"] if arch.compiler == "nvcc" else tools["clang"]
            cmd = [compiler, *arch.flags, "-I", template_dir, "-o", obj, src]
            if arch.compiler == "nvcc":
                depfile = ["-MD", "-MF", obj + ".d"]
            else:  # clang's driver writes no depfile for a device-only job; cc1 does, asked directly
                depfile = ["-Xclang", "-dependency-file", "-Xclang", obj + ".d", "-Xclang", "-MT", "-Xclang", obj]
            jobs.append((obj, cmd, depfile, src))
    return jobs


def _c_compiler():
    cc = os.environ.get("CC")
    if cc:
        return cc
    for name in ("cc", "gcc", "clang-22", "clang"):
        path = shutil.which(name)
        if path:
            return path
    raise BuildError("no C compiler found for the dispatch library (set CC, or apt-get install gcc; "
                     "--no-dispatch-library skips it)")


def build_dispatch_library(gen_dir, pack_name, out_path):
    """The pack's generated dispatch stub as a shared object exporting
    ingot_<pack>_dispatch (the stub keeps its helpers static). Returns (path, rebuilt)."""
    src = os.path.join(gen_dir, "dispatch", f"{pack_name}_dispatch.c")
    incs = [os.path.join(gen_dir, "dispatch"), paths.template_dir(), *paths.include_dirs()]
    cmd = [_c_compiler(), "-std=c11", "-O2", "-fPIC", "-shared",
           *[f"-I{d}" for d in incs], "-o", out_path, src]
    job = (out_path, cmd, ["-MD", "-MF", out_path + ".d"], src)
    obj, rebuilt, err = _compile(job)
    if err:
        raise BuildError(f"the dispatch library failed to compile:\n{err}")
    return obj, rebuilt


def build_pack(config, out, archs=None, jobs=0, quiet=False, dispatch_library=True):
    from ingot.cli import EXIT_CONFIG, RenderFailed, render_all
    from ingot.errors import ConfigErrors, printable
    from ingot.package import package_pack
    from ingot.write import OutputError, write_packs

    def say(msg):
        if not quiet:
            print(msg, flush=True)

    try:
        rendered = render_all([config])
    except ConfigErrors:
        raise  # the CLI reports every error of the config
    except RenderFailed:
        raise
    (name, (pack, files)), = rendered.items()
    if os.path.lexists(out) and not os.path.isdir(out):
        raise OutputError(out, "not a folder (allowed: a folder, made when missing)")
    try:
        want = archs or list(pack.archs)
        unknown = [a for a in want if a not in pack.archs]
        if unknown:
            print(f"error: arch(s) {', '.join(unknown)} not in pack {name} (it has: {', '.join(pack.archs)})",
                  file=sys.stderr)
            return EXIT_CONFIG
        tools = {"clang": None, "nvcc": None}
        built_archs = []
        for a in want:
            if ARCHS[a].compiler == "nvcc":
                tools["nvcc"] = tools["nvcc"] or find_nvcc()
                if not tools["nvcc"]:
                    print(f"ingot build: warning: nvcc not found (looked on PATH and in /usr/local/cuda/bin): "
                          f"{a} code objects of pack {name} are skipped", file=sys.stderr)
                    continue
            else:
                tools["clang"] = tools["clang"] or _tool("clang")
            built_archs.append(a)
        if not built_archs:
            raise BuildError(f"no arch of pack {name} can be built here (asked: {', '.join(want)})")
        readelf = _tool("readelf") if any(ARCHS[a].vendor == "amd" for a in built_archs) else "llvm-readelf-22"
        objdump = _tool("objdump") if any(ARCHS[a].vendor == "amd" for a in built_archs) else "llvm-objdump-22"

        work = os.path.join(out, ".ingot-build", name)
        gen_root = os.path.join(work, "generated")
        write_packs(gen_root, {name: files})
        gen_dir = os.path.join(gen_root, name)
        obj_root = os.path.join(work, "objects")
        todo = _compile_jobs(pack, gen_dir, obj_root, built_archs, tools)
        compiled, failed = 0, []
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as ex:
            for obj, did, err in ex.map(_compile, todo):
                if err:
                    failed.append(err)
                elif did:
                    compiled += 1
                    say(f"ingot build: compiled {os.path.relpath(obj, obj_root)}")
        if failed:
            for err in failed:
                print(f"error: compile failed: {err}", file=sys.stderr)
            print(f"ingot build: {len(failed)} of {len(todo)} code objects failed; the pack was not packaged",
                  file=sys.stderr)
            return 1
        dispatch_so = None
        if dispatch_library:
            dispatch_so, rebuilt = build_dispatch_library(
                gen_dir, name, os.path.join(work, f"ingot_{name}_dispatch.so"))
            if rebuilt:
                say(f"ingot build: compiled the dispatch library ingot_{name}_dispatch.so")

        pack_dir = os.path.join(out, name)
        inputs = sorted(o for o, *_ in todo) + sorted(
            os.path.join(dp, f) for dp, _, fs in os.walk(os.path.join(gen_dir, "descriptors")) for f in fs)
        if dispatch_so:
            inputs.append(dispatch_so)
        key = hashlib.sha256(json.dumps({"archs": built_archs, "inputs": {p: _sha256(p) for p in inputs},
                                         "dispatch": bool(dispatch_so)}, sort_keys=True).encode()).hexdigest()
        stamp = os.path.join(work, "package.stamp")
        kdp = os.path.join(pack_dir, f"{name}.kdp.json")
        current = None
        if os.path.isfile(stamp) and os.path.isfile(kdp):
            with open(stamp, encoding="utf-8") as f:
                current = f.read().strip()
        if current is not None and current == f"{key} {_sha256(kdp)}":
            say(f"ingot build: {name}: up to date in {printable(pack_dir)} ({compiled} compiled)")
            return 0
        rc = package_pack(gen_dir, obj_root, pack_dir, readelf, built_archs, quiet=True, objdump=objdump,
                          dispatch_library=dispatch_so)
        if rc != 0:
            return rc
        with open(stamp, "w", encoding="utf-8") as f:
            f.write(f"{key} {_sha256(kdp)}\n")
        say(f"ingot build: {name}: {len(pack.instances)} instances x {', '.join(built_archs)} "
            f"({compiled} compiled, {len(todo) - compiled} reused) -> {printable(pack_dir)}")
        return 0
    except BuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_CONFIG
    except OSError as e:
        print(f"error: {printable(str(e.filename or out))}: {e.strerror or e}", file=sys.stderr)
        return EXIT_CONFIG
