#!/bin/bash
# The default's balance rule (ingot_ad_balance_auto: one segment a sequence, or a uniform plan modelled
# at 100 steps or more) on build-ab/new.tar.xz (make + ingot_tests of this tree), and the GPU suite.
#   STEP=a: bench/decode.py --ragged, contiguous and paged 16 (3 rounds; balanced, segments and the
#           default side by side); test_gpu_ragged (full); then the suite's tests in TESTS
#           (default: models), LIMIT s in all.
#   STEP=s: tools/device_gpu_tests.sh with INGOT_GPU_TESTS=$TESTS and INGOT_GPU_PART=$PART.
#   STEP=m: bench/decode.py --models --rounds 2 (cuDNN and flash in the same run), then STEP=s's
#           suite with what time is left.
# Logs in $OUT; summaries printed.
set -u
T0=$SECONDS
STEP=${STEP:-a}
[ -d build/packs/attention_decode ] || tar xJf build-ab/new.tar.xz
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee $OUT/gpu_$STEP.txt
export LD_LIBRARY_PATH=$PWD/build/lib
suite() {
  rest=$(( ${LIMIT:-585} - (SECONDS - T0) ))
  [ -n "${TESTS+x}" ] && export INGOT_GPU_TESTS="$TESTS"
  INGOT_GPU_PART=${PART:-} INGOT_LOGS_TAR=$OUT/gpu_$STEP.tgz timeout $rest tools/device_gpu_tests.sh /tmp/gs > /tmp/gs.txt 2>&1
  echo "suite rc=$? [$((SECONDS - T0))s]"; cut -c1-400 /tmp/gs/summary.txt; tail -n 4 /tmp/gs.txt
}
case $STEP in
  a)
    for p in 0 16; do
      args="--ragged --rounds 3 --no-read-floor"; [ $p -gt 0 ] && args="$args --paged $p"
      timeout 150 python3 bench/decode.py $args --out $OUT/rag$p > $OUT/rag$p.log 2>&1
      echo "ragged paged=$p rc=$? [$((SECONDS - T0))s]"; cat $OUT/rag$p/*.md | grep "^| B="
    done
    timeout 300 build/bin/test_gpu_ragged build/packs/attention_decode > $OUT/ragged.log 2>&1
    echo "test_gpu_ragged rc=$? [$((SECONDS - T0))s] :: $(tail -n 2 $OUT/ragged.log | tr '\n' ' ' | cut -c1-400)"
    TESTS=${TESTS:-models} suite ;;
  s) suite ;;
  m)
    timeout ${MLIMIT:-300} python3 bench/decode.py --models --rounds 2 --no-read-floor --out $OUT/models > $OUT/models.log 2>&1
    echo "models rc=$? [$((SECONDS - T0))s]"; grep "^|" $OUT/models/*.md | head -40
    suite ;;
esac
