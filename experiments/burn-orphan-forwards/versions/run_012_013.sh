#!/bin/bash
# usage: run_012_013.sh <version> [iters] [every]   (burn 0.12.1 / 0.13.2: variants A B D E I + new F, M)
v=$1; it=${2:-3000}; ev=${3:-250}
bin=/work/wt/burn-orphan-versions/target-$v/release/burn-orphan
out=/work/wt/burn-orphan-versions/$v/raw_${it}.txt
: > $out
for var in A B D E I F M; do
  /usr/bin/time -f "variant=$var wall=%es maxrss=%MKB" $bin $var $it $ev >> $out 2>&1
done
echo finished >> $out
