#!/bin/bash
# Device call (written 2026-12-06, not yet run): where the balanced split's 1.5-2.3 us over the uniform
# split go at B=4 8/2 (decision 0038): ncu's warp-state and per-SASS-instruction stall samples
# (SourceCounters) of the balanced split (INGOT_BALANCE=1) and the uniform split (=0) on the same
# 4 x 8K batch. Needs build/ (nm.tar.xz). ~150 s.
set -u
[ -x build/bin/test_gpu_ragged ] || tar xJf build-ab/nm.tar.xz
res=/tmp/r22; mkdir -p $res
export LD_LIBRARY_PATH=$PWD/build/lib
for bal in 1 0; do
  ncu --clock-control none --kernel-name regex:"split$" --launch-skip 2 --launch-count 1 \
      --section WarpStateStats --section SourceCounters --section SpeedOfLight --section LaunchStats \
      -o $res/b4_bal$bal -f \
      python3 bench/ncu_probe.py 8192 --heads 8x2 --lens 8192,8192,8192,8192 --balance $bal > $res/b4_bal$bal.log 2>&1
  echo "ncu bal=$bal rc=$?"
  ncu -i $res/b4_bal$bal.ncu-rep --page details --csv > $res/b4_bal$bal.details.csv 2>&1
  ncu -i $res/b4_bal$bal.ncu-rep --page source --csv --print-source sass > $res/b4_bal$bal.source.csv 2>&1
  echo "  source rows: $(wc -l < $res/b4_bal$bal.source.csv)"
done
tar czf $OUT/r22.tgz -C /tmp r22
