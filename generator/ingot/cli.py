"""The `ingot` command: generate, check, list, package, census, build."""

import argparse
import contextlib
import glob
import hashlib
import os
import sys

from ingot import __version__, paths
from ingot.archs import ARCHS
from ingot.config import validate_and_expand
from ingot.errors import ConfigError, ConfigErrors, Mark, printable
from ingot.load import load_bytes, read_config
from ingot.write import DEFAULT_LOCK_TIMEOUT, OutputError

EXIT_OK, EXIT_DRIFT, EXIT_CONFIG, EXIT_RENDER = 0, 1, 2, 3


class RenderFailed(Exception):
    """A template or a value that has no C token failed while rendering: a
    generator or template defect rather than a config error."""

    def __init__(self, pack, error):
        super().__init__(f"{pack}: rendering failed: {type(error).__name__}: {error}")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def default_configs():
    if not paths.in_source_tree():
        return []
    return sorted(glob.glob(os.path.join(REPO, "configs", "*.yaml")))


def default_out(configs):
    """Where generate and check write without --out: the source tree's generated/
    when every config is one of its configs/*.yaml (the project's own drift
    check), else the current folder. Never into the source tree by surprise."""
    if paths.in_source_tree():
        configs_dir = os.path.realpath(os.path.join(REPO, "configs"))
        if configs and all(os.path.dirname(os.path.realpath(c)) == configs_dir for c in configs):
            return os.path.join(REPO, "generated")
    return os.getcwd()


def display_path(path):
    """How messages and outputs name a config: relative to the repo, or its
    bare file name when it lives elsewhere (never an absolute path)."""
    display = os.path.relpath(os.path.abspath(path), REPO)
    return os.path.basename(path) if display.startswith("..") else display


def load_pack(path):
    """Load, validate and expand one config. Raises ConfigErrors."""
    display = display_path(path)
    data = read_config(path, display)  # one read: the hash is of the bytes that were parsed
    return validate_and_expand(load_bytes(data, display), hashlib.sha256(data).hexdigest())


def configs_of(args):
    """The configs a command works on: those named, else configs/*.yaml. Running
    on nothing is an error, never a silent success."""
    if args.configs:
        return args.configs
    found = default_configs()
    if not found:
        where = os.path.join(REPO, "configs") if paths.in_source_tree() else "ingot"
        raise OutputError(where, "no config given" + (" and no *.yaml found here" if paths.in_source_tree() else "")
                          + " (allowed: name the pack configs, e.g. `ingot generate my_pack.yaml`)")
    return found


def _resolve_out(args, configs):
    if args.out is None:
        args.out = default_out(configs)
    return args.out


def render_all(configs):
    """{pack name: (pack, files)} for every config; raises ConfigErrors with the
    errors of every config together."""
    from ingot.render import render_pack

    from ingot.write import with_manifest

    out, errors = {}, []
    for c in configs:
        try:
            pack = load_pack(c)
        except ConfigErrors as e:
            errors += e.errors
            continue
        if pack.name in out:
            errors.append(ConfigError(Mark(display_path(c), 1, 1), "pack",
                                      f"pack '{pack.name}' is also defined by another config"))
            continue
        import jinja2
        try:
            out[pack.name] = (pack, with_manifest(render_pack(pack)))
        except (jinja2.TemplateError, ValueError, TypeError) as e:
            raise RenderFailed(pack.name, e) from e
    if errors:
        raise ConfigErrors(errors)
    return out


def cmd_generate(args):
    from ingot.write import write_packs

    configs = configs_of(args)
    rendered = render_all(configs)
    plans = write_packs(_resolve_out(args, configs), {name: files for name, (_, files) in rendered.items()},
                        prune_unknown=args.prune_unknown, lock_timeout=args.lock_timeout)
    if not args.quiet:
        for plan in plans:
            pack = rendered[plan.name][0]
            sources = sum(len(i.archs) for i in pack.instances)
            line = (f"ingot: {plan.name}: {len(pack.instances)} instances, {sources} kernel sources for "
                    f"{len(pack.archs)} archs, {len(plan.files)} files ({len(plan.write)} written, "
                    f"{len(plan.removed)} removed) in {printable(plan.root)}")
            if plan.kept:
                line += (f"; kept {len(plan.kept)} file(s) ingot did not write: {_names(plan.kept)} "
                         "(--prune-unknown removes them)")
            if plan.pruned_unknown:
                line += (f"; of the removed, {len(plan.pruned_unknown)} ingot did not write: "
                         f"{_names(plan.pruned_unknown)}")
            print(line)
    return EXIT_OK


