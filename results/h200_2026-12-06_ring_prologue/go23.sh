#!/bin/bash
# ncu (warp states, per-SASS stall samples) of the uniform and balanced splits at B=4 8/2 4 x 8K on a
# paged-16 cache, where the uniform split is 4.5 us slower than on a contiguous one and the balanced
# split 2.1 us (H200, 2026-12-06 prof2.py). ~60 s.
set -u
[ -x build/bin/test_gpu_ragged ] || tar xJf build-ab/nm.tar.xz
res=/tmp/r23; mkdir -p $res
export LD_LIBRARY_PATH=$PWD/build/lib
nvidia-smi --query-gpu=name --format=csv > $res/gpu.txt
for lay in p16 contig; do
  pg=""; [ $lay = p16 ] && pg="--paged 16"
  for bal in 1 0; do
    n=b4_${lay}_bal$bal
    ncu --clock-control none --kernel-name regex:"split$" --launch-skip 2 --launch-count 1 \
        --section WarpStateStats --section SourceCounters --section SpeedOfLight --section LaunchStats --section MemoryWorkloadAnalysis \
        -o $res/$n -f python3 bench/ncu_probe.py 8192 --heads 8x2 --lens 8192,8192,8192,8192 --balance $bal $pg > $res/$n.log 2>&1
    echo "$n rc=$? $(grep ncu_probe: $res/$n.log)"
    ncu -i $res/$n.ncu-rep --page details --csv > $res/$n.details.csv 2>&1
    ncu -i $res/$n.ncu-rep --page source --csv --print-source sass > $res/$n.source.csv 2>&1
  done
done
rm -f $res/*.ncu-rep.bak; tar czf $OUT/r23.tgz -C /tmp r23
