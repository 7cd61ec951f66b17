"""Issue 5's targets, judged on bench/decode.py's rows, so that the benchmark's
one command also says which hold. Pure Python (no torch, no GPU): tested on the
build machine by tests/bench/test_targets.py.

A row is a dict with B, Hq, Hkv, L, ingot_graph (us), ingot_bw (fraction of the
copy ceiling), floor_graph (us) and best_peer (us; NaN when no peer ran);
optionally speedup_lo and speedup_hi, the best-peer / ingot ratio's range over
the run's rounds, shown beside the median ratio the judgement uses; and
optionally the bare read's times from bench/read_floor (attach_bounds): read_us,
the fastest read of the row's K and V bytes with no math, read_len_us, the
register-load read behind a length load, and empty_us, that grid at length 0.
With them, each target is shown beside what the bare read leaves for it."""

import math
import subprocess

SEED_HEADS = (8, 2)
BANDWIDTH = ((65536, 0.85), (262144, 0.90), (1048576, 0.90), (16384, 0.60))
FLOOR_RATIO, FLOOR_MAX_L = 1.3, 4096
BATCHED = ((16, 32, 8, 8192), (64, 32, 8, 8192))
BATCHED_BW = 0.90


def parse_read_floor(text):
    """{token rows: {'loads', 'loads_len', 'empty', 'bulk'} in us} from bench/read_floor's
    bounds table (its default mode): | L | MB | loads | GB/s | shape | + length | empty | bulk | GB/s |."""
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 9 or not cells[0].isdigit():
            continue
        try:
            us = [float(cells[i].split()[0]) for i in (2, 5, 6, 7)]
        except (ValueError, IndexError):
            continue
        out[int(cells[0])] = dict(zip(("loads", "loads_len", "empty", "bulk"), us))
    return out


def attach_bounds(rows, by_heads):
    """Sets read_us, read_len_us and empty_us on each row from {Hkv: parse_read_floor(...)}:
    B sequences of L tokens are B x L token rows of a contiguous cache. NaN where not measured."""
    nan = float("nan")
    for r in rows:
        b = by_heads.get(r["Hkv"], {}).get(r["B"] * r["L"])
        r["read_us"] = min(b["loads"], b["bulk"]) if b else nan
        r["read_len_us"] = b["loads_len"] if b else nan
        r["empty_us"] = b["empty"] if b else nan


def run_read_floor(path, rows, timeout=900):
    """Runs bench/read_floor (at path) on each row's byte count, B x L token rows of Hkv
    heads, one run per Hkv, and attaches its times to the rows (attach_bounds). Returns
    its tables as text, or '' when it could not run (the reason printed)."""
    by_heads, text = {}, ""
    for hkv in sorted({r["Hkv"] for r in rows}):
        tokens = sorted({r["B"] * r["L"] for r in rows if r["Hkv"] == hkv})
        tokens = [t for t in tokens if t % 64 == 0 and 64 <= t <= 1 << 22]
        if not tokens or hkv & (hkv - 1) or hkv > 16:
            continue  # read_floor's limits: such rows keep NaN bounds
        cmd = [path, "--heads", str(hkv), "--tokens", ",".join(map(str, tokens))]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as e:
            print(f"read_floor: {' '.join(cmd)} did not run ({e}); the targets are judged without it", flush=True)
            return ""
        if done.returncode != 0:
            print(f"read_floor: {' '.join(cmd)} failed with {done.returncode}: {done.stderr.strip()}; the "
                  "targets are judged without it", flush=True)
            return ""
        by_heads[hkv] = parse_read_floor(done.stdout)
        text += f"Hkv {hkv}: read_floor {' '.join(cmd[1:])}\n\n{done.stdout}\n"
    attach_bounds(rows, by_heads)
    return text


def _known(x):
    """A number that is not NaN (None, a missing key's default, is not)."""
    return isinstance(x, (int, float)) and not math.isnan(x)


def _bound_bw(r, frac):
    """What a bandwidth target leaves beyond the bare read."""
    if not _known(r.get("read_us")):
        return ""
    need = r["ingot_graph"] * r["ingot_bw"] / frac
    left = need - r["read_us"]
    return (f"bare read {r['read_us']:.2f} us; the target's {need:.2f} us leaves {left:.2f} us beyond it"
            if left >= 0 else f"bare read {r['read_us']:.2f} us: over the target's {need:.2f} us")


def _bound_peer(r):
    peer = r.get("best_peer")
    if not (_known(r.get("read_us")) and _known(peer)):
        return ""
    return f"bare read {r['read_us']:.2f} us; the best peer is {peer / r['read_us'] - 1:+.1%} over it"