def _names(rels, limit=5):
    shown = ", ".join(printable(r) for r in rels[:limit])
    return shown + (f" and {len(rels) - limit} more" if len(rels) > limit else "")


def cmd_check(args):
    from ingot.write import diff_tree, locked

    configs = configs_of(args)
    rendered = render_all(configs)
    _resolve_out(args, configs)
    if os.path.lexists(args.out) and not os.path.isdir(args.out):
        raise OutputError(args.out, "not a folder (allowed: the folder generate writes)")
    drift = False
    # A shared lock: a generate running now finishes first, so no half-swapped tree is compared.
    with (locked(args.out, args.lock_timeout, shared=True) if os.path.isdir(args.out)
          else contextlib.nullcontext()):
        for name, (_, files) in sorted(rendered.items()):
            try:
                d = diff_tree(os.path.join(args.out, name), files,
                              os.path.join(os.path.relpath(args.out, REPO), name))
            except OSError as e:
                raise OutputError(e.filename or os.path.join(args.out, name), e.strerror or str(e)) from None
            if d:
                drift = True
                sys.stdout.write(d)
    if drift:
        print("ingot check: generated/ differs from what the configs produce; run `ingot generate`",
              file=sys.stderr)
        return EXIT_DRIFT
    print(f"ingot check: {len(rendered)} pack(s) up to date")
    return EXIT_OK


def cmd_list(args):
    rendered = render_all(configs_of(args))
    if args.json:
        import json
        out = []
        for name, (pack, files) in sorted(rendered.items()):
            # `compile`: per arch, the compiler and its flags from the arch table (the build's only source).
            out.append({"pack": name, "archs": list(pack.archs),
                        "compile": {a: [ARCHS[a].compiler, *ARCHS[a].flags] for a in pack.archs},
                        "instances": [i.name for i in pack.instances], "files": sorted(files)})
        print(json.dumps(out, indent=1, sort_keys=True))
        return EXIT_OK
    for name, (pack, files) in sorted(rendered.items()):
        print(f"pack {name} ({printable(pack.config_path)}): {len(pack.instances)} instances, archs {', '.join(pack.archs)}")
        for inst in pack.instances:
            print(f"  {inst.name}  variant={inst.variant} priority={inst.priority}")
            for arch in inst.archs:
                print(f"    {inst.filename(arch)}")
    return EXIT_OK


def cmd_package(args):
    from ingot.package import package_pack

    archs = [a for a in args.archs.split(",") if a] if args.archs else None
    return package_pack(args.generated, args.objects, args.out, args.readelf, archs, quiet=args.quiet,
                        objdump=args.objdump)


def cmd_build(args):
    from ingot.build import build_pack

    archs = [a for a in args.archs.split(",") if a] if args.archs else None
    return build_pack(args.config, args.out, archs=archs, jobs=args.jobs, quiet=args.quiet,
                      dispatch_library=not args.no_dispatch_library)


def cmd_abi(args):
    from ingot import abi

    code, msg = abi.write_or_check(args.out or abi.header_path(), args.check)
    print(msg, file=sys.stderr if code else sys.stdout)
    return EXIT_DRIFT if code else EXIT_OK


def cmd_census(args):
    from ingot.package import print_census

    return print_census(args.packs)


