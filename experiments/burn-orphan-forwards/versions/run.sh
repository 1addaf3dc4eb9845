#!/bin/bash
# usage: run.sh <version> [iters] [every]
v=$1; it=${2:-3000}; ev=${3:-250}
bin=/work/wt/burn-orphan-versions/target-$v/release/burn-orphan
out=/work/wt/burn-orphan-versions/$v/raw_${it}.txt
: > $out
for var in A B D E I; do
  /usr/bin/time -f "variant=$var wall=%es maxrss=%MKB" $bin $var $it $ev >> $out 2>&1
done
echo finished >> $out
