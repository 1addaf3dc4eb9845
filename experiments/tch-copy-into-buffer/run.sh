#!/bin/bash
# Runs every variant of measure.py; usage: run.sh ITERS EVERY > log
set -u
ITERS=${1:-2000}; EVERY=${2:-250}
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")'
for v in leak detach nograd realloc zero detach_; do
  /usr/bin/time -f "$v cuda wall=%es maxrss=%MKB" python3 measure.py $v cuda $ITERS $EVERY
done
for v in leak detach; do
  /usr/bin/time -f "$v cpu wall=%es maxrss=%MKB" python3 measure.py $v cpu $ITERS $EVERY
done
