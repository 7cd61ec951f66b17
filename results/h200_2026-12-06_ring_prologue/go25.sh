#!/bin/bash
# The GPU suite on the ring prologue build (decision 0039): INGOT_GPU_PART=$1 (1 or 2; part 3 is wave64,
# whose sm_90_w64 objects are byte-identical to 32943ba's, and ingot-inspect). Test binaries: 32943ba's.
set -u
T0=$SECONDS
[ -x build/bin/test_gpu_ragged ] || tar xJf build-ab/nm.tar.xz build/bin
res=/tmp/r25_$1; mkdir -p $res
nvidia-smi --query-gpu=name --format=csv > $OUT/gpu_$1.txt
INGOT_LOGS_TAR=$OUT/r25_$1.tgz INGOT_NO_PYTHON=${NOPY:-1} INGOT_GPU_PART=$1 tools/device_gpu_tests.sh $res > $res/out.txt 2>&1
echo "rc=$? [$((SECONDS - T0))s]"; cat $res/summary.txt