def _bound_floor(r):
    if not (_known(r.get("read_len_us")) and _known(r.get("empty_us"))):
        return ""
    adds = r["read_len_us"] - r["empty_us"]
    allows = (FLOOR_RATIO - 1) * r["floor_graph"]
    return (f"the bare read adds {adds:.2f} us to an empty grid; the ratio allows {allows:.2f} us over "
            f"the floor")


def _find(rows, B, hq, hkv, L):
    for r in rows:
        if (r["B"], r["Hq"], r["Hkv"], r["L"]) == (B, hq, hkv, L):
            return r
    return None


def _faster(r):
    """(measured text, met) for 'faster than the best peer'."""
    peer = r.get("best_peer")
    if not _known(peer):
        return "no peer ran", False
    text = f"{peer / r['ingot_graph']:.2f}x"
    lo, hi = r.get("speedup_lo", float("nan")), r.get("speedup_hi", float("nan"))
    if not (math.isnan(lo) or math.isnan(hi)):
        text += f" (rounds {lo:.3f}-{hi:.3f})"
    return text, peer > r["ingot_graph"]


def evaluate(rows):
    """[(target, measured, met, bound)]; a point the run did not measure is 'not measured', not met.
    bound: what the bare read leaves for the target ('' without read_floor's times)."""
    out = []
    seed = [r for r in rows if r["B"] == 1 and (r["Hq"], r["Hkv"]) == SEED_HEADS]
    for L, frac in BANDWIDTH:
        r = _find(rows, 1, *SEED_HEADS, L)
        what = f"B=1 {SEED_HEADS[0]}/{SEED_HEADS[1]}: >= {frac:.0%} of copy bandwidth at L={L}"
        if r is None:
            out.append((what, "not measured", False, ""))
        else:
            out.append((what, f"{r['ingot_bw']:.1%}", r["ingot_bw"] >= frac, _bound_bw(r, frac)))
    for r in sorted((r for r in seed if r["L"] >= 1024), key=lambda r: r["L"]):
        measured, met = _faster(r)
        out.append((f"B=1: faster than the best SDPA backend at L={r['L']}", measured, met, _bound_peer(r)))
    if not any(r["L"] >= 1024 for r in seed):
        out.append(("B=1: faster than the best SDPA backend from L=1K", "not measured", False, ""))
    small = sorted((r for r in seed if r["L"] <= FLOOR_MAX_L), key=lambda r: r["L"])
    for r in small:
        ratio = r["ingot_graph"] / r["floor_graph"] if r["floor_graph"] > 0 else float("inf")
        out.append((f"B=1: within {FLOOR_RATIO}x of the plan's floor at L={r['L']}", f"{ratio:.2f}x",
                    ratio <= FLOOR_RATIO, _bound_floor(r)))
    if not small:
        out.append((f"B=1: within {FLOOR_RATIO}x of the plan's floor at L <= {FLOOR_MAX_L}", "not measured",
                    False, ""))
    for (B, hq, hkv, L) in BATCHED:
        r = _find(rows, B, hq, hkv, L)
        what = f"B={B} {hq}/{hkv} L={L}"
        if r is None:
            out.append((f"{what}: >= {BATCHED_BW:.0%} and faster than the best peer", "not measured", False, ""))
            continue
        out.append((f"{what}: >= {BATCHED_BW:.0%} of copy bandwidth", f"{r['ingot_bw']:.1%}",
                    r["ingot_bw"] >= BATCHED_BW, _bound_bw(r, BATCHED_BW)))
        measured, met = _faster(r)
        out.append((f"{what}: faster than the best SDPA backend", measured, met, _bound_peer(r)))
    return out


def markdown(results):
    """The targets as a table; a column of what the bare read leaves when any row has it."""
    bounds = any(b for _, _, _, b in results)
    if bounds:
        lines = ["| target | measured | met | against the bare read (bench/read_floor) |", "|---|---|---|---|"]
        lines += [f"| {t} | {m} | {'yes' if ok else 'no'} | {b} |" for t, m, ok, b in results]
    else:
        lines = ["| target | measured | met |", "|---|---|---|"]
        lines += [f"| {t} | {m} | {'yes' if ok else 'no'} |" for t, m, ok, _ in results]
    met = sum(1 for _, _, ok, _ in results if ok)
    lines.append("")
    lines.append(f"{met} of {len(results)} targets met.")
    return "\n".join(lines) + "\n"
