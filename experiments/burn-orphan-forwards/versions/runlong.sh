#!/bin/bash
# usage: runlong.sh <version> <iters> <every> <variants...>
v=$1; it=$2; ev=$3; shift 3
bin=/work/wt/burn-orphan-versions/target-$v/release/burn-orphan
out=/work/wt/burn-orphan-versions/$v/raw_${it}.txt
: > $out
for var in "$@"; do
  /usr/bin/time -f "variant=$var wall=%es maxrss=%MKB" $bin $var $it $ev >> $out 2>&1
done
echo finished >> $out
