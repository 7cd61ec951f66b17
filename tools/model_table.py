#!/usr/bin/python3
"""The models table of docs/attention_decode.md: which kernel each well-known
model's decode shape gets on each arch, from `ingot-inspect match` on host
contexts (bf16 and fp16, B = 8, capacity 8192, one query token, contiguous and
paged 16), or the first line of its decline report.

usage: tools/model_table.py --inspect build/bin/ingot-inspect --pack build/packs/attention_decode
                            [--update docs/attention_decode.md]

Without --update it prints the table; with it, the text between the
`<!-- models:begin -->` and `<!-- models:end -->` lines of that file is
replaced (nothing else is touched). Exit 0, or 2 with the reason (an
ingot-inspect that fails otherwise than by declining, a missing marker)."""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ARCHS = ("sm_90", "gfx942", "gfx950")
BATCH, CAPACITY, PAGE = 8, 8192, 16
BEGIN, END = "<!-- models:begin -->", "<!-- models:end -->"

# (model, Hq, Hkv, head dim): the attention of one decode step (per tensor-parallel
# shard where named).
MODELS = (
    ("Llama-2-7B", 32, 32, 128),
    ("Llama-2-13B", 40, 40, 128),
    ("Llama-3-8B, Llama-3.1-8B", 32, 8, 128),
    ("Llama-3-70B, TP8 shard", 8, 1, 128),
    ("Llama-3-70B, TP4 shard", 16, 2, 128),
    ("Llama-3.1-405B, TP8 shard", 16, 1, 128),
    ("Mistral-7B", 32, 8, 128),
    ("Mixtral-8x7B", 32, 8, 128),
    ("Qwen2.5-7B, Qwen2-7B", 28, 4, 128),
    ("Qwen2.5-14B", 40, 8, 128),
    ("Qwen2.5-1.5B", 12, 2, 128),
    ("Qwen2-0.5B", 14, 2, 64),
    ("Qwen2.5-72B, TP8 shard", 8, 1, 128),
    ("Yi-34B", 56, 8, 128),
    ("Gemma-2-9B", 16, 8, 256),
    ("Gemma-2B", 8, 1, 256),
    ("Gemma-7B", 16, 16, 256),
    ("Falcon-7B", 71, 1, 64),
    ("StarCoder, StarCoder2-15B", 48, 1, 128),
    ("Phi-2", 32, 32, 80),
    ("Phi-3-mini", 32, 32, 96),
    ("DeepSeek-LLM-7B", 32, 32, 128),
    ("DeepSeek-LLM-67B", 64, 8, 128),
    ("DeepSeek-V2 MLA, absorbed (512 + 64)", 128, 1, 576),
)


def graph(dtype, hq, hkv, d, paged):
    """The graph JSON of one model shape."""
    g = {"q": {"dtype": dtype, "dims": [BATCH, hq, 1, d]},
         "seq_lens": {"dtype": "int32", "dims": [BATCH]}, "capacity": CAPACITY}
    if paged:
        pages = CAPACITY // PAGE
        g["k"] = g["v"] = {"dtype": dtype, "dims": [BATCH * pages, PAGE, hkv, d]}
        g["page_table"] = {"dtype": "int32", "dims": [BATCH, pages]}
        g["kv_layout"] = "paged"
    else:
        g["k"] = g["v"] = {"dtype": dtype, "dims": [BATCH, CAPACITY, hkv, d]}
    return g


def match(inspect, pack, path, arch):
    """('kernel', name) or ('declines', first line of the report)."""
    r = subprocess.run([inspect, "match", path, pack, "--arch", arch], capture_output=True, text=True,
                       timeout=60)
    lines = r.stdout.splitlines()
    if r.returncode == 0:
        return "kernel", next(l.split(": ", 1)[1] for l in lines if l.startswith("kernel: "))
    if r.returncode == 1 and "no match; declines:" in lines:
        return "declines", lines[lines.index("no match; declines:") + 1]
    raise SystemExit(f"model_table: {inspect} match {path} --arch {arch}: exit {r.returncode}: "
                     f"{(r.stderr or r.stdout).strip()[:300]}")


