import csv,sys,re,collections
for p in sys.argv[1:]:
    rows=list(csv.reader(open(p)))
    hdr=rows[1]; ix={h:i for i,h in enumerate(hdr)}
    ops=collections.Counter(); st=collections.Counter(); tot=0; stot=0
    for r in rows[2:]:
        if len(r)<len(hdr)-1: continue
        try: n=int(r[ix["Instructions Executed"]] or 0); s=int(r[ix["Warp Stall Sampling (All Samples)"]] or 0)
        except ValueError: continue
        src=r[1].strip()
        m=re.match(r'(@!?U?P\w+\s+)?([A-Z0-9_]+(\.[A-Z0-9_]+)*)',src)
        op=m.group(2).split('.')[0] if m else src[:10]
        if op in('HMMA','LDS','LDSM','MUFU','BAR','LDGSTS','SHFL'): op=m.group(2)[:24]
        ops[op]+=n; tot+=n; st[op]+=s; stot+=s
    print(f"== {p}: {tot} warp instrs, {stot} samples")
    for op,n in ops.most_common(28): print(f"  {op:26s} {n:>10d} {100*n/tot:5.1f}%  stall {100*st[op]/max(stot,1):5.1f}%")
