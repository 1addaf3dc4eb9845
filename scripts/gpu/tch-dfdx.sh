#!/usr/bin/env bash
# Runs the tch and dfdx examples of the runtime guard on the GPU machine (issue 12's evidence),
# from the repository root, with gpu-tch/ and gpu-dfdx/ carried (built here by
# scripts/gpu/build-tch.sh and scripts/gpu/build-dfdx.sh; either may be absent).
#
#   scripts/gpu/tch-dfdx.sh [steps]      # steps of the leaky loops (default 300; fixed: ≥ 1,200)
#
# tch runs twice: with the automatic primary source (cuda-pool, which libtorch's cudaMalloc cache
# bypasses) and with MEMLINT_SOURCE=nvml-process (this process's device memory, read every
# iteration). dfdx runs once: its cudarc allocates from the pool that cuda-pool reads.
# Prints per loop: flagged yes/no, iteration, bytes/iteration, source; and the overhead ratio.
# Logs and JSON reports: $OUT/tch-dfdx.tgz (or ./gpu-out).
set -uo pipefail
STEPS=${1:-300}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
LOGS=$(mktemp -d)
PY=${PYTHON:-python3}
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader | tee "$LOGS/gpu.txt"
NV=$($PY -c 'import nvidia;print(nvidia.__path__[0])' 2>/dev/null || true)
TORCH=$($PY -c 'import importlib.util,os;print(os.path.dirname(importlib.util.find_spec("torch").origin))' 2>/dev/null || true)
echo "nvidia python libs: ${NV:-none}; torch: ${TORCH:-none}"
[ -n "$TORCH" ] && grep -E "^__version__|^cuda" "$TORCH/version.py"

ROOT=$PWD
run() { # name, command...: runs in $LOGS/name/ (the reports land in its target/memlint/)
  local name=$1
  shift
  echo "==== $name"
  mkdir -p "$LOGS/$name"
  local start end rc
  start=$(date +%s.%N)
  (cd "$LOGS/$name" && "$@") > "$LOGS/$name.log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  cat "$LOGS/$name.log"
  echo "exit status: $rc; wall $(awk "BEGIN{printf \"%.1f\", $end-$start}") s" | tee -a "$LOGS/$name.log"
}

if [ -x gpu-tch/tch_gpu ]; then
  if [ -z "$TORCH" ] || ! grep -q "__version__ = '2.11" "$TORCH/version.py"; then
    echo "tch: the binary is built against libtorch 2.11.0+cu130; this PyTorch is not 2.11 (may fail to load)"
  fi
  # libtorch from the installed PyTorch; its own RPATH finds cuDNN, NCCL, cuBLAS… in nvidia/.
  TLD="$TORCH/lib${NV:+:$NV/cu13/lib}:${LD_LIBRARY_PATH:-}"
  LD_LIBRARY_PATH="$TLD" ldd gpu-tch/tch_gpu | grep -E "not found|^\s*lib(torch|c10)" | sed 's/^/  ldd: /'
  for mode in auto nvml-process; do
    run "tch-$mode" env LD_LIBRARY_PATH="$TLD" MEMLINT_SOURCE="$mode" "$ROOT/gpu-tch/tch_gpu" "$STEPS"
  done
else
  echo "gpu-tch/tch_gpu not carried: tch skipped"
fi

if [ -x gpu-dfdx/dfdx_gpu ]; then
  # Where dfdx's run-time NVRTC kernels look for CUDA headers (baked in at build time).
  [ -n "$NV" ] && [ -d "$NV/cu13/include" ] && ln -sfn "$NV/cu13" /tmp/memlint-cu13
  DLD="${NV:+$NV/cu13/lib:}${LD_LIBRARY_PATH:-}"
  LD_LIBRARY_PATH="$DLD" ldd gpu-dfdx/dfdx_gpu | grep -E "not found|^\s*lib(cu|nvrtc)" | sed 's/^/  ldd: /'
  run "dfdx-auto" env LD_LIBRARY_PATH="$DLD" "$ROOT/gpu-dfdx/dfdx_gpu" "$STEPS"
else
  echo "gpu-dfdx/dfdx_gpu not carried: dfdx skipped"
fi

echo "==== summary (per loop: flagged, iteration, bytes/iteration, source; overhead)"
for f in "$LOGS"/*.log; do
  grep -hE "^(RESULT|OVERHEAD)" "$f" | grep -v "RESULT .* timed" | sed "s|^|$(basename "$f" .log): |"
done
tar czf "$OUT/tch-dfdx.tgz" -C "$LOGS" .
