#!/bin/bash
# Device call 2: variants, capacity, graph, streams, kv_append, handoff on nm.tar.xz.
set -u
[ -x build/bin/test_gpu_variants ] || tar xJf build-ab/nm.tar.xz
res=/tmp/r19; mkdir -p $res
INGOT_LOGS_TAR=$OUT/r19a.tgz INGOT_GPU_TESTS="variants capacity" INGOT_GPU_PART=1 tools/device_gpu_tests.sh $res/p1 > /dev/null; cp $res/p1/summary.txt $OUT/summary19a.txt
INGOT_LOGS_TAR=$OUT/r19b.tgz INGOT_GPU_TESTS="graph streams kv_append handoff" INGOT_GPU_PART=2 tools/device_gpu_tests.sh $res/p2 >/dev/null; cp $res/p2/summary.txt $OUT/summary19b.txt
