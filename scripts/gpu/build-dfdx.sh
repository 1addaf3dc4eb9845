#!/usr/bin/env bash
# Builds the dfdx 0.13 CUDA example (examples/dfdx-gpu, its own workspace and lock file) here, with
# the CUDA 13 toolchain of ../shared/gpu/cuda-toolchain.sh, and copies the stripped binary into
# gpu-dfdx/.
#
#   scripts/gpu/build-dfdx.sh     # then, on the GPU machine: scripts/gpu/tch-dfdx.sh
#
# dfdx's build script compiles its .cu kernels to PTX with nvcc, for the architecture nvidia-smi
# reports (there is no GPU here: a stand-in nvidia-smi answers 9.0, i.e. sm_90 for H100/H200).
# Its old cudarc (0.9) links libcuda, libnvrtc, libcublas and libcublasLt by name (the toolchain's
# stub libcuda.so has the soname libcuda.so.1; the GPU machine's driver provides the real one).
# A few dfdx ops (reshape of strided tensors, concat, stack, to_dtype) compile kernels with NVRTC
# at run time with the CUDA include folder baked in at build time: it is baked as
# /tmp/memlint-cu13/include, a link that tch-dfdx.sh recreates on the GPU machine. The MLP here
# uses none of them (the binary does not even link libnvrtc).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TOOLCHAIN=${MEMLINT_CUDA_TOOLCHAIN:-$ROOT/../shared/gpu/cuda-toolchain.sh}
cd "$ROOT/examples/dfdx-gpu"
cargo fetch --quiet
eval "$("$TOOLCHAIN")"
ln -sfn "$CUDA_HOME" /tmp/memlint-cu13
SHIM=$(mktemp -d)
trap 'rm -rf "$SHIM"' EXIT
printf '#!/bin/sh\n# stand-in for dfdx build script: the target GPU (H100/H200)\necho compute_cap\necho 9.0\n' > "$SHIM/nvidia-smi"
chmod +x "$SHIM/nvidia-smi"
export PATH="$SHIM:$PATH" CUDA_ROOT=/tmp/memlint-cu13 CUDA_COMPUTE_CAP=90
export CARGO_TARGET_DIR=${MEMLINT_DFDX_TARGET_DIR:-$ROOT/target-dfdx}
cargo build --release
mkdir -p "$ROOT/gpu-dfdx"
cp "$CARGO_TARGET_DIR/release/memlint-dfdx-gpu" "$ROOT/gpu-dfdx/dfdx_gpu"
strip "$ROOT/gpu-dfdx/dfdx_gpu"
cp "$ROOT/scripts/gpu/tch-dfdx.sh" "$ROOT/gpu-dfdx/"
readelf -d "$ROOT/gpu-dfdx/dfdx_gpu" | grep NEEDED
ls -l "$ROOT/gpu-dfdx"
