#!/bin/bash
# Call 1: main (build-ab/old.tar.xz, ae4f2af) against this build (build-ab/new.tar.xz: ldmatrix .trans
# for V in the ring kernels, QK's k steps past the head dim not issued): seed and batched points, the
# model rows whose kernels changed; then the GPU tests that run every changed kernel, and wave64. $OUT/r1.tgz after each step.
set -u
T0=$SECONDS
res=/tmp/r1; mkdir -p $res
tar xJf build-ab/new.tar.xz && mkdir -p build-ab/old && tar xJf build-ab/old.tar.xz -C build-ab/old
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $res/gpu.txt; cat $res/gpu.txt
step() { echo "$1 [$((SECONDS - T0))s]"; tar czf $OUT/r1.tgz -C /tmp r1; }
tools/ab_builds.sh $res/pts build-ab/old/build build 1 --points 1x8x2x4096,1x8x2x8192,1x8x2x65536,4x8x2x8192,16x32x8x8192 --rounds 2 --no-read-floor > $res/pts.txt 2>&1
step points; grep "^==" $res/pts.txt
tools/ab_builds.sh $res/models build-ab/old/build build 1 --models --model Phi --model StarCoder --model Falcon \
  --model Gemma-2 --model 405B --model Llama-3-8B --model Qwen2-0.5B --rounds 2 --no-read-floor > $res/models.txt 2>&1
step models; grep "^==" $res/models.txt
# correctness of the changed kernels on this build: every kernel (variants), the model shapes,
# graph replay, tokens, poisoned tails, streams; then (no part set) wave64 and the inspect runs
INGOT_LOGS_TAR=$OUT/gpu1.tgz INGOT_NO_PYTHON=1 INGOT_GPU_TESTS="variants models graph tokens poison_tail streams" \
  timeout $((${LIMIT:-590} - (SECONDS - T0))) tools/device_gpu_tests.sh $res/gpu1 > $res/gpu1.txt 2>&1
echo "gpu rc=$? [$((SECONDS - T0))s]"; cat $res/gpu1/summary.txt
step end
