#!/usr/bin/env bash
# Builds the CUDA example (examples/gpu_train.rs, feature `cuda-examples`) on this machine, which
# has no GPU, with the CUDA 13.0 toolchain from ../shared/gpu/cuda-toolchain.sh, and copies the
# stripped binary and the device-side script into the git-ignored gpu-bin/ folder.
#
#   scripts/gpu/build.sh            # then run scripts/gpu/device.sh on the GPU machine, carrying gpu-bin
#
# A cold build of candle with `cuda` takes ~12 min on 2 cores: the target folder (default
# target-cuda/) is kept between builds, so later builds take seconds.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
TOOLCHAIN=${MEMLINT_CUDA_TOOLCHAIN:-$ROOT/../shared/gpu/cuda-toolchain.sh}
cargo fetch --quiet
eval "$("$TOOLCHAIN")"
export CARGO_TARGET_DIR=${MEMLINT_CUDA_TARGET_DIR:-$ROOT/target-cuda}
# The release profile ships cargo-memlint without debug info; the GPU examples keep the settings
# the shared CUDA target dir was warmed with (line tables), so candle's CUDA crates are not rebuilt.
CARGO_PROFILE_RELEASE_DEBUG=line-tables-only CARGO_PROFILE_RELEASE_STRIP=none \
  cargo build --release --features cuda-examples --example gpu_train --example gpu_plan
mkdir -p gpu-bin
cp "$CARGO_TARGET_DIR/release/examples/gpu_train" gpu-bin/gpu_train
strip gpu-bin/gpu_train
cp "$CARGO_TARGET_DIR/release/examples/gpu_plan" gpu-bin/gpu_plan
strip gpu-bin/gpu_plan
cp scripts/gpu/device.sh gpu-bin/device.sh
ls -l gpu-bin
