#!/usr/bin/env bash
# Builds the burn 0.21 CUDA example (examples/burn-gpu, its own workspace and lock file) here,
# with the CUDA 13 toolchain of ../shared/gpu/cuda-toolchain.sh, and copies the stripped binary
# into gpu-bin/. A cold build takes ~30 min on 2 shared cores; keep the target folder.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TOOLCHAIN=${MEMLINT_CUDA_TOOLCHAIN:-$ROOT/../shared/gpu/cuda-toolchain.sh}
eval "$("$TOOLCHAIN")"
export CARGO_TARGET_DIR=${MEMLINT_BURN_TARGET_DIR:-$ROOT/target-burn}
cd "$ROOT/examples/burn-gpu"
cargo build --release
mkdir -p "$ROOT/gpu-bin"
cp "$CARGO_TARGET_DIR/release/memlint-burn-gpu" "$ROOT/gpu-bin/burn_gpu"
strip "$ROOT/gpu-bin/burn_gpu"
ls -l "$ROOT/gpu-bin"
