"""Issue 5's targets, judged on bench/decode.py's rows, so that the benchmark's
one command also says which hold. Pure Python (no torch, no GPU): tested on the
build machine by tests/bench/test_targets.py.

A row is a dict with B, Hq, Hkv, L, ingot_graph (us), ingot_bw (fraction of the
copy ceiling), floor_graph (us) and best_peer (us; NaN when no peer ran);
optionally speedup_lo and speedup_hi, the best-peer / ingot ratio's range over
the run's rounds, shown beside the median ratio the judgement uses."""

import math

SEED_HEADS = (8, 2)
BANDWIDTH = ((65536, 0.85), (262144, 0.90), (1048576, 0.90), (16384, 0.60))
FLOOR_RATIO, FLOOR_MAX_L = 1.3, 4096
BATCHED = ((16, 32, 8, 8192), (64, 32, 8, 8192))
BATCHED_BW = 0.90


def _find(rows, B, hq, hkv, L):
    for r in rows:
        if (r["B"], r["Hq"], r["Hkv"], r["L"]) == (B, hq, hkv, L):
            return r
    return None


def _faster(r):
    """(measured text, met) for 'faster than the best peer'."""
    peer = r.get("best_peer", float("nan"))
    if not isinstance(peer, (int, float)) or math.isnan(peer):
        return "no peer ran", False
    text = f"{peer / r['ingot_graph']:.2f}x"
    lo, hi = r.get("speedup_lo", float("nan")), r.get("speedup_hi", float("nan"))
    if not (math.isnan(lo) or math.isnan(hi)):
        text += f" (rounds {lo:.3f}-{hi:.3f})"
    return text, peer > r["ingot_graph"]


def evaluate(rows):
    """[(target, measured, met)]; a point the run did not measure is 'not measured', not met."""
    out = []
    seed = [r for r in rows if r["B"] == 1 and (r["Hq"], r["Hkv"]) == SEED_HEADS]
    for L, frac in BANDWIDTH:
        r = _find(rows, 1, *SEED_HEADS, L)
        what = f"B=1 {SEED_HEADS[0]}/{SEED_HEADS[1]}: >= {frac:.0%} of copy bandwidth at L={L}"
        if r is None:
            out.append((what, "not measured", False))
        else:
            out.append((what, f"{r['ingot_bw']:.1%}", r["ingot_bw"] >= frac))
    for r in sorted((r for r in seed if r["L"] >= 1024), key=lambda r: r["L"]):
        measured, met = _faster(r)
        out.append((f"B=1: faster than the best SDPA backend at L={r['L']}", measured, met))
    if not any(r["L"] >= 1024 for r in seed):
        out.append(("B=1: faster than the best SDPA backend from L=1K", "not measured", False))
    small = sorted((r for r in seed if r["L"] <= FLOOR_MAX_L), key=lambda r: r["L"])
    for r in small:
        ratio = r["ingot_graph"] / r["floor_graph"] if r["floor_graph"] > 0 else float("inf")
        out.append((f"B=1: within {FLOOR_RATIO}x of the plan's floor at L={r['L']}", f"{ratio:.2f}x",
                    ratio <= FLOOR_RATIO))
    if not small:
        out.append((f"B=1: within {FLOOR_RATIO}x of the plan's floor at L <= {FLOOR_MAX_L}", "not measured", False))
    for (B, hq, hkv, L) in BATCHED:
        r = _find(rows, B, hq, hkv, L)
        what = f"B={B} {hq}/{hkv} L={L}"
        if r is None:
            out.append((f"{what}: >= {BATCHED_BW:.0%} and faster than the best peer", "not measured", False))
            continue
        out.append((f"{what}: >= {BATCHED_BW:.0%} of copy bandwidth", f"{r['ingot_bw']:.1%}",
                    r["ingot_bw"] >= BATCHED_BW))
        measured, met = _faster(r)
        out.append((f"{what}: faster than the best SDPA backend", measured, met))
    return out


def markdown(results):
    lines = ["| target | measured | met |", "|---|---|---|"]
    lines += [f"| {t} | {m} | {'yes' if ok else 'no'} |" for t, m, ok in results]
    met = sum(1 for _, _, ok in results if ok)
    lines.append("")
    lines.append(f"{met} of {len(results)} targets met.")
    return "\n".join(lines) + "\n"
