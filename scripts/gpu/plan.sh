#!/usr/bin/env bash
# The batch-size planner against real out-of-memory errors, on the GPU machine (issue 14's
# evidence). Build here: `scripts/gpu/build.sh` builds examples/gpu_plan.rs into gpu-bin/ too.
# Run there from the repository root with gpu-bin/ carried: `scripts/gpu/plan.sh`.
# For each model: memlint::Planner's prediction, then the real largest batch found by probing
# two complete steps in fresh processes until the out-of-memory boundary is known to 0.5 %.
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
NV=$(python3 -c 'import nvidia;print(nvidia.__path__[0])' 2>/dev/null || true)
[ -n "$NV" ] && export LD_LIBRARY_PATH="$NV/cu13/lib:${LD_LIBRARY_PATH:-}"
B=${MEMLINT_GPU_PLAN:-./gpu-bin/gpu_plan}
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv | tee "$OUT/gpu.txt"
$B probe mlp 64; echo "warm-up probe (kernel JIT) exit status: $?"
for m in mlp transformer; do
  start=$(date +%s.%N)
  $B plan "$m" 2>&1 | tee "$OUT/plan_$m.txt"
  end=$(date +%s.%N)
  echo "plan wall seconds (whole process, CUDA start included): $(python3 -c "print(round($end-$start,1))")" | tee -a "$OUT/plan_$m.txt"
  guess=$(python3 -c "import json;l=[x for x in open('$OUT/plan_$m.txt') if x.startswith('PLAN {')];print(json.loads(l[0][5:])['largest_batch'] if l else 1)")
  timeout 240 $B search "$m" "$guess" 2>&1 | tail -5 | tee -a "$OUT/plan_$m.txt"
done
