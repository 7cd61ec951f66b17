#!/bin/bash
# GPU suite parts ${PARTS:-3 1} on this build (build-ab/new.tar.xz); logs in $OUT/gpu<P>.tgz.
set -u
T0=$SECONDS
res=/tmp/r2; mkdir -p $res
[ -d build/packs/attention_decode ] && [ "${FRESH:-0}" = 0 ] || tar xJf build-ab/new.tar.xz
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $res/gpu.txt; cat $res/gpu.txt; cp $res/gpu.txt $OUT/
for P in ${PARTS:-3 1}; do
  INGOT_LOGS_TAR=$OUT/gpu$P.tgz INGOT_NO_PYTHON=1 INGOT_GPU_PART=$P tools/device_gpu_tests.sh $res/gpu$P > $res/gpu$P.txt 2>&1
  echo "gpu part $P rc=$? [$((SECONDS - T0))s]"; cat $res/gpu$P/summary.txt
done
