import sys, os, re, collections
d = sys.argv[1]; rows = collections.OrderedDict()
for name in sorted(os.listdir(d)):
    if not name.endswith('.log'): continue
    b = name[3:-4].rsplit('_', 1)[0]
    for line in open(os.path.join(d, name)):
        m = re.match(r'(.+?)\s+(\d+) \|\s+([\d.]+)us\s+([\d.]+)us\s+([\d.]+)x \|\s+([\d.]+)us\s+([\d.]+)x', line)
        if m: rows.setdefault(m.group(1).strip(), {}).setdefault(b, []).append((float(m.group(3)), float(m.group(4)), float(m.group(6))))
builds = sorted({b for r in rows.values() for b in r})
print('case | ' + ' | '.join(f'{b} bal (ratio)' for b in builds) + ' | uniform | no balance')
for case, r in rows.items():
    cells = []
    for b in builds:
        v = r.get(b, [])
        if v:
            bal = sorted(x[0] for x in v)[len(v)//2]; uni = sorted(x[1] for x in v)[len(v)//2]
            cells.append(f'{bal:.1f} ({bal/uni:.3f})')
        else: cells.append('-')
    allv = [x for b in builds for x in r.get(b, [])]
    print(case + ' | ' + ' | '.join(cells) + f" | {sorted(x[1] for x in allv)[len(allv)//2]:.1f} | {sorted(x[2] for x in allv)[len(allv)//2]:.1f}")
