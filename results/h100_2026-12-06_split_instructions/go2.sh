#!/bin/bash
# The split kernels' instruction diet (finish_split once per row, scores scaled in the exponent's fma,
# masks only on the chunks that need them, O rescaled only when a row's max grew, the ring copies'
# addresses from the chunk's first row) against main (build-m0), one call: seed and batched points
# contiguous and paged 16, the multi-query model rows; then the two toggles (rescale always, mask
# always) on candidate packs (t00: as built, t11: both always, t00o3: the Falcon kernel at
# occupancy 3); then GPU part 3 (wave64: the matrix-core path's changes). ~480 s.
set -u
T0=$SECONDS
res=/tmp/r2; mkdir -p $res
tar xJf build-ab/new.tar.xz && mkdir -p build-m0 && tar xJf build-ab/m0.tar.xz -C build-m0 && tar xJf build-ab/t.tar.xz
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $res/gpu.txt; cat $res/gpu.txt
P=1x8x2x4096,1x8x2x65536,4x8x2x8192,16x32x8x8192,64x32x8x8192
tools/ab_builds.sh $res/pts build-m0/build build 2 --points $P --rounds 2 --no-read-floor > $res/pts.txt 2>&1
echo "points [$((SECONDS - T0))s]"; cat $res/pts.txt
tools/ab_builds.sh $res/p16 build-m0/build build 1 --points $P --paged 16 --rounds 3 --no-read-floor > $res/p16.txt 2>&1
echo "paged [$((SECONDS - T0))s]"; cat $res/p16.txt
tar czf $OUT/r2.tgz -C /tmp r2
tools/ab_builds.sh $res/mq build-m0/build build 1 --models --model Falcon --model StarCoder --model 405B --model Phi-2 --rounds 2 --no-read-floor > $res/mq.txt 2>&1
echo "models [$((SECONDS - T0))s]"; cat $res/mq.txt
tar czf $OUT/r2.tgz -C /tmp r2
AB_BUILDS=build-t00o3 tools/ab_builds.sh $res/tf build-t00 build-t11 1 --head-dim 64 --points 32x71x1x8192,32x71x1x65536 --rounds 3 --no-read-floor > $res/tf.txt 2>&1
tools/ab_builds.sh $res/ts build-t00 build-t11 1 --points 1x8x2x4096,1x8x2x65536,4x32x8x8192,1x32x8x8192 --rounds 3 --no-read-floor > $res/ts.txt 2>&1
echo "toggles [$((SECONDS - T0))s]"; cat $res/tf.txt $res/ts.txt
tar czf $OUT/r2.tgz -C /tmp r2
INGOT_LOGS_TAR=$OUT/gpu3.tgz INGOT_NO_PYTHON=1 INGOT_GPU_PART=3 timeout 200 tools/device_gpu_tests.sh $res/gpu3 > $res/gpu3.txt 2>&1
echo "gpu part 3 rc=$? [$((SECONDS - T0))s]"; cat $res/gpu3/summary.txt
tar czf $OUT/r2.tgz -C /tmp r2
