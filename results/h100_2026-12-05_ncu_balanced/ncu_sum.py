"""Median gpu__time_duration per kernel (skipping the first call's) from an ncu --csv file."""
import csv, sys, statistics, io
text = open(sys.argv[1]).read()
start = text.find('"ID"')
if start < 0:
    print("  no ncu table"); sys.exit(0)
rows = list(csv.DictReader(io.StringIO(text[start:])))
by = {}
for r in rows:
    name = r["Kernel Name"].split("(")[0].replace("attention_decode_bf16_d128_", "")
    by.setdefault(name, {}).setdefault(r["Metric Name"], []).append(float(r["Metric Value"].replace(",", "")))
for name, m in by.items():
    t = m.get("gpu__time_duration.sum", [])
    print(f"  {name}: {statistics.median(t[1:] or t)/1000:.2f} us (n={len(t)}) grid {m.get('launch__grid_size',[0])[0]:.0f} "
          f"warps {statistics.median(m.get('sm__warps_active.avg.pct_of_peak_sustained_active',[0])):.1f}%")
