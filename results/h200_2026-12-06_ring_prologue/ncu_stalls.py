"""Summary of an Nsight Compute source page (`ncu -i REP --page source --csv --print-source sass`):
warp-stall samples by reason, for the whole kernel and per region of the code (the hot loop, the
code before and after it), and the executed code's footprint. Experiment script, not shipped.

    python3 ncu_stalls.py KERNEL.source.csv [...]
"""
import csv
import sys


def load(path):
    rows = list(csv.reader(open(path)))
    hdr, data = rows[1], rows[2:]
    ix = {h: i for i, h in enumerate(hdr)}
    out = []
    for r in data:
        if len(r) < len(hdr) - 1:
            continue
        try:
            samples = int(r[ix["Warp Stall Sampling (All Samples)"]])
        except ValueError:
            continue
        stalls = {h[6:]: int(r[i]) for h, i in ix.items()
                  if h.startswith("stall_") and "Not Issued" not in h and r[i].isdigit()}
        out.append((int(r[0], 16), r[1].strip(), samples, int(r[ix["Instructions Executed"]] or 0), stalls))
    return out


def summary(name, instrs):
    agg = {}
    for x in instrs:
        for k, v in x[4].items():
            agg[k] = agg.get(k, 0) + v
    top = sorted(((v, k) for k, v in agg.items() if v), reverse=True)[:6]
    return f"{name}: {sum(x[2] for x in instrs)} samples; " + ", ".join(f"{k} {v}" for v, k in top)


for path in sys.argv[1:]:
    d = load(path)
    base = d[0][0]
    most = max(x[3] for x in d)
    loop = [i for i, x in enumerate(d) if x[3] == most]  # the hot loop: the most-executed instructions
    a, b = loop[0], loop[-1]
    executed = [x for x in d if x[3] > 0]
    print(f"{path}: {len(d)} instructions ({len(d) * 16} bytes), {len(executed)} executed "
          f"({len(set(x[0] // 128 for x in executed)) * 128} bytes of 128-byte lines)")
    print("  " + summary("kernel", d))
    print("  " + summary(f"before the loop [0x0, {d[a][0] - base:#x})", d[:a]))
    print("  " + summary(f"loop [{d[a][0] - base:#x}, {d[b][0] - base + 16:#x}]", d[a:b + 1]))
    print("  " + summary("after the loop", d[b + 1:]))
