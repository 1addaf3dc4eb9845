#!/bin/bash
# usage: run_postbw.sh <version> [iters] [every]   (variants A F M from <version>-postbw)
v=$1; it=${2:-3000}; ev=${3:-250}
bin=/work/wt/burn-orphan-versions/target-$v/release/burn-orphan-postbw
out=/work/wt/burn-orphan-versions/$v-postbw/raw_${it}.txt
: > $out
for var in A F M; do
  /usr/bin/time -f "variant=$var wall=%es maxrss=%MKB" $bin $var $it $ev >> $out 2>&1
done
echo finished >> $out
