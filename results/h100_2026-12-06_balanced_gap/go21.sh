#!/bin/bash
# Next session's first device call (written 2026-12-06): main at 8c3bb90's build (nm.tar.xz: bin, lib,
# packs; the units' cut dropped, test_gpu_wave64 with its one-segment case). test_gpu_wave64 (its new
# INGOT_BALANCE=0 case at capacity 1 has never run on a GPU), then the ragged tables, contiguous and
# paged 16 (for PERFORMANCE.md: the H200 table there is 231cdce's), then test_gpu_ragged. ~450 s.
set -u
T0=$SECONDS
[ -x build/bin/test_gpu_wave64 ] || tar xJf build-ab/nm.tar.xz
res=/tmp/r21; mkdir -p $res
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm --format=csv > $res/gpu.txt; cp $res/gpu.txt $OUT/
say() { echo "$*"; echo "$*" >> $res/summary.txt; cp $res/summary.txt $OUT/; }
INGOT_LOGS_TAR=$OUT/r21a.tgz INGOT_GPU_TESTS="" INGOT_NO_PYTHON=1 INGOT_GPU_PART=3 tools/device_gpu_tests.sh $res/p3 > /dev/null
say "$(grep wave64 $res/p3/summary.txt | cut -c1-400) [$((SECONDS - T0))s]"
export PYTHONUNBUFFERED=1 LD_LIBRARY_PATH=$PWD/build/lib
python3 bench/decode.py --ragged --rounds 3 --out $res/ragged > $res/ragged.log 2>&1
say "ragged contiguous rc=$? [$((SECONDS - T0))s]"
python3 bench/decode.py --ragged --paged 16 --rounds 3 --out $res/ragged_p16 > $res/ragged_p16.log 2>&1
say "ragged paged 16 rc=$? [$((SECONDS - T0))s]"
tar czf $OUT/r21.tgz -C /tmp r21
INGOT_LOGS_TAR=$OUT/r21b.tgz INGOT_GPU_TESTS="ragged" INGOT_GPU_PART=2 tools/device_gpu_tests.sh $res/p2 > /dev/null
say "$(grep ragged $res/p2/summary.txt | cut -c1-300) [$((SECONDS - T0))s]"
tar czf $OUT/r21.tgz -C /tmp r21
