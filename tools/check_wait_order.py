#!/usr/bin/env python3
"""Static check of the packaged NVIDIA code objects: in every kernel, no global
load comes before the grid dependency wait (griddepcontrol.wait, SASS ACQBULK).

A programmatically launched grid starts while the grid before it in the stream
still runs; whatever it reads before the wait may be that grid's old data. The
kernels load what the grid before may write (the lengths, q, the partials) with
coherent loads after the wait, but ptxas schedules the final code, and it may
move a read-only (.nc) load above the wait. This reads the SASS to see where the
loads ended up. Needs cuobjdump (the CUDA toolkit; on the GPU machine).

It also reports, without failing, the ring kernels whose q loads ptxas placed
after their first chunk copy: in a kernel with cp.async copies (LDGSTS), a
16-byte register load (LDG.E.128: q's; the length's is 4 bytes, and a ring's K
and V go through the copies) issued after the first copy waits for the length
first, which costs a second round trip before the first chunk
(docs/decisions/0026-sm90-q-copies.md; the seed regression of issues 22/23).

Usage: python3 tools/check_wait_order.py PACKDIR   (exit 0: every kernel in order)
"""

import glob
import os
import re
import shutil
import subprocess
import sys

GLOBAL_LOAD = re.compile(r"\b(LDG|LD)(\.[A-Z0-9_:]+)*\b")
WAIT = "ACQBULK"


def cuobjdump():
    for c in (shutil.which("cuobjdump"), "/usr/local/cuda/bin/cuobjdump"):
        if c and os.path.exists(c):
            return c
    return None


COPY = "LDGSTS"
WIDE_LOAD = re.compile(r"LDG(\.[A-Z0-9_:]+)*\.128(\.[A-Z0-9_:]+)*")


def functions(text, predicate=False):
    """{function: [instruction, ...]} of one cubin's SASS, each instruction its
    opcode and operands as words, without the predicate (with it as the first
    word where `predicate`: tools/sass_diff.py compares whole instructions)."""
    out, code = {}, None
    for line in text.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            code = out.setdefault(m.group(1), [])
            continue
        # "        /*0120*/   @!P0 LDG.E.CONSTANT R2, desc[UR8][R2.64] ;   /* 0x... */"
        words = line[line.find("*/") + 2:].split(";")[0].split() if "*/" in line else []
        if words and words[0].startswith("@") and not predicate:
            words = words[1:]  # the predicate
        if code is not None and words:
            code.append(words)
    return out


def check_sass(text):
    """{function: problem or None} for one cubin's SASS."""
    out = {}
    for name, code in functions(text).items():
        out[name] = "no griddepcontrol.wait"
        for words in code:
            if words[0] == WAIT:
                out[name] = None
                break
            if GLOBAL_LOAD.fullmatch(words[0]):
                out[name] = "global load before the wait: " + " ".join(words)
                break
    return out


def q_order(text):
    """{function: note or None} for one cubin's SASS: in a function with cp.async
    copies, a 16-byte register load after its first copy (q's loads behind the
    length's round trip); None where there is none, or no copy at all."""
    out = {}
    for name, code in functions(text).items():
        out[name], copied = None, False
        for words in code:
            if words[0] == COPY or words[0].startswith(COPY + "."):
                copied = True
            elif copied and WIDE_LOAD.fullmatch(words[0]):
                out[name] = "16-byte register load after the first chunk copy: " + " ".join(words)
                break
    return out


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    tool = cuobjdump()
    if tool is None:
        print("check_wait_order: cuobjdump not found (CUDA toolkit); nothing checked", file=sys.stderr)
        return 77
    cubins = sorted(glob.glob(os.path.join(sys.argv[1], "code", "sm_*", "*.cubin")))
    if not cubins:
        print(f"check_wait_order: no NVIDIA code objects under {sys.argv[1]}/code", file=sys.stderr)
        return 2
    bad = funcs = late_q = 0
    for path in cubins:
        sass = subprocess.run([tool, "-sass", path], check=True, capture_output=True, text=True).stdout
        for fn, problem in check_sass(sass).items():
            funcs += 1
            if problem:
                bad += 1
                print(f"FAIL {os.path.basename(path)} {fn}: {problem}")
        for fn, note in q_order(sass).items():
            if note:
                late_q += 1
                print(f"NOTE {os.path.basename(path)} {fn}: {note}")
    print(f"check_wait_order: {len(cubins)} code objects, {funcs} kernels, {bad} with a load before the wait; "
          f"{late_q} with q's loads after the first chunk copy (reported, not failed)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
