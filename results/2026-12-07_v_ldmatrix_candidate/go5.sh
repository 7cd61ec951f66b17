#!/bin/bash
# The rest of the GPU suite on build-ab/new.tar.xz (b646209): V through ldmatrix, and the AMD head-dim-256
# group-8 kernel as two row waves of 4 rows (decision 0044; its wave64 twin is in the emulated pack).
#   STEP=a (about 530 s): part 2's ragged, graph and streams, part 3 without Python (wave64 and the
#     inspect runs: the emulated pack changed), part 1's capacity;
#   STEP=c: part 2's handoff, then, while LIMIT seconds (default 300) last, compute-sanitizer
#     racecheck and synccheck on the new row-wave SIMT kernel of the emulated pack (bf16, head dim
#     256, group 8, paged), then kv_append (its pack is unchanged).
# Logs in $OUT/gpu_<STEP><part>.tgz, summaries in $OUT/summary_<STEP><part>.txt.
set -u
T0=$SECONDS
STEP=${STEP:-a}
res=/tmp/r5$STEP; mkdir -p $res
[ -d build/packs/attention_decode ] || tar xJf build-ab/new.tar.xz
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee $OUT/gpu.txt
run() {  # PART TESTS
  env ${2+"INGOT_GPU_TESTS=$2"} INGOT_LOGS_TAR=$OUT/gpu_${STEP}$1.tgz INGOT_GPU_PART=$1 \
    tools/device_gpu_tests.sh $res/p$1 > $res/p$1.txt 2>&1
  echo "part $1 rc=$? [$((SECONDS - T0))s]"; cp $res/p$1/summary.txt $OUT/summary_${STEP}$1.txt; cat $res/p$1/summary.txt
}
case $STEP in
  a) INGOT_NO_PYTHON=1 run 2 "ragged graph streams"; INGOT_NO_PYTHON=1 run 3; INGOT_NO_PYTHON=1 run 1 "capacity" ;;
  c) INGOT_NO_PYTHON=1 run 2 "handoff"
     limit=${LIMIT:-300}
     export LD_LIBRARY_PATH=$PWD/build/lib
     for tool in racecheck synccheck; do
       left=$((limit - (SECONDS - T0))); [ $left -gt 20 ] || break
       INGOT_WAVE64_ONLY=bf16_d256_g8_sq1_paged timeout $left compute-sanitizer --tool $tool --error-exitcode 86 \
         --print-limit 20 build/bin/test_gpu_wave64 build/packs/attention_decode_w64 build/packs/attention_decode \
         build/bin/test_gpu_wave64_selftest.cubin > $OUT/${tool}_wave64_d256g8.log 2>&1
       echo "$tool wave64 d256 g8 paged rc=$? [$((SECONDS - T0))s] :: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/${tool}_wave64_d256g8.log | tail -n 1) $(tail -n 1 $OUT/${tool}_wave64_d256g8.log)"
     done
     [ $((limit - (SECONDS - T0))) -gt 60 ] && STEP=c2 INGOT_NO_PYTHON=1 run 2 "kv_append" ;;
esac
