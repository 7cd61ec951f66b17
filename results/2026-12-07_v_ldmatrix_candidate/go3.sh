#!/bin/bash
# The one call this session's device time allowed (the others found no machine): this build
# (build-ab/new.tar.xz: V through ldmatrix .trans in the ring kernels, QK's k steps past the head
# dim not issued) through test_gpu_variants (every kernel), then main (build-ab/old.tar.xz, ae4f2af)
# against it on the model rows whose kernels changed, then the seed and batched points.
# $OUT/r3.tgz after each step.
set -u
T0=$SECONDS
res=/tmp/r3; mkdir -p $res
tar xJf build-ab/new.tar.xz && mkdir -p build-ab/old && tar xJf build-ab/old.tar.xz -C build-ab/old
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $res/gpu.txt; cat $res/gpu.txt
step() { echo "$1 [$((SECONDS - T0))s]"; tar czf $OUT/r3.tgz -C /tmp r3; }
INGOT_NO_PYTHON=1 INGOT_GPU_PART=1 INGOT_GPU_TESTS="variants" timeout $((${LIMIT:-280} - (SECONDS - T0))) \
  tools/device_gpu_tests.sh $res/gpu > $res/gpu.txt 2>&1
echo "gpu rc=$?"; cat $res/gpu/summary.txt; step variants
timeout $((${LIMIT:-280} + 10 - (SECONDS - T0))) tools/ab_builds.sh $res/models build-ab/old/build build 1 --models \
  --model Phi --model StarCoder --model Falcon --model Gemma-2 --rounds 2 --no-read-floor > $res/models.txt 2>&1
step models; grep "^==" $res/models.txt
timeout $((${LIMIT:-280} + 20 - (SECONDS - T0))) tools/ab_builds.sh $res/pts build-ab/old/build build 1 \
  --points 1x8x2x8192,1x8x2x65536,4x8x2x8192,16x32x8x8192 --rounds 2 --no-read-floor > $res/pts.txt 2>&1
step points; grep "^==" $res/pts.txt
