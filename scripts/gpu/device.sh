#!/usr/bin/env bash
# Runs on the GPU machine from the repository root, with gpu-bin/ carried over (see build.sh).
# Logs and JSON reports go to $OUT (or ./gpu-out).
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
NV=$(python3 -c 'import nvidia;print(nvidia.__path__[0])' 2>/dev/null || true)
if [ -n "$NV" ]; then
  export LD_LIBRARY_PATH="$NV/cu13/lib:${LD_LIBRARY_PATH:-}"
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
export MEMLINT_REPORT_DIR="$PWD/target/memlint"
./gpu-bin/gpu_train "${1:-80}" > "$OUT/gpu_train.stdout" 2> "$OUT/gpu_train.stderr"
echo "exit status: $?" | tee -a "$OUT/gpu_train.stdout"
cp target/memlint/*.json "$OUT/" 2>/dev/null || true
cat "$OUT/gpu_train.stdout"
echo "---- stderr ----"
cat "$OUT/gpu_train.stderr"
# The host benchmarks, when their binaries were carried too (quiet 16-core machine).
for b in allocator guard_overhead; do
  if [ -x "./gpu-bin/bench_$b" ]; then
    echo "---- bench $b ----"
    (cd gpu-bin && "./bench_$b" 7 100) 2>&1 | tee "$OUT/bench_$b.txt"
  fi
done
