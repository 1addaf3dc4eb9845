"""Runs ra-types over the tuning half's labelled findings (issue 11's rust-analyzer question).

From the repository root, after `cargo build --release` in experiments/ra-types:

    python3 experiments/ra-types/drive.py owner/name ...

Each repository (tuning half only: a test-half name is refused) is cloned from the local mirror
(/work/.mirror) or GitHub into $RA_CHECKOUTS (default /tmp/ra-co) at its pinned commit, its
dependencies fetched (`cargo fetch`), then ra-types loads it and prints the types at every
`[[finding]]` label's line; wall time and peak RSS come from /usr/bin/time, and memlint's own
time on the same checkout is taken for comparison. One JSON line per repository is appended to
$RA_RESULTS (default experiments/ra-types/results.jsonl).
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'eval'))
import run  # noqa: E402

# Some repositories pin a toolchain this machine does not have; rust-analyzer only needs
# `cargo metadata` and the standard library's sources.
os.environ['RUSTUP_TOOLCHAIN'] = 'stable'
RA = os.environ.get('RA_TYPES', str(ROOT / 'experiments/ra-types/target/release/ra-types'))
MEMLINT = os.environ.get('MEMLINT', str(ROOT / 'target/release/cargo-memlint'))
CHECKOUTS = Path(os.environ.get('RA_CHECKOUTS', '/tmp/ra-co'))
RESULTS = Path(os.environ.get('RA_RESULTS', str(ROOT / 'experiments/ra-types/results.jsonl')))

tune = {r.name: r for r in run.load_corpus(ROOT / 'eval/corpus') if r.half == 'tune' and not r.excluded}
for name in sys.argv[1:]:
    if name not in tune:
        sys.exit(f'{name}: not a tuning-half repository of eval/corpus')
    r = tune[name]
    leaks, judged, _ = run.load_labels(ROOT / 'eval/labels', r)
    co = CHECKOUTS / name.replace('/', '__')
    mirror = Path('/work/.mirror') / name.replace('/', '+') / 'repo'
    if not co.exists():
        src = str(mirror) if mirror.exists() else f'https://github.com/{name}.git'
        subprocess.run(['git', 'clone', '-q', '--no-checkout', src, str(co)], check=True)
    subprocess.run(['git', '-C', str(co), 'checkout', '-q', '-f', r.commit], check=True)
    t = time.time()
    fetch = subprocess.run(['cargo', 'fetch'], cwd=co, capture_output=True, text=True, timeout=900)
    fetch_s = time.time() - t
    positions = [f'{j.file}:{j.line}' for j in judged]
    labels = {f'{j.file}:{j.line}': (j.rule, j.label, j.reason) for j in judged}
    t = time.time()
    p = subprocess.run(['/usr/bin/time', '-v', RA, str(co), *positions], capture_output=True, text=True, timeout=1200)
    wall = time.time() - t
    rss = next((int(line.split()[-1]) for line in p.stderr.splitlines() if 'Maximum resident' in line), None)
    t = time.time()
    subprocess.run([MEMLINT, 'memlint', '--message-format', 'json', '-W', 'warnings', *r.paths],
                   cwd=co, capture_output=True, text=True, timeout=600)
    memlint_s = time.time() - t
    rec = dict(repo=name, framework=r.framework, fetch_rc=fetch.returncode, fetch_s=round(fetch_s, 1),
               fetch_err=fetch.stderr[-300:] if fetch.returncode else '', ra_rc=p.returncode,
               ra_wall=round(wall, 1), ra_rss_kb=rss, memlint_s=round(memlint_s, 2),
               lines=p.stdout.splitlines(), labels=labels)
    with RESULTS.open('a') as out:
        out.write(json.dumps(rec) + '\n')
    print(name, r.framework, 'fetch', fetch.returncode, 'ra', p.returncode, round(wall, 1), 's', rss, 'KB;',
          'memlint', round(memlint_s, 2), 's', flush=True)
