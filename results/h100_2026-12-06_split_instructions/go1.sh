#!/bin/bash
# Multi-query rows at B=32 (issue 22): Nsight Compute of ingot's row-wave split (Falcon-7B 71/1 D64,
# StarCoder 48/1 D128) and of flash's kernels on Falcon; then occupancy candidates against the
# shipped kernels (build-c1: w5t64s3, c2: w5t32s4 occupancy 3, c6: occupancy 4; c5: StarCoder w4t32s4
# occupancy 3). ~450 s.
set -u
T0=$SECONDS
D=results/h100_2026-12-06_split_instructions
res=/tmp/r1; mkdir -p $res
export LD_LIBRARY_PATH=$PWD/build/lib
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $res/gpu.txt; cat $res/gpu.txt
S="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section ComputeWorkloadAnalysis --section InstructionStats --section SchedulerStats --section MemoryWorkloadAnalysis --section SourceCounters"
prof() {  # name regex skip count cmd...
  n=$1 kr=$2 sk=$3 cnt=$4; shift 4
  timeout 120 ncu --clock-control none --kernel-name regex:"$kr" --launch-skip $sk --launch-count $cnt $S -o $res/$n -f "$@" > $res/$n.log 2>&1
  echo "$n rc=$? $(grep -h 'probe:' $res/$n.log | head -2) [$((SECONDS - T0))s]"
  ncu -i $res/$n.ncu-rep --page details --csv > $res/$n.details.csv 2>&1
  ncu -i $res/$n.ncu-rep --page source --csv --print-source sass > $res/$n.source.csv 2>&1
  rm -f $res/$n.ncu-rep
}
prof falcon32_8k "_(split|merge)$" 2 2 python3 bench/ncu_probe.py 8192 --batch 32 --heads 71x1 --head-dim 64
prof flash_falcon32_8k "flash" 4 2 python3 $D/peer_probe.py 8192 --batch 32 --heads 71x1 --head-dim 64
prof star32_64k "_split$" 2 1 python3 bench/ncu_probe.py 65536 --batch 32 --heads 48x1
prof flash_star32_64k "flash" 4 2 python3 $D/peer_probe.py 65536 --batch 32 --heads 48x1
tar czf $OUT/r1.tgz -C /tmp r1
AB_BUILDS="build-c2 build-c6" tools/ab_builds.sh $res/falcon build build-c1 1 --head-dim 64 \
  --points 32x71x1x8192,32x71x1x65536,1x71x1x65536 --rounds 3 --no-read-floor
echo "[$((SECONDS - T0))s]"
tar czf $OUT/r1.tgz -C /tmp r1
tools/ab_builds.sh $res/star build build-c5 1 --points 32x48x1x8192,32x48x1x65536,1x48x1x65536 --rounds 3 --no-read-floor
echo "[$((SECONDS - T0))s]"
tar czf $OUT/r1.tgz -C /tmp r1
