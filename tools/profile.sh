#!/usr/bin/env bash
# On the GPU machine: Nsight Compute on the seed shape's split and merge kernels
# at L = 65536 (and the SASS of the seed cubin). Output under $1.
set -u
out=${1:-results}  # usage: profile.sh [OUTDIR (default: results)] [L]
L=${2:-65536}
export LD_LIBRARY_PATH=$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ncu --clock-control none --kernel-name regex:"_(split|merge)$" --launch-skip 2 --launch-count 2 \
    --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \
    --section LaunchStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
    --metrics dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,smsp__inst_executed.sum,smsp__cycles_active.avg \
    python3 bench/ncu_probe.py $L > $out/ncu_$L.txt 2>&1
echo "ncu rc=$? -> $out/ncu_$L.txt"
cuobjdump -sass build/packs/attention_decode/code/sm_90/attention_decode_bf16_d128_g4_sq1_contig_w4t16_tc.sm_90.cubin > $out/seed_sass.txt 2>&1
echo "sass: $(grep -c '/\*[0-9a-f]*\*/' $out/seed_sass.txt) instructions"
