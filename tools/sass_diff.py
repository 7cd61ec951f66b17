#!/usr/bin/python3
"""Which entry points did a change touch? Disassembles every code object of two
builds of a pack (cuobjdump -sass for sm_*, llvm-objdump-22 -d for gfx*), with
addresses stripped, and compares them function by function: the SASS parsed as
tools/check_wait_order.py parses it (predicates kept), the AMD ISA as
tools/amd_code_object_diff.py prints it.

    tools/sass_diff.py OLD_PACK NEW_PACK [--arch sm_90] [-v]

OLD_PACK, NEW_PACK: pack folders (e.g. build/packs/attention_decode). Prints per
arch the entry points with identical code and the changed ones by entry kind
(split, merge, balanced_split, balanced_merge), each changed one with -v. cuobjdump
comes with CUDA (the GPU machine has it; this one may not). Exit 0, or 2 when
an arch's tool is missing or a pack has no code for it."""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from amd_code_object_diff import OBJDUMP, isa  # noqa: E402
from check_wait_order import cuobjdump, functions  # noqa: E402

ENTRIES = ("balanced_split", "balanced_merge", "split", "merge")


def entry_kind(name):
    return next((e for e in ENTRIES if name.endswith("_" + e)), "other")


def sm_functions(path, tool):
    out = subprocess.run([tool, "-sass", path], capture_output=True, text=True, check=True).stdout
    return {name: [" ".join(words) for words in code] for name, code in functions(out, predicate=True).items()}


def amd_functions(path, arch):
    funcs, code = {}, None
    for line in isa(path, arch):  # a function starts at its "<name>:" line
        m = re.fullmatch(r"<(.+)>:", line)
        if m:
            code = funcs.setdefault(m.group(1), [])
        elif code is not None and line.strip():
            code.append(line)
    return funcs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--arch", action="append", help="an arch of the packs (default: every one both have)")
    ap.add_argument("-v", action="store_true", help="name every changed entry point")
    args = ap.parse_args()
    archs = args.arch or sorted(set(os.listdir(os.path.join(args.old, "code"))) &
                                set(os.listdir(os.path.join(args.new, "code"))))
    status = 0
    for arch in archs:
        sm = arch.startswith("sm_")
        tool = cuobjdump() if sm else shutil.which(OBJDUMP)
        olds = sorted(glob.glob(os.path.join(args.old, "code", arch, "*")))
        if tool is None or not olds:
            print(f"{arch}: {'no ' + ('cuobjdump' if sm else OBJDUMP) if olds else 'no code objects in ' + args.old}")
            status = 2
            continue
        same, changed = 0, {}
        for old in olds:
            new = os.path.join(args.new, "code", arch, os.path.basename(old))
            if not os.path.exists(new):
                changed.setdefault("object missing in the new pack", []).append(os.path.basename(old))
                continue
            a, b = (sm_functions(old, tool), sm_functions(new, tool)) if sm else \
                (amd_functions(old, arch), amd_functions(new, arch))
            for f in sorted(set(a) | set(b)):
                if a.get(f) == b.get(f):
                    same += 1
                else:
                    changed.setdefault(entry_kind(f), []).append(f)
        total = sum(len(v) for v in changed.values())
        print(f"{arch} entry points: {same} with identical code, {total} changed")
        for kind, names in sorted(changed.items()):
            print(f"  changed {kind}: {len(names)}")
            if args.v:
                for n in names:
                    print(f"    {n}")
    return status


if __name__ == "__main__":
    sys.exit(main())
