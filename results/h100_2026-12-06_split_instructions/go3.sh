#!/bin/bash
# The final build (ring kernels rescale only when a row's max grew, the register pipeline always;
# decode_mq_d64 at occupancy 3) against main (build-m0): the multi-query models contiguous, Falcon-7B
# and StarCoder B=32 on paged 16; then GPU part ${PART:-1}. ~500 s.
set -u
T0=$SECONDS
res=/tmp/r3; mkdir -p $res
tar xJf build-ab/new.tar.xz && mkdir -p build-m0 && tar xJf build-ab/m0.tar.xz -C build-m0
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $res/gpu.txt; cat $res/gpu.txt
if [ "${AB:-1}" = 1 ]; then
tools/ab_builds.sh $res/mq build-m0/build build 1 --models --model Falcon --model StarCoder --rounds 2 --no-read-floor > $res/mq.txt 2>&1
echo "models [$((SECONDS - T0))s]"; cat $res/mq.txt
tools/ab_builds.sh $res/fp16 build-m0/build build 1 --head-dim 64 --paged 16 --points 32x71x1x8192,32x71x1x65536 --rounds 2 --no-read-floor > $res/fp16.txt 2>&1
tools/ab_builds.sh $res/sp16 build-m0/build build 1 --paged 16 --points 32x48x1x8192 --rounds 2 --no-read-floor > $res/sp16.txt 2>&1
echo "paged [$((SECONDS - T0))s]"; cat $res/fp16.txt $res/sp16.txt | grep -v "^| B="
tar czf $OUT/r3.tgz -C /tmp r3
fi
P=${PART:-1}
INGOT_LOGS_TAR=$OUT/gpu$P.tgz INGOT_NO_PYTHON=1 INGOT_GPU_PART=$P tools/device_gpu_tests.sh $res/gpu$P > $res/gpu$P.txt 2>&1
echo "gpu part $P rc=$? [$((SECONDS - T0))s]"; cat $res/gpu$P/summary.txt
tar czf $OUT/r3.tgz -C /tmp r3
