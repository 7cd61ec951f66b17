"""Where ingot's data and runtime are, installed or in the source tree.

An installed ingot (the wheel, setup_backend.py) keeps its data inside the
package: ingot/share/{templates,schemas,configs,include,packs}, ingot/lib/
libingot.so and ingot/bin/ingot-inspect. In the source tree (PYTHONPATH=
generator, or an editable install) they are the repository's templates/,
schemas/, configs/, runtime/ headers and build/ outputs. Environment variables
come first: INGOT_TEMPLATE_DIR, INGOT_INCLUDE_DIR, INGOT_LIBRARY (the libingot.so to load) and
INGOT_PACKS (a pack folder, or a folder of pack folders; several separated by
os.pathsep)."""

import os
import sys

PACKAGE = os.path.dirname(os.path.abspath(__file__))
SHARE = os.path.join(PACKAGE, "share")
# The source tree this package sits in (generator/ingot -> the repository), when it does.
REPO = os.path.dirname(os.path.dirname(PACKAGE))


def installed():
    """True when this is an installed ingot (data inside the package)."""
    return os.path.isdir(os.path.join(SHARE, "templates"))


def in_source_tree():
    return not installed() and os.path.isdir(os.path.join(REPO, "templates")) and \
        os.path.isdir(os.path.join(REPO, "configs"))


def _data(name, repo_rel):
    return os.path.join(SHARE, name) if installed() else os.path.join(REPO, *repo_rel.split("/"))


def template_dir():
    return os.environ.get("INGOT_TEMPLATE_DIR") or _data("templates", "templates")


def schema_dir():
    return _data("schemas", "schemas")


def configs_dir():
    return _data("configs", "configs")


def include_dirs():
    """Where ingot/ingot.h, dispatch.h and the families' planners are (what a dispatch
    stub compiles against): $INGOT_INCLUDE_DIR (holding ingot/ingot.h and
    ingot/dispatch/{dispatch.h, ingot_<family>_plan.h}, as `make install` lays them
    out), the wheel's, or the source tree's (runtime/src/families/<family>/)."""
    env = os.environ.get("INGOT_INCLUDE_DIR")
    if env:
        return [env, os.path.join(env, "ingot", "dispatch")]
    if installed():
        inc = os.path.join(SHARE, "include")
        return [inc, os.path.join(inc, "ingot", "dispatch")]
    families = os.path.join(REPO, "runtime", "src", "families")
    return [os.path.join(REPO, "runtime", "include"), os.path.join(REPO, "runtime", "src"),
            *sorted(os.path.join(families, d) for d in os.listdir(families)
                    if os.path.isdir(os.path.join(families, d)))]


def build_dir():
    return os.environ.get("INGOT_BUILD_DIR") or os.path.join(REPO, "build")


def library():
    """The libingot.so to load: $INGOT_LIBRARY, the installed one, else the source tree's build."""
    env = os.environ.get("INGOT_LIBRARY")
    if env:
        return env
    if installed():
        return os.path.join(PACKAGE, "lib", "libingot.so")
    return os.path.join(build_dir(), "lib", "libingot.so")


def pack_dirs():
    """The pack folders opened by default: $INGOT_PACKS, else the shipped packs."""
    env = os.environ.get("INGOT_PACKS")
    roots = [p for p in env.split(os.pathsep) if p] if env else \
        [os.path.join(SHARE, "packs") if installed() else os.path.join(build_dir(), "packs")]
    out = []
    for root in roots:
        if _is_pack(root):
            out.append(root)
        elif env is None:
            # the source tree's build/packs holds test packs too: only those of configs/*.yaml
            names = sorted(os.path.splitext(f)[0] for f in os.listdir(configs_dir()) if f.endswith(".yaml")) \
                if os.path.isdir(configs_dir()) else []
            out += [os.path.join(root, n) for n in names if _is_pack(os.path.join(root, n))]
        elif os.path.isdir(root):
            out += [os.path.join(root, n) for n in sorted(os.listdir(root)) if _is_pack(os.path.join(root, n))]
        else:
            out.append(root)  # opening it names what is wrong
    return out


def _is_pack(d):
    return os.path.isdir(d) and any(f.endswith(".kdp.json") for f in os.listdir(d))


def inspect_binary():
    if installed():
        return os.path.join(PACKAGE, "bin", "ingot-inspect")
    return os.path.join(build_dir(), "bin", "ingot-inspect")


def inspect_main():
    """The `ingot-inspect` console script: runs the installed binary."""
    exe = inspect_binary()
    if not os.access(exe, os.X_OK):
        print(f"ingot-inspect: {exe} not found: this ingot was installed without the runtime "
              f"(build it with `make` before `pip install .`)", file=sys.stderr)
        return 2
    os.execv(exe, [exe] + sys.argv[1:])
