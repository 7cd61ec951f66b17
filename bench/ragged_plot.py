"""The ragged-batch plot (issue 23): each batch's time against a uniform batch of the same total
tokens, over the spread of its lengths (max / mean), balanced and not, as an SVG written with the
standard library alone (no matplotlib needed on the GPU machine or here).

    python3 bench/ragged_plot.py decode_ragged.md decode_ragged.svg   # from bench/decode.py --ragged's table

bench/decode.py --ragged writes the plot beside its table.
"""

import math
import sys
from xml.sax.saxutils import escape

# The columns of decode_ragged.md (bench/decode.py, run_ragged), in order.
COLUMNS = ("case", "tokens", "spread", "balanced", "uniform", "ratio", "unbalanced", "ratio_unbalanced")
TARGETS = ((1.15, "target 1.15x (every ragged batch)"), (1.25, "1.25x (the skewed ones)"))


def parse_table(text):
    """The rows of a decode_ragged.md table: dicts with COLUMNS (numbers as floats, times in us)."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != len(COLUMNS) or not line.lstrip().startswith("|"):
            continue
        try:
            nums = [float(c.removesuffix("us").removesuffix("x").strip()) for c in cells[1:]]
        except ValueError:
            continue  # the header and the rule
        rows.append(dict(zip(COLUMNS, [cells[0]] + nums)))
    if not rows:
        raise ValueError("no rows of a decode_ragged.md table (| batch | tokens | max / mean length | ... |)")
    return rows


def svg(rows, title="ragged batches against a uniform batch of the same tokens"):
    """The plot as SVG text: x the spread (log 2), y the ratio; balanced points filled, no balance hollow."""
    if not rows:
        raise ValueError("no rows to plot")
    w, h, left, right, top, bottom = 860, 440, 70, 330, 40, 60
    # max / mean is at least 1 (a batch of empty sequences has none: bench/decode.py writes 0); such a
    # point sits at 1.
    x_lo = 1.0
    x_hi = 2.0 ** math.ceil(math.log2(max(2.0, max(r["spread"] for r in rows))))
    y_hi = max(1.5, max(max(r["ratio"], r["ratio_unbalanced"]) for r in rows) * 1.08)
    y_lo = min(0.5, min(min(r["ratio"], r["ratio_unbalanced"]) for r in rows) * 0.9)

    def px(spread):
        spread = max(spread, x_lo)
        return left + (math.log2(spread) - math.log2(x_lo)) / (math.log2(x_hi) - math.log2(x_lo)) * (w - left - right)

    def py(ratio):
        return top + (y_hi - ratio) / (y_hi - y_lo) * (h - top - bottom)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" '
           f'font-size="12">', f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2 - right / 2:.0f}" y="22" text-anchor="middle" font-size="14">{escape(title)}</text>']
    x0, x1, y0, y1 = left, w - right, top, h - bottom
    out.append(f'<rect x="{x0}" y="{y0}" width="{x1 - x0}" height="{y1 - y0}" fill="none" stroke="black"/>')
    s = x_lo
    while s <= x_hi:
        out.append(f'<line x1="{px(s):.1f}" y1="{y1}" x2="{px(s):.1f}" y2="{y1 + 5}" stroke="black"/>'
                   f'<text x="{px(s):.1f}" y="{y1 + 18}" text-anchor="middle">{s:g}</text>')
        s *= 2
    step = 0.5 if y_hi - y_lo > 2 else 0.25
    t = math.ceil(y_lo / step) * step
    while t <= y_hi:
        out.append(f'<line x1="{x0 - 5}" y1="{py(t):.1f}" x2="{x0}" y2="{py(t):.1f}" stroke="black"/>'
                   f'<text x="{x0 - 8}" y="{py(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
        t += step
    out.append(f'<text x="{(x0 + x1) / 2:.0f}" y="{h - 18}" text-anchor="middle">spread of the lengths '
               f'(max / mean, log scale)</text>')
    out.append(f'<text x="18" y="{(y0 + y1) / 2:.0f}" text-anchor="middle" transform="rotate(-90 18 '
               f'{(y0 + y1) / 2:.0f})">time / uniform batch of the same tokens</text>')
    out.append(f'<line x1="{x0}" y1="{py(1.0):.1f}" x2="{x1}" y2="{py(1.0):.1f}" stroke="gray"/>')
    for k, (value, label) in enumerate(TARGETS):  # the lower line's label below it, the upper's above
        ty = py(value) + (12 if k == 0 else -4)
        out.append(f'<line x1="{x0}" y1="{py(value):.1f}" x2="{x1}" y2="{py(value):.1f}" stroke="gray" '
                   f'stroke-dasharray="5,4"/><text x="{x0 + 4}" y="{ty:.1f}" fill="gray" '
                   f'font-size="10">{escape(label)}</text>')
    for i, r in enumerate(rows):
        x, yb, yu = px(r["spread"]), py(r["ratio"]), py(r["ratio_unbalanced"])
        out.append(f'<line x1="{x:.1f}" y1="{yb:.1f}" x2="{x:.1f}" y2="{yu:.1f}" stroke="#bbbbbb"/>')
        out.append(f'<rect class="unbalanced" x="{x - 4:.1f}" y="{yu - 4:.1f}" width="8" height="8" fill="white" '
                   f'stroke="#c0392b" stroke-width="1.5"/>')
        out.append(f'<circle class="balanced" cx="{x:.1f}" cy="{yb:.1f}" r="4.5" fill="#1f6fb4"/>')
        out.append(f'<text x="{x + 7:.1f}" y="{yb + 4:.1f}" font-size="10">{i + 1}</text>')
        out.append(f'<text x="{x1 + 12}" y="{y0 + 60 + 16 * i}" font-size="11">{i + 1}: {escape(r["case"])} '
                   f'({r["ratio"]:.2f}x / {r["ratio_unbalanced"]:.2f}x)</text>')
    out.append(f'<circle cx="{x1 + 18}" cy="{y0 + 8}" r="4.5" fill="#1f6fb4"/><text x="{x1 + 28}" y="{y0 + 12}">'
               f'balanced (INGOT_BALANCE=1)</text>')
    out.append(f'<rect x="{x1 + 14}" y="{y0 + 24}" width="8" height="8" fill="white" stroke="#c0392b" '
               f'stroke-width="1.5"/><text x="{x1 + 28}" y="{y0 + 32}">uniform segments (default)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-3].strip(), file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            rows = parse_table(f.read())
        with open(argv[2], "w") as f:
            f.write(svg(rows))
    except (OSError, ValueError) as e:
        print(f"ragged_plot: {e}", file=sys.stderr)
        return 2
    print(f"ragged_plot: {len(rows)} batches -> {argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
