#!/usr/bin/env bash
# Builds the tch 0.24 CUDA example (examples/tch-gpu, its own workspace and lock file) here, against
# libtorch 2.11.0+cu130 taken from PyPI's torch wheel (the CUDA 13.0 build, the one the GPU machine
# has installed), and copies the stripped binary into gpu-tch/. No CUDA toolchain is needed: tch
# compiles only its C++ wrapper against libtorch's headers; libtorch_cuda's own CUDA libraries
# (cuBLAS, cuDNN, NCCL, …) are found at run time in the GPU machine's PyTorch install.
#
#   scripts/gpu/build-tch.sh      # then, on the GPU machine: scripts/gpu/tch-dfdx.sh
#
# The wheel (531 MB) and its extracted lib/include folders (1 GB) stay in ~/.cache/memlint-libtorch.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${MEMLINT_LIBTORCH_CACHE:-$HOME/.cache/memlint-libtorch}
WHEEL=torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl
mkdir -p "$CACHE"
if [ ! -f "$CACHE/extract/torch/lib/libtorch_cuda.so" ]; then
  if [ ! -f "$CACHE/$WHEEL" ]; then
    # Only the wheel, not its ~3 GB of CUDA dependencies; any Python's pip can fetch it.
    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.11 \
      --platform manylinux_2_28_x86_64 "torch==2.11.0" -d "$CACHE" >&2
  fi
  unzip -q -o "$CACHE/$WHEEL" 'torch/lib/*' 'torch/include/*' 'torch/share/*' 'torch/version.py' -d "$CACHE/extract"
fi
grep -q "__version__ = '2.11.0+cu130'" "$CACHE/extract/torch/version.py"
export LIBTORCH="$CACHE/extract/torch" LIBTORCH_CXX11_ABI=1
export CARGO_TARGET_DIR=${MEMLINT_TCH_TARGET_DIR:-$ROOT/target-tch}
cd "$ROOT/examples/tch-gpu"
cargo build --release
BIN="$CARGO_TARGET_DIR/release/memlint-tch-gpu"
# libtorch_cuda must be among the needed libraries, or libtorch sees no CUDA device (build.rs).
readelf -d "$BIN" | grep -q 'NEEDED.*libtorch_cuda.so' || { echo "libtorch_cuda.so not linked" >&2; exit 1; }
mkdir -p "$ROOT/gpu-tch"
cp "$BIN" "$ROOT/gpu-tch/tch_gpu"
strip "$ROOT/gpu-tch/tch_gpu"
cp "$ROOT/scripts/gpu/tch-dfdx.sh" "$ROOT/gpu-tch/"
cat > "$ROOT/gpu-tch/NOTES.txt" <<NOTES
tch_gpu: examples/tch-gpu (tch 0.24.0), built $(date -u +%F) against libtorch $(sed -n "s/^__version__ = '\(.*\)'/\1/p" "$LIBTORCH/version.py")
(git $(sed -n "s/^git_version = '\(.*\)'/\1/p" "$LIBTORCH/version.py")), from PyPI's torch-2.11.0 cp311 manylinux_2_28 wheel.

Not self-contained: it needs libtorch_cuda.so, libtorch_cpu.so, libc10.so, libc10_cuda.so of an
installed PyTorch 2.11.0 (the CUDA 13.0 build) at run time. tch-dfdx.sh sets
  LD_LIBRARY_PATH=<torch>/lib:<nvidia>/cu13/lib
with <torch> = dirname of torch/__init__.py (found without importing torch) and <nvidia> =
nvidia.__path__[0]; libtorch's own RPATH (\$ORIGIN/../../nvidia/{cudnn,nccl,nvshmem,cusparselt,cu13}/lib)
finds cuDNN, NCCL, cuBLAS, … The binary lists libtorch_cuda.so as needed (build.rs passes
--no-as-needed), so libtorch registers its CUDA backend before main.
Another PyTorch version: the C++ symbols of tch's wrapper may not resolve (the loader says
"undefined symbol"); rebuild against that version's wheel.
Smoke test without a GPU: LD_LIBRARY_PATH=<torch>/lib MEMLINT_TCH_CPU=1 TRAIN_STEPS=100 ROUNDS=3 PER_ROUND=20 ./tch_gpu 60
Run everything on the GPU machine, from the repository root: bash gpu-tch/tch-dfdx.sh
NOTES
readelf -d "$ROOT/gpu-tch/tch_gpu" | grep NEEDED
ls -l "$ROOT/gpu-tch"
