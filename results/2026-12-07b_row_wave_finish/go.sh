#!/bin/bash
# Decision 0045 on build-ab/new.tar.xz (the AMD row-wave matrix-core kernels finish from their
# registers; sm_90 objects byte-identical to main's): the racecheck probe of 2026-12-07, the GPU
# suite's part 3 (the emulated wave64 pack, where the changed kernels run; the inspect runs), racecheck
# and synccheck on a changed kernel's twin, then (STEP=m) the H200 model table.
#   STEP=a: probe, part 3, sanitizers (about 300 s);  STEP=m: bench/decode.py --models (LIMIT s).
# Logs in $OUT; summaries printed.
set -u
T0=$SECONDS
STEP=${STEP:-a}
[ -d build/packs/attention_decode ] || tar xJf build-ab/new.tar.xz
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee $OUT/gpu_$STEP.txt
export LD_LIBRARY_PATH=$PWD/build/lib
case $STEP in
  a)
    for m in 0 1 2 3; do
      compute-sanitizer --tool racecheck --print-limit 4 build-ab/racecheck_probe $m > $OUT/probe_$m.log 2>&1
      echo "probe mode $m rc=$? :: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $OUT/probe_$m.log | tail -n 1)"
    done
    tar czf $OUT/probe.tgz -C $OUT $(cd $OUT && ls probe_*.log) && rm -f $OUT/probe_*.log
    INGOT_NO_PYTHON=1 INGOT_GPU_PART=3 INGOT_LOGS_TAR=$OUT/gpu_p3.tgz tools/device_gpu_tests.sh /tmp/p3 > /tmp/p3.txt 2>&1
    echo "part 3 rc=$? [$((SECONDS - T0))s]"; cat /tmp/p3/summary.txt | cut -c1-400
    for tool in racecheck synccheck; do
      INGOT_WAVE64_ONLY=bf16_d128_g32_sq1_paged timeout 120 compute-sanitizer --tool $tool --error-exitcode 86 \
        --print-limit 20 build/bin/test_gpu_wave64 build/packs/attention_decode_w64 build/packs/attention_decode \
        build/bin/test_gpu_wave64_selftest.cubin > $OUT/${tool}_d128g32.log 2>&1
      echo "$tool wave64 d128 g32 paged rc=$? [$((SECONDS - T0))s] :: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/${tool}_d128g32.log | tail -n 1) $(tail -n 1 $OUT/${tool}_d128g32.log)"
    done ;;
  m)
    mkdir -p $OUT/models
    timeout ${LIMIT:-540} python3 -u bench/decode.py --lib build/lib/libingot.so --pack build/packs/attention_decode \
      --models --rounds 2 --no-read-floor --out $OUT/models > $OUT/models/models.log 2>&1
    echo "models rc=$? [$((SECONDS - T0))s]"; tail -n 40 $OUT/models/models.log ;;
esac