def main(argv=None):
    p = argparse.ArgumentParser(prog="ingot", description="Cast GPU kernel packs from YAML pack configs.")
    p.add_argument("--version", action="version", version=f"ingot {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for name, fn, help_ in (("generate", cmd_generate, "write generated/ from the configs"),
                            ("check", cmd_check, "regenerate in memory; exit 1 with a diff on drift"),
                            ("list", cmd_list, "print instances and the files they produce")):
        s = sub.add_parser(name, help=help_)
        s.add_argument("configs", nargs="*", help="pack configs (default: configs/*.yaml)")
        s.add_argument("--out", default=None,
                       help="output root (default: the source tree's generated/ for its own configs/*.yaml, "
                            "else the current folder)")
        s.add_argument("--quiet", action="store_true")
        if name == "list":
            s.add_argument("--json", action="store_true", help="machine-readable output (for the build)")
        else:
            s.add_argument("--lock-timeout", type=float, default=DEFAULT_LOCK_TIMEOUT, metavar="SECONDS",
                           help="how long to wait for another run on the same output "
                                f"(default: {DEFAULT_LOCK_TIMEOUT:g})")
        if name == "generate":
            s.add_argument("--prune-unknown", action="store_true",
                           help="also remove files under the pack folders that ingot did not write")
        s.set_defaults(fn=fn)
    s = sub.add_parser("package", help="package compiled code objects and descriptors into a pack folder")
    s.add_argument("--generated", required=True, help="generated/<pack> folder")
    s.add_argument("--objects", required=True, help="folder holding <arch>/<instance>.<arch>.<suffix>")
    s.add_argument("--out", required=True, help="pack folder to write (build/packs/<pack>)")
    s.add_argument("--readelf", default="llvm-readelf-22")
    s.add_argument("--objdump", default="llvm-objdump-22", help="disassembles AMD objects (AGPR spills)")
    s.add_argument("--archs", default="", help="comma-separated archs to package (default: all of the pack's)")
    s.add_argument("--quiet", action="store_true")
    s.set_defaults(fn=cmd_package)
    s = sub.add_parser("build", help="generate, compile and package one pack (incremental)")
    s.add_argument("config", help="the pack config (YAML)")
    s.add_argument("--out", required=True, help="output root: the pack is written to OUT/<pack>/, the "
                   "intermediate files (generated sources, objects) to OUT/.ingot-build/<pack>/")
    s.add_argument("--archs", default="", help="comma-separated archs to build (default: all of the pack's; "
                   "sm_90 is skipped with a warning where nvcc is missing)")
    s.add_argument("--jobs", type=int, default=0, help="parallel compiles (default: the CPU count)")
    s.add_argument("--no-dispatch-library", action="store_true",
                   help="do not build the pack's dispatch stub as dispatch/ingot_<pack>_dispatch.so")
    s.add_argument("--quiet", action="store_true")
    s.set_defaults(fn=cmd_build)
    s = sub.add_parser("census", help="print registers, spills, scratch, LDS and code size per kernel")
    s.add_argument("packs", nargs="+", help="packaged pack folders")
    s.set_defaults(fn=cmd_census)
    s = sub.add_parser("abi", help="write (or --check) templates/ingot_abi.h, the arch and family constants "
                       "C and device code share with the generator")
    s.add_argument("--check", action="store_true", help="write nothing; exit 1 when the header is not current")
    s.add_argument("--out", default=None, help="the header to write or check (default: the template folder's)")
    s.set_defaults(fn=cmd_abi)
    args = p.parse_args(argv)
    try:
        return args.fn(args)
    except ConfigErrors as e:
        for err in e.errors:
            print(f"error: {err}", file=sys.stderr)
        print(f"ingot: {len(e.errors)} error(s); nothing was written", file=sys.stderr)
        return EXIT_CONFIG
    except RenderFailed as e:
        print(f"error: {e}", file=sys.stderr)
        print("ingot: nothing was written", file=sys.stderr)
        return EXIT_RENDER
    except OutputError as e:  # WriteFailed too: it names the packs already swapped in
        print(f"error: {printable(str(e))}", file=sys.stderr)
        done = getattr(e, "done", None)
        print(f"ingot: pack(s) {', '.join(done)} were written, the others were not" if done
              else "ingot: nothing was written", file=sys.stderr)
        return EXIT_CONFIG
    except Exception as e:  # noqa: BLE001 - whatever is left is the generator's own defect
        print(f"error: internal error in the generator (a defect, please report it): {type(e).__name__}: "
              f"{printable(str(e))[:500]}", file=sys.stderr)
        print("ingot: nothing was written", file=sys.stderr)
        return EXIT_RENDER
