#!/bin/bash
# The GPU suite steps go1.sh (SHORT=1) does not run, on this build (build-ab/new.tar.xz: f39fa7c, V through ldmatrix),
# in three calls of at most 340 s each (test times: the slowest of earlier runs):
#   STEP=a: part 2's ragged (the balanced split of every ring kernel), graph, streams and kv_append;
#   STEP=c: part 1's capacity, part 2's handoff;
#   STEP=b: part 3 (wave64, the Python quick start and test_torch_api, ingot-inspect on the graphs), then
#     Phi-2 and Phi-3-mini on a ring kernel against this build.
# Logs in $OUT/gpu_<STEP><part>.tgz, summaries in $OUT/summary_<STEP><part>.txt.
set -u
T0=$SECONDS
STEP=${STEP:-a}
res=/tmp/r4; mkdir -p $res
[ -d build/packs/attention_decode ] || tar xJf build-ab/new.tar.xz
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee $OUT/gpu.txt
run() {  # PART TESTS
  env ${2+"INGOT_GPU_TESTS=$2"} INGOT_LOGS_TAR=$OUT/gpu_${STEP}$1.tgz INGOT_GPU_PART=$1 \
    tools/device_gpu_tests.sh $res/p$1 > $res/p$1.txt 2>&1
  echo "part $1 rc=$? [$((SECONDS - T0))s]"; cp $res/p$1/summary.txt $OUT/summary_${STEP}$1.txt; cat $res/p$1/summary.txt
}
case $STEP in
  a) INGOT_NO_PYTHON=1 run 2 "ragged graph streams kv_append" ;;
  c) INGOT_NO_PYTHON=1 run 1 "capacity"; STEP=c2 INGOT_NO_PYTHON=1 run 2 "handoff" ;;
  b) run 3
     # Phi-2 and Phi-3-mini on a ring kernel (build-ab/d80ring: tools/candidate_pack.sh ... 'dims3|8|80, 96|groups
     # [[1, 65535]]|{math: auto, waves: 4, stages: 3}|contiguous|1') against this build's register-pipeline kernels
     timeout 200 tools/ab_builds.sh $res/d80ring build build-ab/d80ring 1 --models --model Phi --rounds 2 --no-read-floor \
       > $res/d80ring.txt 2>&1; echo "d80ring rc=$? [$((SECONDS - T0))s]"; grep "^==" -A12 $res/d80ring.txt | head -40
     tar czf $OUT/d80ring.tgz -C $res d80ring d80ring.txt ;;
esac
