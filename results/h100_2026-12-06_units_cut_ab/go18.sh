#!/bin/bash
# Device call 1 (2026-12-06): build = main with the merge's one compact test (nm.tar.xz: bin, lib, packs);
# main = c13dd20 (new.tar.xz, before decision 0038); cmo = c13dd20's libingot with build's objects (the
# compact merge without the units' cut). The ragged A/B (2 rounds of 3), per-kernel times, then
# test_gpu_ragged, its sanitizers, and the short part-1 tests.
set -u
T0=$SECONDS
[ -x build/bin/test_gpu_ragged ] || tar xJf build-ab/nm.tar.xz
mkdir -p build-ab/x && (cd build-ab/x && tar xJf ../new.tar.xz && rm -rf main && mv build main)
mkdir -p build-ab/x/cmo && ln -sfn $PWD/build-ab/x/main/lib build-ab/x/cmo/lib && ln -sfn $PWD/build/packs build-ab/x/cmo/packs
res=/tmp/r18; mkdir -p $res/gpu
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm --format=csv > $res/gpu.txt
say() { echo "$*"; echo "$*" >> $res/summary.txt; cp $res/summary.txt $OUT/; }
say "extract $((SECONDS - T0))s; $(tail -1 $res/gpu.txt)"
python3 tools/sass_diff.py build-ab/x/main/packs/attention_decode build/packs/attention_decode --arch sm_90 > $res/sass_diff.txt 2>&1
say "$(head -2 $res/sass_diff.txt | cut -c1-300) [$((SECONDS - T0))s]"; cp $res/sass_diff.txt $OUT/
export PYTHONUNBUFFERED=1
AB_BUILDS="build-ab/x/cmo" tools/ab_builds.sh $res/ab build-ab/x/main build 2 --ragged --rounds 3 --no-read-floor > $res/ab.txt 2>&1
say "ab contiguous done $((SECONDS - T0))s"
python3 build-ab/ab_table.py $res/ab > $res/ab_table.txt; cp $res/ab_table.txt $res/ab.txt $OUT/
tar czf $OUT/r18.tgz -C /tmp r18
PROF_SET=2 PROF_ENVS=1,0 python3 build-ab/prof.py 2>&1 | grep -v -i warn > $res/prof.txt; cp $res/prof.txt $OUT/
PROF_SET=2 PROF_ENVS=1 python3 build-ab/prof.py build-ab/x/main/lib/libingot.so build/packs/attention_decode 2>&1 | grep -v -i warn > $res/prof_cmo.txt; cp $res/prof_cmo.txt $OUT/
say "prof done $((SECONDS - T0))s"
tar czf $OUT/r18.tgz -C /tmp r18
INGOT_LOGS_TAR=$OUT/gpu18.tgz INGOT_GPU_TESTS="ragged" INGOT_GPU_PART=2 tools/device_gpu_tests.sh $res/gpu | tail -2 >> $res/summary.txt
say "ragged done $((SECONDS - T0))s"
for tool in memcheck racecheck; do
  s=$SECONDS
  INGOT_RAGGED_QUICK=1 timeout 120 compute-sanitizer --tool $tool --error-exitcode 86 --print-limit 20 \
    build/bin/test_gpu_ragged build/packs/attention_decode > $res/gpu/${tool}_ragged.log 2>&1
  say "$tool test_gpu_ragged rc=$? $((SECONDS - s))s :: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $res/gpu/${tool}_ragged.log | tail -n 1)"
done
INGOT_LOGS_TAR=$OUT/gpu18b.tgz INGOT_GPU_TESTS="tokens poison_tail splits" INGOT_GPU_PART=1 tools/device_gpu_tests.sh $res/p1 > /dev/null
cat $res/p1/summary.txt >> $res/summary.txt
say "total $((SECONDS - T0))s"
tar czf $OUT/r18.tgz -C /tmp r18
