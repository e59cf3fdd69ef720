#!/bin/bash
# sweep2.sh OUT ROUNDS "TAGS" "AT:BY ...": tag T at bump AT:BY recorded as T_AT:BY
out=$1; rounds=$2; tags=$3; cfgs=$4; : > $out
for r in $(seq 1 $rounds); do
  for c in $cfgs; do for t in $tags; do
    j=$(HEAP_BUMP_AT=${c%:*} HEAP_BUMP=${c#*:} LD_PRELOAD=/tmp/bump.so LD_LIBRARY_PATH=/tmp/lib$t /tmp/lib$t/metacl bench smn --only smn_wcst_window --reps 40 --threads 2 --json 2>/dev/null | tr -d '\n')
    echo "${t}_$c $r $j" >> $out
  done; done
done
