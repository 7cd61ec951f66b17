#!/bin/bash
# Decision 0049 (even plans: an even batch of a balanced plan runs as the uniform plan's segments,
# decided on the device; the default balances every batch of 2 to 1024) on build-ab/new.tar.xz,
# against build-ab/old.tar.xz (main at 7cc4c72's sm_90 objects and runtime).
#   STEP=a: test_gpu_ragged (full), memcheck and racecheck on its quick mode, then the ragged tables
#           A/B, contiguous and paged 16 (tools/ab_builds.sh old new, 1 round each, 3 rounds inside).
#   STEP=s: the GPU suite (tools/device_gpu_tests.sh), INGOT_GPU_PART=$PART and INGOT_GPU_TESTS=$TESTS
#           when given, LIMIT s at most.
# Logs in $OUT; summaries printed.
set -u
T0=$SECONDS
STEP=${STEP:-a}
[ -d build/packs/attention_decode ] || tar xJf build-ab/new.tar.xz
[ -d build-old/packs ] || { mkdir -p build-old && tar xJf build-ab/old.tar.xz -C build-old --strip-components=1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee $OUT/gpu_$STEP.txt
export LD_LIBRARY_PATH=$PWD/build/lib
case $STEP in
  a)
    timeout 200 build/bin/test_gpu_ragged build/packs/attention_decode > $OUT/ragged.log 2>&1
    echo "test_gpu_ragged rc=$? [$((SECONDS - T0))s] :: $(tail -n 3 $OUT/ragged.log | tr '\n' ' ' | cut -c1-500)"
    grep -c FAIL $OUT/ragged.log
    for tool in memcheck racecheck; do
      INGOT_RAGGED_QUICK=1 timeout 120 compute-sanitizer --tool $tool --error-exitcode 86 --print-limit 10 \
        build/bin/test_gpu_ragged build/packs/attention_decode > $OUT/${tool}_ragged.log 2>&1
      echo "$tool ragged quick rc=$? [$((SECONDS - T0))s] :: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/${tool}_ragged.log | tail -n 1) $(tail -n 1 $OUT/${tool}_ragged.log | cut -c1-200)"
    done
    timeout 170 tools/ab_builds.sh $OUT/rag build-old build 1 --ragged --rounds 3 --no-read-floor > $OUT/rag.txt 2>&1
    echo "ragged contiguous rc=$? [$((SECONDS - T0))s]"; cat $OUT/rag.txt
    timeout $(( ${LIMIT:-580} - (SECONDS - T0) )) tools/ab_builds.sh $OUT/ragp build-old build 1 --ragged --paged 16 --rounds 3 --no-read-floor > $OUT/ragp.txt 2>&1
    echo "ragged paged 16 rc=$? [$((SECONDS - T0))s]"; cat $OUT/ragp.txt ;;
  s)
    [ -n "${TESTS:-}" ] && export INGOT_GPU_TESTS="$TESTS"
    INGOT_GPU_PART=${PART:-} INGOT_LOGS_TAR=$OUT/gpu.tgz timeout ${LIMIT:-580} tools/device_gpu_tests.sh /tmp/gs > /tmp/gs.txt 2>&1
    echo "suite rc=$? [$((SECONDS - T0))s]"; cut -c1-400 /tmp/gs/summary.txt; tail -n 5 /tmp/gs.txt ;;
esac
