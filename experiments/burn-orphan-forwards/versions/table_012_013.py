import re,sys,collections
def parse(fn):
    d=collections.OrderedDict(); wall={}
    for l in open(fn):
        m=re.match(r'variant=(\w) iter=(\d+) rss=(\d+) live=(-?\d+)',l)
        if m: d.setdefault(m[1],{})[int(m[2])]=(int(m[3]),int(m[4]))
        m=re.match(r'variant=(\w) wall=([\d.]+)s',l)
        if m: wall[m[1]]=m[2]
    return d,wall
def mb(x): return f"{x/1e6:.1f} MB"
for v in sys.argv[1:]:
    try: d,w=parse(f"{v}/raw_3000.txt")
    except FileNotFoundError: d=None
    if d:
        print(f"\n### {v} — 3,000 iterations, sampled every 250\n")
        print("| variant | live @250 | live @1000 | live @2000 | live @3000 | live Δ/iter 1000→3000 | RSS @250 | RSS @3000 | RSS Δ/iter 1000→3000 | wall |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for k,s in d.items():
            print(f"| {k} | {s[250][1]} | {s[1000][1]} | {s[2000][1]} | {s[3000][1]} | {(s[3000][1]-s[1000][1])/2000:.1f} B | {mb(s[250][0])} | {mb(s[3000][0])} | {(s[3000][0]-s[1000][0])/2000:.0f} B | {w.get(k,'?')} s |")
    try: d,w=parse(f"{v}/raw_30000.txt")
    except FileNotFoundError: continue
    print(f"\n{v} — 30,000 iterations, sampled every 2,500:\n")
    print("| variant | live @2500 | live @10000 | live @20000 | live @30000 | live Δ/iter 2500→30000 | RSS @2500 | RSS @30000 | wall |")
    print("|---|---|---|---|---|---|---|---|---|")
    for k,s in d.items():
        if 30000 not in s: continue
        print(f"| {k} | {s[2500][1]} | {s[10000][1]} | {s[20000][1]} | {s[30000][1]} | {(s[30000][1]-s[2500][1])/27500:.1f} B | {mb(s[2500][0])} | {mb(s[30000][0])} | {w.get(k,'?')} s |")
