#!/bin/bash
# The session's one device call (2026-12-05h, 300 s): the GPU suite on build (main at d07e7c6:
# the compact merge in the balanced merge and the units' cut for the spare slots; build-ab/cm.tar.xz)
# less models, kv_append and part 3, its groups in parallel; first the SASS of every sm_90 entry
# point against c13dd20's objects (build-ab/x/main). The A/B planned before it never ran.
set -u
T0=$SECONDS
[ -x build/bin/test_gpu_ragged ] || tar xJf build-ab/cm.tar.xz
mkdir -p build-ab/x && (cd build-ab/x && tar xJf ../new.tar.xz && rm -rf main && mv build main)
res=/tmp/r13; mkdir -p $res
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm --format=csv > $res/gpu.txt
say() { echo "$*"; echo "$*" >> $res/summary.txt; cp $res/summary.txt $OUT/; }
say "extract $((SECONDS - T0))s; $(tail -1 $res/gpu.txt)"
# (it ran with the same comparison inline; it is tools/sass_diff.py now)
python3 tools/sass_diff.py build-ab/x/main/packs/attention_decode build/packs/attention_decode --arch sm_90 > $res/sass_diff.txt 2>&1
say "$(head -4 $res/sass_diff.txt)"; cp $res/sass_diff.txt $OUT/
res=/tmp/r14; mkdir -p $res
INGOT_GPU_PART=1 INGOT_GPU_TESTS="variants" tools/device_gpu_tests.sh $res/a > $res/a.txt 2>&1 &
INGOT_GPU_PART=1 INGOT_GPU_TESTS="capacity splits tokens poison_tail" tools/device_gpu_tests.sh $res/b > $res/b.txt 2>&1 &
INGOT_GPU_PART=2 INGOT_GPU_TESTS="graph streams handoff" tools/device_gpu_tests.sh $res/c > $res/c.txt 2>&1 &

(mkdir -p $res/g; for tool in memcheck racecheck; do
  s=$SECONDS
  INGOT_RAGGED_QUICK=1 timeout 120 compute-sanitizer --tool $tool --error-exitcode 86 --print-limit 20 \
    build/bin/test_gpu_ragged build/packs/attention_decode > $res/g/${tool}_ragged.log 2>&1
  echo "$tool test_gpu_ragged rc=$? $((SECONDS - s))s :: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $res/g/${tool}_ragged.log | tail -n 1)" >> $res/g/summary.txt
done) &
INGOT_GPU_PART=2 INGOT_GPU_TESTS="ragged" tools/device_gpu_tests.sh $res/f > $res/f.txt 2>&1 &
while [ $(jobs -r | wc -l) -gt 0 ]; do
  sleep 10
  cat $res/?/summary.txt > $OUT/summary14.txt 2>/dev/null
  tar czf $OUT/r14.tgz -C /tmp r14 2>/dev/null
done
cat $res/?/summary.txt > $OUT/summary14.txt
echo "total $((SECONDS - T0))s" >> $OUT/summary14.txt
tar czf $OUT/r14.tgz -C /tmp r14
cat $OUT/summary14.txt | cut -c1-250
