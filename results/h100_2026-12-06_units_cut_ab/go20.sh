#!/bin/bash
# Device call 3: models, then part 3 (wave64, Python, ingot-inspect) on nm.tar.xz.
set -u
[ -x build/bin/test_gpu_models ] || tar xJf build-ab/nm.tar.xz
res=/tmp/r20; mkdir -p $res
INGOT_LOGS_TAR=$OUT/r20a.tgz INGOT_GPU_TESTS="models" INGOT_GPU_PART=2 tools/device_gpu_tests.sh $res/p2 >/dev/null; cp $res/p2/summary.txt $OUT/summary20a.txt
INGOT_LOGS_TAR=$OUT/r20b.tgz INGOT_GPU_PART=3 tools/device_gpu_tests.sh $res/p3 >/dev/null; cp $res/p3/summary.txt $OUT/summary20b.txt