def short(name, dtype):
    """attention_decode_bf16_d128_g4_sq1_contig_w4t16_tc -> d128_g4_w4t16_tc."""
    parts = name.split("_")
    keep = [p for p in parts[2:] if p not in (dtype, "sq1", "contig", "paged")]
    return "_".join(keep)


def why_declined(line, group):
    """The decline's summary line and the kernel work it waits for (docs/attention_decode.md,
    "What still declines")."""
    work = ""
    if line.startswith("no kernel has head_dim"):
        work = ": head dims past 256 (a token's elements over several waves; MLA is its own family)"
    return f"`{line}`{work}"


def table(inspect, pack):
    rows = ["| model | Hq / Hkv | D | group | " + " | ".join(ARCHS) + " | declined for |",
            "|---|---|---|---|" + "---|" * len(ARCHS) + "---|"]
    with tempfile.TemporaryDirectory(prefix="ingot-models-") as tmp:
        for model, hq, hkv, d in MODELS:
            cells, whys = [], []
            for arch in ARCHS:
                got = {}
                for dtype in ("bf16", "fp16"):
                    for paged in (0, 1):
                        path = os.path.join(tmp, f"{dtype}_{paged}.json")
                        with open(path, "w", encoding="utf-8") as f:
                            json.dump(graph(dtype, hq, hkv, d, paged), f)
                        kind, what = match(inspect, pack, path, arch)
                        got[dtype, paged] = (kind, short(what, dtype) if kind == "kernel" else what)
                # bf16 and fp16 get the same tile (their names differ only in the dtype)
                same_dtype = all(got["bf16", p] == got["fp16", p] for p in (0, 1))
                cell = []
                for dtype in ("bf16",) if same_dtype else ("bf16", "fp16"):
                    (kc, c), (kp, p) = got[dtype, 0], got[dtype, 1]
                    prefix = "" if same_dtype else f"{dtype}: "
                    for kind, what in ((kc, c), (kp, p)):
                        why = kind == "declines" and why_declined(what, hq // hkv if hq % hkv == 0 else 0)
                        if why and why not in whys:
                            whys.append(why)
                    if kc == kp == "declines":
                        text = "declines"
                    elif c == p:
                        text = f"`{c}`"
                    else:
                        text = f"`{c}`, paged `{p}`" if kp == "kernel" else f"`{c}`, paged declines"
                    cell.append(prefix + text)
                cells.append("; ".join(cell))
            group = f"{hq // hkv}" if hq % hkv == 0 else "-"
            rows.append(f"| {model} | {hq} / {hkv} | {d} | {group} | " + " | ".join(cells) + " | "
                        + ("; ".join(whys) or "") + " |")
    return "\n".join(rows) + "\n"


def update(path, text):
    with open(path, encoding="utf-8") as f:
        doc = f.read()
    if doc.count(BEGIN) != 1 or doc.count(END) != 1 or doc.index(BEGIN) > doc.index(END):
        raise SystemExit(f"model_table: {path}: expected one '{BEGIN}' line, then one '{END}' line")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{text}{END}{tail}"
    if new != doc:
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inspect", required=True, help="the ingot-inspect program")
    ap.add_argument("--pack", required=True, help="the packaged attention_decode pack folder")
    ap.add_argument("--update", help="the markdown file whose models block to replace")
    args = ap.parse_args(argv)
    try:
        text = table(args.inspect, args.pack)
    except OSError as e:
        print(f"model_table: {e}", file=sys.stderr)
        return 2
    except SystemExit as e:
        print(e, file=sys.stderr)
        return 2
    if args.update:
        try:
            update(args.update, text)
        except (OSError, SystemExit) as e:
            print(e, file=sys.stderr)
            return 2
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
