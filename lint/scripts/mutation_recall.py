# Recall on real training loops: for each file that runs backward inside a loop, insert a push
# of the loss into a Vec declared at the top of the function (retained_graph_output must fire
# on that line); for tch/dfdx files, delete each zero_grad line (missing_zero_grad must fire
# where an optimizer step remains). Usage:
#   MEMLINT=target/release/cargo-memlint python3 lint/scripts/mutation_recall.py FILES.txt
# where FILES.txt lists .rs files (e.g. the examples of candle, tch-rs, burn and dfdx).
import re, sys, os, subprocess, shutil, json
B = os.environ.get("MEMLINT", "target/release/cargo-memlint")
files = [l.strip() for l in open(sys.argv[1]) if l.strip()]
out = os.environ.get("MUTATION_DIR", "/tmp/memlint-mutations")
stats = {"push": [0, 0], "zero_grad": [0, 0]}
misses = []
def run(path):
    r = subprocess.run([B, "--message-format", "short", path], capture_output=True, text=True)
    return r.stdout
for f in files:
    src = open(f).read().split("\n")
    fw = "tch" if "tch-rs" in f else "dfdx" if "dfdx" in f else "burn" if "burn" in f else "candle"
    # M1: keep each loss past its iteration.
    for i, line in enumerate(src):
        m = re.search(r"backward_step\(&(\w+)\)", line) or re.search(r"\b(\w+)\.backward\(\)", line)
        if not m or line.strip().startswith("//"):
            continue
        loss = m.group(1)
        # enclosing fn
        j = i
        while j >= 0 and not re.match(r"\s*(pub(\(\w+\))? )?(async )?fn ", src[j]):
            j -= 1
        if j < 0:
            continue
        if not any(re.match(r"\s*(for |while |loop\b|'\w+: )", l) or re.search(r"\bfor \w.* in .*\{\s*$", l) for l in src[j:i]):
            continue
        k = j
        while k < i and not src[k].rstrip().endswith("{"):
            k += 1
        if k >= i:
            continue
        # end of statement containing the backward call
        e = i
        while e < len(src) and not src[e].rstrip().endswith(";"):
            e += 1
        mutated = src[:k+1] + ["    let mut leak_probe = Vec::new();"] + src[k+1:e+1] + [f"        leak_probe.push({loss}.clone());"] + src[e+1:]
        dst = os.path.join(out, f.replace("/", "_"))
        os.makedirs(out, exist_ok=True)
        open(dst, "w").write("\n".join(mutated))
        res = run(dst)
        stats["push"][1] += 1
        want_line = e + 3  # 1-based line of the inserted push
        if f"{dst}:{want_line}:" in res and "retained_graph_output" in res:
            stats["push"][0] += 1
        else:
            misses.append(("push", f, i + 1, loss, res.strip().split("\n")[-1]))
    # M2: remove gradient clearing (tch/dfdx only).
    if fw in ("tch", "dfdx"):
        idx = [i for i, l in enumerate(src) if re.search(r"\.zero_grads?\(", l) and not l.strip().startswith("//")]
        for i in idx:
            mutated = src[:i] + ["// removed"] + src[i+1:]
            dst = os.path.join(out, "zg_" + f.replace("/", "_"))
            open(dst, "w").write("\n".join(mutated))
            res = run(dst)
            stats["zero_grad"][1] += 1
            if "missing_zero_grad" in res:
                stats["zero_grad"][0] += 1
            else:
                misses.append(("zero_grad", f, i + 1, "", ""))
print(json.dumps(stats))
for m in misses:
    print(m)
