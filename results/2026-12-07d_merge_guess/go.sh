#!/bin/bash
# Decision 0050 (the balanced merge reads an even plan's partials on the even guess, with the list)
# on build-ab/new.tar.xz, against build-ab/base_fc5cbc0.tar.xz (main at fc5cbc0: decision 0049).
#   STEP=a: the ragged tables A/B (tools/ab_builds.sh base new, 1 round each, 3 rounds inside),
#           contiguous and paged 16; test_gpu_ragged (full); memcheck and racecheck on its quick
#           mode; then the GPU suite's tests named in TESTS (default: wave64 graph streams tokens
#           poison_tail kv_append), LIMIT s in all.
#   STEP=s: tools/device_gpu_tests.sh with INGOT_GPU_TESTS=$TESTS and INGOT_GPU_PART=$PART.
# Logs in $OUT; summaries printed.
set -u
T0=$SECONDS
STEP=${STEP:-a}
[ -d build/packs/attention_decode ] || tar xJf build-ab/new.tar.xz
[ -d build-old/packs ] || { mkdir -p build-old && tar xJf build-ab/base_fc5cbc0.tar.xz -C build-old --strip-components=1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee $OUT/gpu_$STEP.txt
export LD_LIBRARY_PATH=$PWD/build/lib
case $STEP in
  a)
    timeout 100 tools/ab_builds.sh $OUT/rag build-old build 1 --ragged --rounds 3 --no-read-floor > $OUT/rag.txt 2>&1
    echo "ragged contiguous rc=$? [$((SECONDS - T0))s]"; cat $OUT/rag.txt
    timeout 100 tools/ab_builds.sh $OUT/ragp build-old build 1 --ragged --paged 16 --rounds 3 --no-read-floor > $OUT/ragp.txt 2>&1
    echo "ragged paged 16 rc=$? [$((SECONDS - T0))s]"; cat $OUT/ragp.txt
    timeout 240 build/bin/test_gpu_ragged build/packs/attention_decode > $OUT/ragged.log 2>&1
    echo "test_gpu_ragged rc=$? [$((SECONDS - T0))s] :: $(tail -n 2 $OUT/ragged.log | tr '\n' ' ' | cut -c1-400)"
    grep "graph " $OUT/ragged.log | cut -c1-300
    for tool in memcheck racecheck; do
      INGOT_RAGGED_QUICK=1 timeout 90 compute-sanitizer --tool $tool --error-exitcode 86 --print-limit 10 \
        build/bin/test_gpu_ragged build/packs/attention_decode > $OUT/${tool}_ragged.log 2>&1
      echo "$tool ragged quick rc=$? [$((SECONDS - T0))s] :: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/${tool}_ragged.log | tail -n 1)"
    done
    rest=$(( ${LIMIT:-585} - (SECONDS - T0) ))
    INGOT_GPU_TESTS="${TESTS:-graph streams tokens poison_tail kv_append}" INGOT_GPU_PART=${PART:-} \
      INGOT_NO_PYTHON=1 INGOT_LOGS_TAR=$OUT/gpu_a.tgz timeout $rest tools/device_gpu_tests.sh /tmp/gs > /tmp/gs.txt 2>&1
    echo "suite rc=$? [$((SECONDS - T0))s]"; cut -c1-400 /tmp/gs/summary.txt; tail -n 3 /tmp/gs.txt ;;
  s)
    [ -n "${TESTS:-}" ] && export INGOT_GPU_TESTS="$TESTS"
    INGOT_GPU_PART=${PART:-} INGOT_LOGS_TAR=$OUT/gpu.tgz timeout ${LIMIT:-580} tools/device_gpu_tests.sh /tmp/gs > /tmp/gs.txt 2>&1
    echo "suite rc=$? [$((SECONDS - T0))s]"; cut -c1-400 /tmp/gs/summary.txt; tail -n 5 /tmp/gs.txt ;;
esac
