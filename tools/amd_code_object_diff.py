#!/usr/bin/python3
"""Does the code object version change the ISA? Builds every AMD kernel of a
generated pack twice, with the arch table's flags (code object v5) and with
clang-22's default v6, and compares `llvm-objdump-22 -d --mcpu=<arch>` of the
two with the addresses stripped (instruction words and their encodings stay).

    tools/amd_code_object_diff.py [generated/attention_decode] [-j 2]

Prints one line per kernel that differs (and the first differing lines), then
the counts; exit 0 when every kernel's ISA is identical, 1 otherwise."""

import argparse
import concurrent.futures
import difflib
import glob
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "generator"))

from ingot.archs import ARCHS  # noqa: E402

CLANG, OBJDUMP = "clang-22", "llvm-objdump-22"
_HEADER = re.compile(r"^[0-9a-f]+ (<[^>]+>:)$")
_ADDRESS = re.compile(r"//\s*[0-9A-F]+:\s*")


def isa(obj, arch):
    """The disassembly without the file name and addresses."""
    out = subprocess.run([OBJDUMP, "-d", f"--mcpu={arch}", obj], check=True, capture_output=True, text=True).stdout
    lines = []
    for line in out.splitlines():
        if obj in line:
            continue  # "<path>: file format elf64-amdgpu"
        m = _HEADER.match(line)
        lines.append(m.group(1) if m else _ADDRESS.sub("// ", line.rstrip()))
    return lines


def build(src, arch, version, tmp):
    flags = [f for f in ARCHS[arch].flags if not f.startswith("-mcode-object-version=")]
    obj = os.path.join(tmp, f"{os.path.basename(src)}.v{version}.co")
    subprocess.run([CLANG, *flags, f"-mcode-object-version={version}", "-I", os.path.join(REPO, "templates"),
                    "-o", obj, src], check=True, capture_output=True, text=True)
    with open(obj, "rb") as f:
        abi = f.read(9)[8]
    return obj, abi


def compare(src, arch):
    with tempfile.TemporaryDirectory() as tmp:
        v5, abi5 = build(src, arch, 5, tmp)
        v6, abi6 = build(src, arch, 6, tmp)
        a, b = isa(v5, arch), isa(v6, arch)
    diff = list(difflib.unified_diff(a, b, "v5", "v6", n=0, lineterm=""))
    return src, arch, (abi5, abi6), len(a), diff


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("generated", nargs="?", default=os.path.join(REPO, "generated", "attention_decode"))
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    jobs = [(src, arch) for arch in sorted(a for a in ARCHS if ARCHS[a].vendor == "amd")
            for src in sorted(glob.glob(os.path.join(args.generated, "kernels", arch, "*.hip")))]
    if not jobs:
        print(f"{args.generated}: no AMD kernel sources", file=sys.stderr)
        return 2
    same = differ = 0
    lines = 0
    headers = set()
    with concurrent.futures.ThreadPoolExecutor(args.j) as pool:
        for src, arch, abis, n, diff in pool.map(lambda j: compare(*j), jobs):
            headers.add(abis)
            lines += n
            if diff:
                differ += 1
                print(f"{arch} {os.path.basename(src)}: {len(diff)} diff lines")
                print("\n".join("  " + d for d in diff[:12]))
            else:
                same += 1
    print(f"{len(jobs)} AMD kernels ({lines} disassembly lines): {same} identical, {differ} differ; "
          f"EI_ABIVERSION (v5, v6 build): {', '.join(str(h) for h in sorted(headers))}")
    return 0 if differ == 0 and headers == {(3, 4)} else 1


if __name__ == "__main__":
    sys.exit(main())
