#!/usr/bin/env bash
# On the GPU machine: Nsight Compute on the seed shape's split and merge kernels
# at L = 65536 (and the SASS of the seed cubin). Output under $1. Arguments after L go
# to bench/ncu_probe.py (another shape: --batch 32 --heads 48x1, --head-dim 64, ...);
# the shared-memory metrics (load wavefronts, bank conflicts) say whether a ring
# split is bound by its shared-memory reads (the row-wave kernels, decision 0028); the L2
# sectors the SMs ask for, and how many hit, whether it reads its bytes once (a ring off its
# 128-byte lines asked for each sector twice, decision 0037). A ragged batch through the balanced
# plan or its uniform segments: profile.sh OUT 8704 --heads 32x8 --lens 8704,8704 --balance 1 (or 0).
set -u
out=${1:-results}  # usage: profile.sh [OUTDIR (default: results)] [L [ncu_probe.py args...]]
L=${2:-65536}
shift $(( $# < 2 ? $# : 2 ))
tag=$L${1:+_$(echo "$*" | tr -c 'A-Za-z0-9' '_' | sed 's/__*/_/g; s/^_//; s/_$//')}
export LD_LIBRARY_PATH=$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ncu --clock-control none --kernel-name regex:"_(split|merge)$" --launch-skip 2 --launch-count 2 \
    --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \
    --section LaunchStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
    --metrics dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,smsp__inst_executed.sum,smsp__cycles_active.avg,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_requests_srcunit_tex_op_read.sum \
    python3 bench/ncu_probe.py $L "$@" > $out/ncu_$tag.txt 2>&1
echo "ncu rc=$? -> $out/ncu_$tag.txt"
cuobjdump -sass build/packs/attention_decode/code/sm_90/attention_decode_bf16_d128_g4_sq1_contig_w4t16_tc.sm_90.cubin > $out/seed_sass.txt 2>&1
echo "sass: $(grep -c '/\*[0-9a-f]*\*/' $out/seed_sass.txt) instructions"
